"""API throughput: actions over HTTP against the real app under gunicorn, and the same load
against a bare endpoint that only reads and writes one Redis key in a WATCH/MULTI transaction.

Run: ``make bench``, or ``.venv/bin/python bench/api.py [--clients 48] [--seconds 10]``.

Setup: a private ``redis-server`` (tests/support/redis_proc.py) and gunicorn with
``service/gunicorn_conf.py`` (gevent, ``WEB_CONCURRENCY=2``), ``RATE_LIMITS=0``,
``ENQUEUE_JOBS=0`` and ``BENCH_BARE_ENDPOINT=1`` (which adds ``POST /bench/bare/<key>``; it is not
part of the API). Everything runs on this machine: the client threads share the CPUs with the
server and Redis, in both phases alike.

Phase 1, actions: each client thread plays whole classic 2-player matches (created and joined
before the clock starts, ``turn_timeout_s`` one day so nothing times out), one POST
``/v1/matches/{id}/actions`` per action, keep-alive connections. After a move it is the other
seat's turn, and the mover's answer (its new view) shows no legal actions for the other seat; so
instead of a second request (GET that seat's view) the client keeps the match's engine state
locally, in lockstep with the server (same seed, same actions: the engine is deterministic), and
posts a random one of ``legal_action_dicts`` -- exactly the list the other seat's view holds.
Every answer is checked: 200, the version one higher, and at the end the same winners as the
local replay.

Phase 2, bare: the same clients, duration and server, one POST ``/bench/bare/<key>`` (a body of
the same size, a key per client) per "action".

Prints one figure a line, ``name: number unit``: ``actions/s``, ``action p50 ms``,
``action p99 ms``, ``bare actions/s``, ``bare p50 ms``, ``bare p99 ms``, and
``actions/bare ratio`` (the issue's bar: at least 0.5); comment lines start with ``#``. Only
requests that complete inside the measured window (after a warm-up) count.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from service import engine  # noqa: E402
from tests.support.redis_proc import RedisProcess  # noqa: E402

MATCH_OPTIONS = {"ruleset": "classic", "seats": 2, "turn_timeout_s": 86400}


# --------------------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Gunicorn:
    """gunicorn -c service/gunicorn_conf.py service.wsgi:app in its own process group."""

    def __init__(self, redis_url: str, workers: int) -> None:
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="llbench-gunicorn-", suffix=".log")
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "PORT", "HOST")}
        env.update(PORT=str(self.port), HOST="127.0.0.1", REDIS_URL=redis_url,
                   WEB_CONCURRENCY=str(workers), RATE_LIMITS="0", ENQUEUE_JOBS="0",
                   BENCH_BARE_ENDPOINT="1")
        env.pop("ACCESS_LOG", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "service/gunicorn_conf.py",
             "--no-control-socket", "service.wsgi:app"],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{self.log_tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"gunicorn not ready in {timeout}s:\n{self.log_tail()}")

    def log_tail(self, n: int = 30) -> str:
        with open(self.log.name, errors="replace") as f:
            return "".join(f.readlines()[-n:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # stragglers, if any
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()


# --------------------------------------------------------------------------- the client


class Client:
    """One keep-alive HTTP connection (one per thread)."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, path: str, body: Any = None,
             token: str | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body)
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw) if raw else None

    def ok(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        status, data = self.call(method, path, body, token)
        if status >= 300:
            raise RuntimeError(f"{method} {path} -> {status}: {data}")
        return data

    def close(self) -> None:
        self.conn.close()


class Match:
    def __init__(self, mid: str, seed: str, tokens: list[str], version: int) -> None:
        self.id = mid
        self.tokens = tokens  # by seat
        self.version = version
        o = MATCH_OPTIONS
        self.state = engine.new_match(str(o["ruleset"]), int(o["seats"]), seed=seed)


def make_match(c: Client, tokens: list[str], seed: str) -> Match:
    created = c.ok("POST", "/v1/matches", {**MATCH_OPTIONS, "seed": seed}, tokens[0])
    mid = created["match_id"]
    c.ok("POST", f"/v1/matches/{mid}/join", token=tokens[0])
    view = c.ok("POST", f"/v1/matches/{mid}/join", token=tokens[1])
    assert view["status"] == "active", view
    return Match(mid, seed, tokens, view["version"])


class Window:
    """One phase's clock: clients set up, meet at ``ready``, start on ``go``; only requests that
    complete in [start, end) on the perf_counter clock are counted."""

    def __init__(self, clients: int) -> None:
        self.start = self.end = 0.0
        self.ready = threading.Barrier(clients + 1)
        self.go = threading.Event()
        self.stop = threading.Event()


Worker = Callable[[int, Window, list[float]], None]


def run_phase(n: int, warmup: float, seconds: float, worker: Worker) -> tuple[float, list[float]]:
    """Run ``worker`` in ``n`` threads; returns (requests/s in the window, their latencies)."""
    window = Window(n)
    lats: list[list[float]] = [[] for _ in range(n)]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            worker(i, window, lats[i])
        except BaseException as e:  # reported below
            errors.append(e)
            window.stop.set()
            window.ready.abort()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    try:
        window.ready.wait(timeout=120)  # every client has done its setup
    except threading.BrokenBarrierError:
        pass
    if not errors:
        now = time.perf_counter()
        window.start, window.end = now + warmup, now + warmup + seconds
        window.go.set()
        time.sleep(max(0.0, window.end - time.perf_counter()))
    window.stop.set()
    window.go.set()
    for t in threads:
        t.join(timeout=60)
    if errors:
        raise RuntimeError(f"client error: {errors[0]!r}") from errors[0]
    flat = [x for lst in lats for x in lst]
    return len(flat) / seconds, flat


def record(window: Window, lats: list[float], t0: float, t1: float) -> None:
    if window.start <= t1 < window.end:
        lats.append(t1 - t0)


class ActionWorker:
    """Plays whole classic 2-player matches; ``per_thread`` are made before the clock starts."""

    def __init__(self, port: int, per_thread: int) -> None:
        self.port, self.per_thread = port, per_thread
        self.extra_matches = 0  # matches a client had to create inside the window
        self._lock = threading.Lock()

    def __call__(self, i: int, window: Window, lats: list[float]) -> None:
        port, per_thread = self.port, self.per_thread
        c = Client(port)
        rng = random.Random(i)
        tag = f"{os.getpid()}x{i}"
        tokens = [c.ok("POST", "/v1/players", {"name": f"b{tag}s{s}"})["token"] for s in (0, 1)]
        made = 0

        def new_match() -> Match:
            nonlocal made
            made += 1
            return make_match(c, tokens, f"bench-{tag}-{made}")

        pool = [new_match() for _ in range(per_thread)]
        window.ready.wait(timeout=120)
        window.go.wait()
        m = pool.pop()
        while not window.stop.is_set():
            s = m.state
            seat = s.turn
            action = rng.choice(engine.legal_action_dicts(s))
            t0 = time.perf_counter()
            status, view = c.call("POST", f"/v1/matches/{m.id}/actions", action, m.tokens[seat])
            t1 = time.perf_counter()
            if status != 200:
                raise RuntimeError(f"action {action} in {m.id} -> {status}: {view}")
            record(window, lats, t0, t1)
            engine.apply_inplace(s, action, seat=seat)
            m.version += 1
            if view["version"] != m.version or view["status"] != s.status:
                raise RuntimeError(f"{m.id}: server at {view['version']}/{view['status']}, "
                                   f"local replay at {m.version}/{s.status}")
            if s.status == engine.FINISHED:
                if view["result"]["winners"] != s.winners:
                    raise RuntimeError(f"{m.id}: winners {view['result']} != {s.winners}")
                m = pool.pop() if pool else new_match()  # setup inside the window if we must
        c.close()
        with self._lock:
            self.extra_matches += max(0, made - per_thread)


def bare_worker(port: int) -> Worker:
    body = {"type": "play", "card": "guard", "target": 1, "guess": "priest"}  # same size

    def work(i: int, window: Window, lats: list[float]) -> None:
        c = Client(port)
        path = f"/bench/bare/k{i}"
        version = c.ok("POST", path, body)["version"]  # also proves the route is there
        window.ready.wait(timeout=120)
        window.go.wait()
        while not window.stop.is_set():
            t0 = time.perf_counter()
            status, data = c.call("POST", path, body)
            t1 = time.perf_counter()
            if status != 200 or data["version"] != version + 1:
                raise RuntimeError(f"bare {path} -> {status}: {data} (expected {version + 1})")
            version += 1
            record(window, lats, t0, t1)
        c.close()

    return work


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000 if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description="API actions/s vs a bare Redis endpoint")
    ap.add_argument("--clients", type=int, default=48, help="client threads (default 48)")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per phase")
    ap.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds per phase")
    ap.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
    ap.add_argument("--matches", type=int, default=4,
                    help="matches each client creates before the clock starts (default 4)")
    opts = ap.parse_args()

    with RedisProcess() as rp:
        server = Gunicorn(rp.url, opts.workers)
        try:
            print(f"# {opts.clients} client threads, {opts.workers} gevent workers, "
                  f"{opts.seconds:.0f}s measured per phase after {opts.warmup:.0f}s warm-up, "
                  f"{os.cpu_count()} CPUs shared by clients, server and Redis", flush=True)
            work = ActionWorker(server.port, opts.matches)
            rate, lats = run_phase(opts.clients, opts.warmup, opts.seconds, work)
            extra = work.extra_matches
            print(f"actions/s: {rate:.0f} actions/s")
            print(f"action p50 ms: {pct(lats, 50):.1f} ms")
            print(f"action p99 ms: {pct(lats, 99):.1f} ms")
            if extra:
                print(f"# {extra} matches were created inside the measured window")
            sys.stdout.flush()

            bare_rate, bare_lats = run_phase(opts.clients, opts.warmup, opts.seconds,
                                             bare_worker(server.port))
            print(f"bare actions/s: {bare_rate:.0f} actions/s")
            print(f"bare p50 ms: {pct(bare_lats, 50):.1f} ms")
            print(f"bare p99 ms: {pct(bare_lats, 99):.1f} ms")
            ratio = rate / bare_rate
            print(f"actions/bare ratio: {ratio:.2f} x")
            print(f"# bar (actions/s at least half of bare actions/s): "
                  f"{'met' if ratio >= 0.5 else 'NOT met'}", flush=True)
            log = server.log_tail(200)
            if "Traceback" in log:
                print(f"# the server logged an error:\n{log}", file=sys.stderr)
                return 1
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
