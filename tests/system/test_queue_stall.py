"""A stalled queue Redis (issue 24, item 1), on the whole stack over a Redis Cluster (3 masters)
with RQ on a Redis of its own (``QUEUE_REDIS_URL``), which is SIGSTOPped for 12 s while
present SDK bots play 8-s turns in rated ladder matches:

- the API keeps serving moves: every running match moves on during the stall (a change that
  can't queue a job, a finished match's rating, stands; the next ones don't even try for a few
  seconds: store/queues.py);
- the deadlines go on: a turn's deadline is an entry of the deadline index on the data Redis,
  and the worker's dispatcher claims, settles and ticks the clock there only (its heartbeat to
  the stalled queue Redis fails on a client of its own, never on RQ's blocking connection):
  a match pending since before the stall and one started during it, each with a seat that never
  moves, get their timeouts during the stall, each turn's once;
- a ladder match that ends during the stall (a bot resigns it over the API) stays finished,
  and is rated once the queue is back (its rating job could not be queued: the ladder pass
  rates the finished matches it finds unrated, store/ladders.py);
- the bots lose nothing: their other matches finish by play (no timeout, forfeit or abort)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import requests
from llsdk.errors import MatchNotActive

from service.store import ladders
from service.store.docs import ACTIVE, FINISHED
from tests.support.ladderbots import LadderBot, timeouts_of, wait_played_out
from tests.support.redis_cluster import ClusterStack, find_cluster_tools
from tests.support.rqproc import RqCron, RqWorker
from tests.support.sdkclient import Client
from tests.support.server import ApiServer
from tests.support.stack import WholeStack, running_stack, wait_for
from tests.support.stall import stalled

pytestmark = pytest.mark.timeout(300)

T = 3  # the idle matches' turn timeout: their first turn is due inside the stall
#: the ladder's turn timeout: room for a bot thread starved by a loaded machine, and shorter than
#: the stall, so that a turn pending through it and charged for it would time out
BOT_T = 8
STALL_S = 12.0
ENV = {"EXPECT_WORKERS": "1", "RATE_LIMITS": "0",
       "LADDERS": json.dumps([{"name": "duel", "ruleset": "classic", "seats": 2,
                               "turn_timeout_s": BOT_T, "interval_s": 1}])}
IDLE = {"ruleset": "classic", "seats": 2, "turn_timeout_s": T, "timeout_policy": "auto",
        "max_timeouts": 50, "first_seat": 0}


class ClusterWholeStack(WholeStack):
    """:class:`WholeStack` over a private Redis Cluster, RQ on a single Redis of its own."""

    def __init__(self, env: dict[str, str], **_: object) -> None:
        self.rp = ClusterStack(masters=3).start()  # type: ignore[assignment]
        env = {**env, **self.rp.env}
        self.api = ApiServer(self.rp.url, workers=2, env=env)
        self.worker = RqWorker(self.rp.url, env=env)
        self.cron = RqCron(self.rp.url, env=env)
        self.r = self.rp.client()
        self.http = requests.Session()
        self.http.trust_env = False
        self.with_house_bots = False
        self.house = None


@pytest.fixture
def stack() -> Iterator[ClusterWholeStack]:
    tools = find_cluster_tools()
    if isinstance(tools, str):
        pytest.skip(tools)
    with running_stack(ENV, cls=ClusterWholeStack) as s:
        yield s


def idle_match(url: str, name: str) -> str:
    """A match whose first seat never moves: its turns time out, one by one."""
    idle = Client(url, Client(url).players.register(f"{name}-idle").token)
    other = Client(url, Client(url).players.register(f"{name}-other").token)
    mid = idle.matches.create(**IDLE).match_id
    idle.matches.join(mid)
    other.matches.join(mid)
    idle.close()
    other.close()
    return str(mid)


def resign_one(s: ClusterWholeStack, bots: list[LadderBot], ids: list[str]) -> str:
    """The first bot of the first of ``ids`` still running resigns it over the API (on a client
    of its own: the bot's thread goes on using its own); returns that match."""
    for mid in ids:
        seat0 = s.load(mid).seats[0]
        quitter = next(b for b in bots if b.player_id == seat0)
        with Client(s.url, quitter.token) as c:
            try:
                c.matches.resign(mid)
            except MatchNotActive:  # it finished by play a moment ago: the next one
                continue
        return mid
    raise AssertionError(f"no match of {ids} was still running")


def test_a_stalled_queue_redis_stops_no_move_and_loses_no_deadline(
        stack: ClusterWholeStack) -> None:
    s = stack
    queue = s.rp.queue  # type: ignore[attr-defined]
    # (long-polls of 10 s, above the 8-s turn: a wake-up missed after the stall would cost a
    # timeout, which the played-out check refuses; docs/operations.md "Stalls")
    bots = [LadderBot(s.url, f"qbot{i}", ["duel"], poll_wait=10.0) for i in range(6)]
    try:
        running = wait_for("three rated matches running", lambda: (ms := [
            d for d in s.ladder_matches("duel") if d.status == ACTIVE]) and len(ms) >= 3 and ms,
            timeout=90)
        ids = [d.id for d in running]
        pending = idle_match(s.url, "before")
        time.sleep(0.5)  # its first turn is pending: due 2.5 s into the stall
        before = {m: s.load(m).version for m in ids}
        assert timeouts_of(s.load(pending)) == []

        with stalled(queue):
            time.sleep(2.0)
            started_during = idle_match(s.url, "during")  # nothing of it reaches the queue
            resigned = resign_one(s, bots, ids)  # a rated match ends: its job can't queue
            assert s.load(resigned).status == FINISHED
            assert not any(ladders.history(s.r, "duel", pid)  # not rated yet
                           for pid in s.load(resigned).seats)
            joined = s.load(started_during).version
            time.sleep(STALL_S - 2.0)
            moved = {m: s.load(m).version for m in ids}
            # (several turns of each idle match have come due since the stall began)
            during = {m: timeouts_of(s.load(m)) for m in (pending, started_during)}

        # the API served moves all along
        for m in ids:
            assert moved[m] > before[m] + 2 or s.load(m).status == FINISHED, (m, before, moved)
        # and the dispatcher settled deadlines all along (two of each: room for a slow host)
        assert len(during[pending]) >= 2 and len(during[started_during]) >= 2, during

        wait_played_out(s, [m for m in ids if m != resigned], timeout=180)
        # the match resigned during the stall: rated after it, once, for both of its bots
        for pid in s.load(resigned).seats:
            wait_for(f"the rating of {resigned} for {pid}", lambda pid=pid: [
                h for h in ladders.history(s.r, "duel", pid) if h["match_id"] == resigned],
                timeout=60)
            assert [h["match_id"] for h in ladders.history(s.r, "duel", pid)].count(
                resigned) == 1
        wait_for("two more timeouts after the stall", lambda: len(timeouts_of(
            s.load(started_during))) >= len(during[started_during]) + 2, timeout=60)
        # nobody moves there: every version since the joins is one turn's timeout, once
        doc = s.load(started_during)
        assert len(timeouts_of(doc)) == doc.version - joined, (len(timeouts_of(doc)),
                                                               doc.version, joined)
        assert s.api.running and s.worker.running and s.cron.running
    finally:
        for b in bots:
            b.close()
