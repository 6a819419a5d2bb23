"""Present SDK bots playing rated ladder matches in threads, for the whole-stack fault tests
(tests/system/): each answers in about 0.2 s, far inside any turn, so a timeout in their
matches can only be a fault charged to a player."""

from __future__ import annotations

import threading
import time
from typing import Any

from llsdk import Action, Bot, View

from service.store.docs import MatchDoc
from tests.support.sdkclient import Client


class Responsive(Bot):
    """A random legal action after a short think (so matches last a while)."""

    def choose(self, view: View) -> Action:
        time.sleep(0.2)
        return view.legal_actions[self.rng.randrange(len(view.legal_actions))]


class LadderBot:
    """A :class:`Responsive` bot registered on ``url`` and playing ``ladders`` until closed."""

    def __init__(self, url: str, name: str, ladders: list[str], *,
                 poll_wait: float = 5.0) -> None:
        self.poll_wait = poll_wait
        self.client = Client(url, Client(url).players.register(name).token)
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(ladders,), name=name,
                                       daemon=True)
        self.thread.start()

    def _run(self, ladders: list[str]) -> None:
        try:
            Responsive().run(self.client, ladders=ladders, stop_event=self.stop,
                             poll_wait=self.poll_wait)
        except BaseException as e:  # noqa: BLE001 - reported by close()
            self.error = e

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=15)
        self.client.close()
        assert self.error is None, repr(self.error)
        assert not self.thread.is_alive(), "Bot.run did not stop"


def timeouts_of(doc: MatchDoc) -> list[dict[str, Any]]:
    """The timeouts (and forfeits by timeout) a match's log holds."""
    assert doc.state is not None
    return [dict(e.data, type=e.type) for e in doc.state.events
            if e.data.get("timeout") or (e.type == "forfeit" and e.data.get("reason") == "timeout")]


def check_played_out(doc: MatchDoc) -> None:
    """``doc`` finished by play: no timeout, no forfeit, not aborted."""
    assert doc.state is not None
    assert timeouts_of(doc) == [], (doc.id, timeouts_of(doc))
    assert not any(doc.state.forfeited), doc.id
    assert doc.aborted is None, (doc.id, doc.aborted)
