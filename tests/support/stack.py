"""The whole stack on one private Redis, for tests that need every process at once:

    from tests.support.stack import running_stack, wait_for

    with running_stack({"LADDERS": "[]"}) as s:     # gunicorn (2 workers), worker, cron
        pid, token = s.register("alice")
        wait_for("a match", lambda: s.get("/v1/matches")["matches"], timeout=30)

On leaving, every process is stopped and the test fails if any of them logged a traceback (an
unhandled error is a bug even when the test's own checks passed). ``persistent=True`` gives the
Redis an append-only file so that a SIGKILL and a restart on the same socket lose nothing (the
outage tests); ``house_bots=True`` also runs ``service.ops.house_bots`` against the stack.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import requests
from rq import Queue
from rq.job import Job

from service.store import keys, ladders, matches, presence
from service.store.docs import MatchDoc
from service.store.ladder_config import LadderConfig
from tests.support.housebots import HouseBots
from tests.support.redis_proc import RedisProcess
from tests.support.rqproc import RqCron, RqWorker
from tests.support.sdkclient import Client
from tests.support.server import ApiServer


def wait_for(what: str, check: Callable[[], Any], timeout: float, every: float = 0.2) -> Any:
    """Call ``check`` every ``every`` s until it returns something true, and return that; fail
    the test, naming ``what``, after ``timeout`` s."""
    end = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


class WholeStack:
    """gunicorn with 2 workers, the deadline worker and ``rq cron``, all with ``env``, on a
    private redis-server; the house bots too when asked."""

    def __init__(self, env: dict[str, str], *, persistent: bool = False,
                 house_bots: bool = False) -> None:
        self.rp = RedisProcess(persistent=persistent).start()
        self.api = ApiServer(self.rp.url, workers=2, env=env)
        self.worker = RqWorker(self.rp.url, env=env)
        self.cron = RqCron(self.rp.url, env=env)
        self.r = self.rp.client()
        self.http = requests.Session()
        self.http.trust_env = False
        self.with_house_bots = house_bots
        self.house: HouseBots | None = None

    @property
    def url(self) -> str:
        return self.api.url

    def start(self) -> WholeStack:
        self.api.start()
        self.worker.start()
        self.cron.start()
        if self.with_house_bots:
            self.house = HouseBots(self.api.url, self.rp.url).start()
        return self

    def logs(self) -> dict[str, str]:
        out = {"api": self.api.log_text(), "worker": self.worker.log_text(),
               "cron": self.cron.log_text()}
        if self.house is not None:
            out["house-bots"] = self.house.log_text()
        return out

    def close(self) -> None:
        if self.house is not None:
            self.house.close()
        self.cron.close()
        self.worker.close()
        self.api.close()
        self.http.close()
        self.r.close()
        self.rp.stop()

    def get(self, path: str, token: str | None = None) -> Any:
        """GET ``path``; it must answer 200 with JSON."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        resp = self.http.get(self.url + path, timeout=15, headers=headers)
        assert resp.status_code == 200, (path, resp.status_code, resp.text[:500])
        return resp.json()

    def register(self, name: str) -> tuple[str, str]:
        """A new player: its id and token."""
        reg = Client(self.url).players.register(name)
        return reg.id, reg.token or ""

    def load(self, match_id: str) -> MatchDoc:
        """A match as stored."""
        return matches.load(self.r, match_id)

    def first_pass_done(self, ladder: str, timeout: float = 120) -> None:
        """Wait until rq cron's first scheduling pass of ``ladder`` (it runs one as it starts,
        then one every ``interval_s``) has run: a test that forms that ladder's matches itself,
        on a ladder whose interval is longer than the tests, must not race that pass. Call it
        when the stack has started: a cron job's result is kept for RESULT_TTL_S (60 s) only."""
        queue = Queue("default", connection=self.r)

        def ran() -> bool:
            ids = queue.finished_job_registry.get_job_ids()
            return any(job is not None and job.func_name == "service.jobs.ladder.schedule"
                       and tuple(job.args) == (ladder,)
                       for job in Job.fetch_many(ids, connection=self.r))

        wait_for(f"the first scheduling pass of {ladder}", ran, timeout=timeout)

    def form_match(self, lad: LadderConfig, pids: list[str], deal: dict[str, Any], *,
                   keep_present: tuple[str, ...] = ()) -> MatchDoc:
        """One scheduling pass of ``lad`` run here (what rq cron's job runs), once every one of
        ``pids`` is entered, present, unbenched and free, on a known ``deal`` (tests only:
        ``ladders.form_matches``); the one match it forms, of exactly those bots.
        ``keep_present``: bots whose presence this refreshes (as their polls would) until the
        pass, so that a slow machine can't let their presence lapse first: bots that poll
        until they are seated, then stop."""
        def ready() -> bool:
            for p in keep_present:
                presence.touch(self.r, p)
            return all(st["entered"] and st["present"] and not st["benched"]
                       and st["active_matches"] == 0
                       for st in (ladders.entry_status(self.r, lad, p) for p in pids))

        wait_for(f"{pids} ready on {lad.name}", ready, timeout=60)
        (mid,) = ladders.form_matches(self.r, lad, deal=deal)
        doc = matches.load(self.r, mid)
        assert sorted(doc.seats) == sorted(pids), (doc.seats, pids)
        return doc

    def ladder_matches(self, ladder: str, pid: str | None = None) -> list[MatchDoc]:
        """The ladder's matches (those of ``pid`` only, when given), oldest first, as stored."""
        ids = [m.decode() for m in self.r.zrange(
            keys.ALL_MATCHES if pid is None else keys.player_matches(pid), 0, -1)]
        docs = [MatchDoc.from_stored(raw) for raw in (
            self.r.hget(keys.match(m), "doc") for m in ids) if raw is not None]
        return sorted((d for d in docs if d.ladder == ladder), key=lambda d: d.created_at)


S = TypeVar("S", bound=WholeStack)


@contextmanager
def running_stack(env: dict[str, str], cls: type[S] = WholeStack,  # type: ignore[assignment]
                  **kwargs: Any) -> Iterator[S]:
    """A started ``cls`` (a :class:`WholeStack` or a test's subclass with helpers of its own),
    closed on leaving; then no process may have logged a traceback."""
    s = cls(env, **kwargs)
    try:
        s.start()
        yield s
        logs = s.logs()
    finally:
        s.close()
    for name, log in logs.items():
        at = log.find("Traceback")
        # the lines around the first traceback (the log's tail was often only its aftermath)
        assert at < 0, f"{name} logged an error:\n{log[max(0, at - 2000):at + 6000]}"
