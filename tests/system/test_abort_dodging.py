"""No free aborts (issue 23, item 3) against the whole stack: gunicorn (2 workers), a real RQ
deadline worker (it applies the timeouts and rates the matches) and ``rq cron``, on a private
Redis. The tests run the ladder's scheduling passes themselves (the ladder's own interval is an
hour), each on a known deal in which the dodger or the absent bot moves first: its first timeout
is in round 1, before anyone else has to move (the scheduler on its clock is tested in
tests/system/test_ladder.py and tests/system/test_absent_bots.py).

- A dodger that read its view (GET .../view) and then never moves is timed out as usual,
  forfeits after three timeouts and loses, rated.
- A bot that was seated and then never asked about its match (present, then gone) aborts it
  at its first timeout: rated for nobody, the bot benched until it polls again; the second
  abort (LADDER_ABORT_BENCH_AFTER=2 here) benches it for 15 minutes whether it polls or not,
  shown on the leaderboard, its entry and its profile.
The store-level rules (round 2, escalation, the notices that count) are in
tests/store/test_no_free_aborts.py."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from llsdk import Bot, View
from llsdk.models import Action

from service.store import ladders, presence
from service.store.docs import FINISHED, MatchDoc
from service.store.ladder_config import LadderConfig
from tests.support.live import SAFE_DEAL, absent_first
from tests.support.sdkclient import Client
from tests.support.stack import WholeStack, running_stack, wait_for

pytestmark = pytest.mark.timeout(300)

T = 4  # the ladder's turn timeout (s): the honest bot answers within it on a loaded machine
NF: dict[str, Any] = {"name": "nf", "ruleset": "classic", "seats": 2, "turn_timeout_s": T,
                      "interval_s": 3600, "presence_window_s": 5, "abort_bench_after": 2}
LAD = LadderConfig(**NF)  # what every process of the stack reads from LADDERS
ENV = {"LADDERS": json.dumps([NF]), "EXPECT_WORKERS": "1"}


class FirstLegal(Bot):
    def choose(self, view: View) -> Action:
        return view.legal_actions[0]


class Stack(WholeStack):
    def row(self, pid: str) -> dict[str, Any]:
        board = self.get("/v1/ladders/nf")["leaderboard"]
        return next((x for x in board if x["player_id"] == pid), {})

    def enter(self, token: str) -> dict[str, Any]:
        resp = self.http.post(f"{self.url}/v1/ladders/nf/entries", timeout=10,
                              headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 200, resp.text
        return dict(resp.json())


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with running_stack(ENV, cls=Stack) as s:
        s.first_pass_done("nf")
        yield s


class Present:
    """Keeps players present on the ladder as a bot that polls would, without reading a
    notice (it writes their presence straight into Redis): a bot seated and then gone."""

    def __init__(self, stack: Stack) -> None:
        self.stack, self.pids = stack, set[str]()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.3):
            for pid in list(self.pids):
                presence.touch(self.stack.r, pid)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)


@pytest.fixture(scope="module")
def honest(stack: Stack) -> Iterator[str]:
    """A bot that plays every match it is given (Bot.run on the ladder)."""
    pid, token = stack.register("honest")
    client = Client(stack.url, token)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: FirstLegal().run(
        client, ladders=["nf"], stop_event=stop, poll_wait=1.0), daemon=True)
    thread.start()
    yield pid
    stop.set()
    thread.join(15)
    client.close()


def finished(stack: Stack, mid: str) -> MatchDoc:
    return wait_for(f"{mid} to finish", lambda: (d := stack.load(mid)).status == FINISHED and d,
                    timeout=120)


def test_a_dodger_that_read_its_view_loses_rated(stack: Stack, honest: str) -> None:
    pid, token = stack.register("dodger")
    present = Present(stack)
    try:
        stack.enter(token)
        present.pids.add(pid)
        doc = stack.form_match(LAD, [pid, honest], absent_first(pid))
        seat = doc.seat_of(pid)
        assert seat is not None and doc.rated
        # it looks at its hand and its opponent ... and never moves
        view = requests.get(f"{stack.url}/v1/matches/{doc.id}/view", timeout=10,
                            headers={"Authorization": f"Bearer {token}"}).json()
        assert view["seat"] == seat
        done = finished(stack, doc.id)
        assert done.aborted is None, done.aborted
        assert done.state is not None and done.state.forfeited[seat]
        row = wait_for("the rating", lambda: (x := stack.row(pid)).get("games") == 1 and x,
                       timeout=60)
        winner = stack.row(honest)
        assert row["wins"] == 0 and row["timeouts"] >= 3 and winner["wins"] >= 1
        assert row["mu"] < winner["mu"]
        assert stack.get(f"/v1/players/{pid}")["aborts_24h"] == 0
    finally:
        present.close()
        stack.http.delete(f"{stack.url}/v1/ladders/nf/entries", timeout=10,
                          headers={"Authorization": f"Bearer {token}"})


def test_an_absent_bot_aborts_and_repeated_aborts_bench_it_for_a_time(
        stack: Stack, honest: str) -> None:
    pid, token = stack.register("ghost")
    present = Present(stack)
    seen: set[str] = set()
    try:
        stack.enter(token)
        for n in (1, 2):
            present.pids.add(pid)  # present: it is seated ...
            doc = stack.form_match(LAD, [pid, honest], absent_first(pid))
            seen.add(doc.id)
            present.pids.discard(pid)  # ... and gone before it asked anything
            done = finished(stack, doc.id)
            assert done.aborted is not None and done.aborted["player_id"] == pid
            assert done.aborted["reason"] == "absent"
            # aborts.record counts the abort, then writes the bench the count earned: a read
            # in between sees the second abort without its bench yet, so wait for both
            profile = wait_for("the abort counted (and, the second time, its bench)",
                               lambda n=n: (p := stack.get(f"/v1/players/{pid}"))[
                                   "aborts_24h"] == n and (n == 1 or p["bench"]) and p,
                               timeout=60)
            row = stack.row(pid)
            assert row["games"] == 0 and row["benched"]
            if n == 1:
                assert profile["bench"] is None
                assert row["benched_reason"].startswith("absent: never moved nor asked")
        # the second abort: benched for 15 minutes, polling or not
        bench = profile["bench"]
        assert bench is not None and bench["level"] == 1
        assert bench["until"] - time.time() > 14 * 60
        assert "benched 15 min" in bench["reason"]
        present.pids.add(pid)
        wait_for("the ghost present again", lambda: stack.row(pid).get("present"), timeout=15)
        entry = stack.enter(token)
        assert entry["benched"] and entry["benched_reason"] == bench["reason"]
        assert stack.row(pid)["benched_reason"] == bench["reason"]
        # a pass with the honest bot present and free: the benched bot is left out
        wait_for("the honest bot free", lambda: (x := stack.row(honest))["present"]
                 and x["active_matches"] == 0, timeout=60)
        assert ladders.form_matches(stack.r, LAD, deal=SAFE_DEAL) == []
        assert {d.id for d in stack.ladder_matches("nf", pid)} == seen
    finally:
        present.close()
        stack.http.delete(f"{stack.url}/v1/ladders/nf/entries", timeout=10,
                          headers={"Authorization": f"Bearer {token}"})
