"""Present SDK bots playing rated ladder matches in threads, for the whole-stack fault tests
(tests/system/): each answers in about 0.2 s, far inside any turn, so a timeout in their
matches can only be a fault charged to a player."""

from __future__ import annotations

import threading
import time
from typing import Any

from llsdk import Action, Bot, View

from service.store.docs import FINISHED, MatchDoc
from tests.support.sdkclient import Client
from tests.support.stack import WholeStack, wait_for


class Responsive(Bot):
    """A random legal action after a short think (so matches last a while)."""

    def choose(self, view: View) -> Action:
        time.sleep(0.2)
        return view.legal_actions[self.rng.randrange(len(view.legal_actions))]


class LadderBot:
    """A :class:`Responsive` bot registered on ``url`` and playing ``ladders`` (and the matches
    it joins) until closed."""

    def __init__(self, url: str, name: str, ladders: list[str] | None = None, *,
                 poll_wait: float = 5.0) -> None:
        self.poll_wait = poll_wait
        me = Client(url).players.register(name)
        self.player_id, self.token = me.id, str(me.token)
        self.client = Client(url, me.token)
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(ladders,), name=name,
                                       daemon=True)
        self.thread.start()

    def _run(self, ladders: list[str] | None) -> None:
        try:
            Responsive().run(self.client, ladders=ladders or (), stop_event=self.stop,
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
    end = doc.state.events[-1]
    assert end.type == "match_end" and end.data["reason"] != "forfeit", end


def wait_played_out(stack: WholeStack, ids: list[str], timeout: float) -> None:
    """Wait until every match of ``ids`` has finished, then :func:`check_played_out` each."""
    wait_for("every match to finish", lambda: all(
        stack.load(m).status == FINISHED for m in ids), timeout=timeout, every=0.5)
    for mid in ids:
        check_played_out(stack.load(mid))


def first_timeout_at(stack: WholeStack, mid: str, timeout: float = 60) -> float:
    """When (wall clock) the first timeout of match ``mid`` was applied, once it has been."""
    def applied() -> float | None:
        doc = stack.load(mid)
        return doc.timed_out_at if timeouts_of(doc) else None

    return float(wait_for(f"the first timeout of {mid}", applied, timeout=timeout))
