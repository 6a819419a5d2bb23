"""API throughput: actions over HTTP against the real app under gunicorn, and the same load
against a bare endpoint that only reads and writes one Redis key in a WATCH/MULTI transaction.

Run: ``make bench``, or ``.venv/bin/python bench/api.py [--clients 48] [--seconds 10]``.

Setup: a private ``redis-server`` (tests/support/redis_proc.py) and gunicorn with
``service/ops/gunicorn_conf.py`` (gevent, ``WEB_CONCURRENCY=2``), ``RATE_LIMITS=0``,
``EXPECT_WORKERS=0`` and ``BENCH_BARE_ENDPOINT=1`` (which adds ``POST /bench/bare/<key>``; it is not
part of the API). Everything runs on this machine: the client threads share the CPUs with the
server and Redis, under both loads alike.

Actions: each client thread plays whole classic 2-player matches (created and joined before the
clock starts, ``turn_timeout_s`` one day so nothing times out), one POST
``/v1/matches/{id}/actions`` per action, keep-alive connections. After a move it is the other
seat's turn, and the mover's answer (its new view) shows no legal actions for the other seat; so
instead of a second request (GET that seat's view) the client keeps the match's engine state
locally, in lockstep with the server (same seed, same actions: the engine is deterministic), and
posts a random one of ``legal_action_dicts`` -- exactly the list the other seat's view holds.
Every answer is checked: 200, the version one higher, and at the end the same winners as the
local replay.

Bare: the same client threads post to ``/bench/bare/<key>`` (a body of an action's size, a key
per client), one request per "action".

The two loads alternate in short slots (2.5 s by default: actions, bare, actions, bare, ...)
rather than running one after the other, so that both meet the same conditions on a shared
machine; the first slot of each is a warm-up.

With ``--against DIR`` a second gunicorn runs the code of another checkout (``DIR``: say a
``git worktree`` of an older commit, with this one's ``.venv`` Python) on a Redis of its own;
the clients play their own players and matches against it in slots of their own (``against``),
alternating with the slots of this checkout (``actions``), and the output adds the same figures
for it (``... against``), one ``# pair`` line per round and the ratio of actions/s and of server
CPU per action: a before/after pair measured in one run.

With ``--compare-token-check`` a second gunicorn on the same Redis runs with
``BENCH_TOKEN_CHECK=0`` (a token its process has seen is taken on trust, as before issue 23's
per-request check); the clients play the same matches against it in slots of their own
(``unchecked``), next to the checked ones, and the output adds ``actions/s without token
check``, one ``# pair`` line per round and ``token check cost`` (per cent of actions/s).

Prints one figure a line, ``name: number unit``: ``actions/s``, ``action p50 ms``,
``action p99 ms``, ``bare actions/s``, ``bare p50 ms``, ``bare p99 ms``, and
``actions/bare ratio`` (issue 17's bar: at least 0.75, or server CPU per action at most 1.33 times
the bare endpoint's); comment lines start with ``#``. Only
requests that start and end inside a measured slot count.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
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
from typing import NamedTuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from service import engine  # noqa: E402
from tests.support.keepalive import KeepAlive  # noqa: E402
from tests.support.redis_proc import RedisProcess  # noqa: E402

MATCH_OPTIONS = {"ruleset": "classic", "seats": 2, "turn_timeout_s": 86400}
BARE_BODY = {"type": "play", "card": "guard", "target": 1, "guess": "priest"}  # an action's size


# --------------------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Gunicorn:
    """gunicorn -c service/ops/gunicorn_conf.py service.http.wsgi:app in its own process group."""

    def __init__(self, redis_url: str, workers: int, env: dict[str, str] | None = None,
                 tree: str = REPO) -> None:
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="llbench-gunicorn-", suffix=".log")
        extra = env
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "PORT", "HOST")}
        env.update(PORT=str(self.port), HOST="127.0.0.1", REDIS_URL=redis_url,
                   WEB_CONCURRENCY=str(workers), RATE_LIMITS="0", EXPECT_WORKERS="0",
                   BENCH_BARE_ENDPOINT="1")
        env.update(extra or {})
        env.pop("ACCESS_LOG", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "service/ops/gunicorn_conf.py",
             "--no-control-socket", "service.http.wsgi:app"],
            cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float = 120.0) -> None:
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

    def pids(self) -> list[int]:
        """The master and its workers."""
        out = [self.proc.pid]
        for entry in os.listdir("/proc"):
            if entry.isdigit() and _stat(int(entry))[1:2] == [str(self.proc.pid)]:
                out.append(int(entry))
        return out

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


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat fields after the command name (state, ppid, ...); [] if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        f = _stat(pid)
        if f:
            total += int(f[11]) + int(f[12])  # utime, stime
    return total / tick


# --------------------------------------------------------------------------- the client


class Match:
    def __init__(self, mid: str, seed: str, tokens: list[str], version: int) -> None:
        self.id = mid
        self.tokens = tokens  # by seat
        self.version = version
        o = MATCH_OPTIONS
        self.state = engine.new_match(str(o["ruleset"]), int(o["seats"]), seed=seed)


def make_match(c: KeepAlive, tokens: list[str], seed: str) -> Match:
    created = c.ok("POST", "/v1/matches", {**MATCH_OPTIONS, "seed": seed}, tokens[0])
    mid = created["match_id"]
    c.ok("POST", f"/v1/matches/{mid}/join", token=tokens[0])
    view = c.ok("POST", f"/v1/matches/{mid}/join", token=tokens[1])
    assert view["status"] == "active", view
    return Match(mid, seed, tokens, view["version"])


class Slot(NamedTuple):
    mode: str
    start: float
    end: float
    measured: bool
    index: int


class Schedule:
    """Alternating slots of each mode (``actions`` then ``bare``; with ``--compare-token-check``
    ``actions``, ``unchecked``, ``bare``, the first two swapping places every round): first one
    unmeasured warm-up slot of each, then ``pairs`` measured slots of each. Every client thread
    runs the mode of the slot it is in, so every mode sees the same clients and the same
    background load on this machine (a noisy neighbour hits them alike). A request counts for
    its slot's mode if it starts after the slot's first ``settle`` seconds (requests of the
    other mode still in flight then) and completes before the slot ends."""

    MODES = ("actions", "bare")

    def __init__(self, start: float, warmup: float, slot: float, pairs: int,
                 settle: float = 0.25, modes: tuple[str, ...] = MODES) -> None:
        self.modes = modes
        self.slots: list[Slot] = []
        t = start
        n = len(modes)
        for i in range(n + n * pairs):
            length = warmup / n if i < n else slot
            order = list(modes)
            if n == 3 and (i // n) % 2:  # actions and unchecked take turns going first
                order[0], order[1] = order[1], order[0]
            self.slots.append(Slot(order[i % n], t, t + length, i >= n, i))
            t += length
        self.end = t
        self.settle = settle
        self.measured = {m: sum(x.end - (x.start + settle) for x in self.slots
                                if x.measured and x.mode == m) for m in modes}

    def at(self, t: float) -> Slot | None:
        for slot in self.slots:
            if slot.start <= t < slot.end:
                return slot
        return None

    def counts(self, slot: Slot, t0: float, t1: float) -> bool:
        return slot.measured and slot.start + self.settle <= t0 and t1 < slot.end

    def completed_in(self, slot: Slot, t1: float) -> bool:
        return slot.start + self.settle <= t1 < slot.end


class Clients:
    """``n`` client threads, each with its own keep-alive connection, players, matches and bare
    key. Each plays classic 2-player matches (``actions`` mode) or posts to its bare key
    (``bare`` mode), as the schedule says."""

    def __init__(self, port: int, n: int, matches_each: int,
                 unchecked_port: int | None = None, against_port: int | None = None) -> None:
        self.port, self.n, self.matches_each = port, n, matches_each
        #: the server without the per-request token check (same Redis, same players)
        self.unchecked_port = unchecked_port
        #: the server of another checkout (its own Redis, players and matches)
        self.against_port = against_port
        self.second = "unchecked" if unchecked_port is not None else \
            "against" if against_port is not None else None
        self.modes = Schedule.MODES if self.second is None else \
            ("actions", self.second, "bare")
        self.lats: dict[str, list[list[float]]] = {m: [[] for _ in range(n)]
                                                   for m in self.modes}
        self.extra_matches = 0  # matches a client had to create inside the schedule
        self.matches_played = 0
        self.lock = threading.Lock()
        self.ready = threading.Barrier(n + 1)
        self.go = threading.Event()
        self.schedule: Schedule | None = None
        self.errors: list[BaseException] = []
        self.done: list[list[int]] = []  # requests completed, per thread and slot
        self.cpu: list[float] = []  # server CPU seconds, per slot

    def run(self, warmup: float, slot: float, pairs: int,
            cpu_seconds: Callable[[], float]) -> Schedule:
        """Run the schedule; ``cpu_seconds()`` (the server's CPU time so far) is sampled over
        each measured slot, for :meth:`server_cpu_ms`."""
        threads = [threading.Thread(target=self._thread, args=(i,), daemon=True)
                   for i in range(self.n)]
        for t in threads:
            t.start()
        try:
            self.ready.wait(timeout=180)  # every client has done its setup
        except threading.BrokenBarrierError:
            pass
        sched = self.schedule = Schedule(time.perf_counter(), warmup, slot, pairs,
                                         modes=self.modes)
        self.done = [[0] * len(sched.slots) for _ in range(self.n)]
        self.cpu = [0.0] * len(sched.slots)
        self.go.set()
        for x in sched.slots:
            if not x.measured or self.errors:
                continue
            time.sleep(max(0.0, x.start + sched.settle - time.perf_counter()))
            before = cpu_seconds()
            time.sleep(max(0.0, x.end - time.perf_counter()))
            self.cpu[x.index] = cpu_seconds() - before
        for t in threads:
            t.join(timeout=self.schedule.end - time.perf_counter() + 60)
        if self.errors:
            raise RuntimeError(f"client error: {self.errors[0]!r}") from self.errors[0]
        return self.schedule

    def _thread(self, i: int) -> None:
        try:
            self._client(i)
        except BaseException as e:  # reported by run()
            self.errors.append(e)
            self.ready.abort()

    def _client(self, i: int) -> None:
        c = KeepAlive(self.port)
        unchecked = KeepAlive(self.unchecked_port) if self.unchecked_port else c
        other = KeepAlive(self.against_port) if self.against_port else None
        rng = random.Random(i)
        tag = f"{os.getpid()}x{i}"
        tokens = [c.ok("POST", "/v1/players", {"name": f"b{tag}s{s}"})["token"] for s in (0, 1)]
        other_tokens = [] if other is None else \
            [other.ok("POST", "/v1/players", {"name": f"b{tag}s{s}"})["token"] for s in (0, 1)]
        made = made_other = 0

        def new_match(conn: KeepAlive = c) -> Match:
            nonlocal made, made_other
            if conn is c:
                made += 1
            else:
                made_other += 1
            return make_match(conn, tokens if conn is c else other_tokens,
                              f"bench-{tag}-{made + made_other}")

        pool = [new_match() for _ in range(self.matches_each)]
        other_pool = [] if other is None else \
            [new_match(other) for _ in range(self.matches_each)]
        other_m = other_pool.pop() if other_pool else None
        bare_path = f"/bench/bare/k{tag}"
        bare_version = c.ok("POST", bare_path, BARE_BODY)["version"]  # the route is there
        self.ready.wait(timeout=180)
        self.go.wait()
        sched = self.schedule
        assert sched is not None
        m = pool.pop()
        played = 0
        while True:
            slot = sched.at(time.perf_counter())
            if slot is None:
                break
            if slot.mode in ("actions", "unchecked", "against"):
                on_other = slot.mode == "against"
                cur = other_m if on_other else m
                assert cur is not None
                s = cur.state
                seat = s.turn
                action = rng.choice(engine.legal_action_dicts(s))
                conn = c if slot.mode == "actions" else unchecked if not on_other else other
                assert conn is not None
                t0 = time.perf_counter()
                status, view = conn.call("POST", f"/v1/matches/{cur.id}/actions", action,
                                         cur.tokens[seat])
                t1 = time.perf_counter()
                if status != 200:
                    raise RuntimeError(f"action {action} in {cur.id} -> {status}: {view}")
                engine.apply_inplace(s, action, seat=seat)
                cur.version += 1
                if view["version"] != cur.version or view["status"] != s.status:
                    raise RuntimeError(f"{cur.id}: server at {view['version']}/"
                                       f"{view['status']}, local replay at {cur.version}/"
                                       f"{s.status}")
                if s.status == engine.FINISHED:
                    if view["result"]["winners"] != s.winners:
                        raise RuntimeError(f"{cur.id}: winners {view['result']} != {s.winners}")
                    played += 1
                    # a new match inside the schedule if we must
                    if on_other:
                        assert other is not None
                        other_m = other_pool.pop() if other_pool else new_match(other)
                    else:
                        m = pool.pop() if pool else new_match()
            else:
                t0 = time.perf_counter()
                status, data = c.call("POST", bare_path, BARE_BODY)
                t1 = time.perf_counter()
                if status != 200 or data["version"] != bare_version + 1:
                    raise RuntimeError(f"bare -> {status}: {data} (want {bare_version + 1})")
                bare_version += 1
            if sched.counts(slot, t0, t1):
                self.lats[slot.mode][i].append(t1 - t0)
            if sched.completed_in(slot, t1):
                self.done[i][slot.index] += 1
        c.close()
        if unchecked is not c:
            unchecked.close()
        if other is not None:
            other.close()
        with self.lock:
            self.extra_matches += max(0, made - self.matches_each) + \
                max(0, made_other - self.matches_each)
            self.matches_played += played

    def server_cpu_ms(self, mode: str) -> float:
        """Server CPU (gunicorn + Redis) per request of ``mode``, over the measured slots."""
        assert self.schedule is not None
        slots = [x.index for x in self.schedule.slots if x.measured and x.mode == mode]
        requests = sum(d[k] for d in self.done for k in slots)
        return sum(self.cpu[k] for k in slots) / requests * 1000 if requests else float("nan")

    def slot_rates(self, mode: str) -> list[float]:
        """Requests per second completed in each measured slot of ``mode``, in order."""
        assert self.schedule is not None
        sched = self.schedule
        return [sum(d[x.index] for d in self.done) / (x.end - x.start - sched.settle)
                for x in sched.slots if x.measured and x.mode == mode]

    def results(self, mode: str) -> tuple[float, list[float]]:
        assert self.schedule is not None
        flat = [x for lst in self.lats[mode] for x in lst]
        return len(flat) / self.schedule.measured[mode], flat


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000 if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description="API actions/s vs a bare Redis endpoint")
    ap.add_argument("--clients", type=int, default=48, help="client threads (default 48)")
    ap.add_argument("--seconds", type=float, default=10.0,
                    help="measured seconds per mode (default 10)")
    ap.add_argument("--slot", type=float, default=2.5,
                    help="length of one alternating slot in seconds (default 2.5)")
    ap.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds (default 2)")
    ap.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
    ap.add_argument("--matches", type=int, default=8,
                    help="matches each client creates before the clock starts (default 8)")
    ap.add_argument("--compare-token-check", action="store_true",
                    help="also run actions against a second server without the per-request "
                         "token check (BENCH_TOKEN_CHECK=0), in slots alternating with the "
                         "checked ones, and print what the check costs")
    ap.add_argument("--against", metavar="DIR",
                    help="also run actions against a second server running the code of the "
                         "checkout DIR (its own Redis), in slots alternating with this "
                         "checkout's, and print the ratios (a before/after pair in one run)")
    opts = ap.parse_args()
    if opts.against and opts.compare_token_check:
        ap.error("--against and --compare-token-check each take the second server")
    pairs = max(1, round(opts.seconds / opts.slot))

    with RedisProcess() as rp, contextlib.ExitStack() as stack:
        rp2 = stack.enter_context(RedisProcess()) if opts.against else None
        server = Gunicorn(rp.url, opts.workers)
        baseline = Gunicorn(rp.url, opts.workers, {"BENCH_TOKEN_CHECK": "0"}) \
            if opts.compare_token_check else \
            Gunicorn(rp2.url, opts.workers, {"ENQUEUE_JOBS": "0"},  # (an older name)
                     tree=os.path.abspath(opts.against)) \
            if rp2 is not None else None
        try:
            clients = Clients(server.port, opts.clients, opts.matches,
                              unchecked_port=baseline.port if opts.compare_token_check and
                              baseline else None,
                              against_port=baseline.port if opts.against and baseline
                              else None)
            print(f"# {opts.clients} client threads, {opts.workers} gevent workers, "
                  f"{pairs} x {opts.slot:g}s slots per mode (actions and bare alternating) "
                  f"after {opts.warmup:g}s warm-up, {os.cpu_count()} CPUs shared by clients, "
                  f"server and Redis", flush=True)
            assert rp.proc is not None
            pids = [*server.pids(), *(baseline.pids() if baseline else []), rp.proc.pid,
                    *([rp2.proc.pid] if rp2 is not None and rp2.proc is not None else [])]
            clients.run(opts.warmup, opts.slot, pairs, lambda: cpu_seconds(pids))
            rate, lats = clients.results("actions")
            bare_rate, bare_lats = clients.results("bare")
            print(f"actions/s: {rate:.0f} actions/s")
            print(f"action p50 ms: {pct(lats, 50):.1f} ms")
            print(f"action p99 ms: {pct(lats, 99):.1f} ms")
            print(f"bare actions/s: {bare_rate:.0f} actions/s")
            print(f"bare p50 ms: {pct(bare_lats, 50):.1f} ms")
            print(f"bare p99 ms: {pct(bare_lats, 99):.1f} ms")
            ratio = rate / bare_rate
            print(f"actions/bare ratio: {ratio:.2f} x")
            if sys.platform.startswith("linux"):
                a_cpu, b_cpu = clients.server_cpu_ms("actions"), clients.server_cpu_ms("bare")
                print(f"action server cpu ms: {a_cpu:.2f} ms")
                print(f"bare server cpu ms: {b_cpu:.2f} ms")
                print(f"# server CPU per request (gunicorn workers + Redis), whatever else "
                      f"this machine runs: bare/actions = {b_cpu / a_cpu:.2f}")
            if opts.compare_token_check:
                _token_check_lines(clients)
            if opts.against:
                _against_lines(clients, opts.against)
            print(f"# {clients.matches_played} matches played to the end"
                  + (f", {clients.extra_matches} of them created inside the measured time"
                     if clients.extra_matches else ""))
            cpu_ok = sys.platform.startswith("linux") and a_cpu <= 1.33 * b_cpu
            print(f"# bar (issue 17: actions/s at least 0.75 x bare, or server CPU per action at "
                  f"most 1.33 x bare): {'met' if ratio >= 0.75 or cpu_ok else 'NOT met'}",
                  flush=True)
            for srv in (server, baseline):
                log = "" if srv is None else srv.log_tail(200)
                if "Traceback" in log:
                    print(f"# the server logged an error:\n{log}", file=sys.stderr)
                    return 1
        finally:
            server.stop()
            if baseline is not None:
                baseline.stop()
    return 0


def _token_check_lines(clients: Clients) -> None:
    """What the per-request token check (issue 23) costs: actions/s with it against the same
    load on a server without it, slot by slot (each checked slot next to an unchecked one)."""
    rate, _ = clients.results("actions")
    base, base_lats = clients.results("unchecked")
    print(f"actions/s without token check: {base:.0f} actions/s")
    print(f"action p50 ms without token check: {pct(base_lats, 50):.1f} ms")
    checked, unchecked = clients.slot_rates("actions"), clients.slot_rates("unchecked")
    for k, (a, b) in enumerate(zip(checked, unchecked, strict=True), 1):
        print(f"# pair {k}: {a:.0f} actions/s checked, {b:.0f} unchecked "
              f"({100 * (1 - a / b):+.1f} %)")
    cost = 100 * (1 - rate / base)
    print(f"token check cost: {cost:.1f} % of actions/s")
    if sys.platform.startswith("linux"):
        a_cpu, b_cpu = clients.server_cpu_ms("actions"), clients.server_cpu_ms("unchecked")
        print(f"action server cpu ms without token check: {b_cpu:.2f} ms")
        print(f"token check server cpu: {100 * (a_cpu / b_cpu - 1):.1f} % per action")
    print(f"# bar (issue 23: the token check costs at most 3 % of actions/s): "
          f"{'met' if cost <= 3.0 else 'NOT met'}", flush=True)


def _against_lines(clients: Clients, tree: str) -> None:
    """This checkout's actions against the other checkout's, slot by slot."""
    rate, _ = clients.results("actions")
    base, base_lats = clients.results("against")
    print(f"# against: {tree}")
    print(f"actions/s against: {base:.0f} actions/s")
    print(f"action p50 ms against: {pct(base_lats, 50):.1f} ms")
    print(f"action p99 ms against: {pct(base_lats, 99):.1f} ms")
    bare_rate, _ = clients.results("bare")
    print(f"actions/bare ratio against: {base / bare_rate:.2f} x")
    ours, theirs = clients.slot_rates("actions"), clients.slot_rates("against")
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True), 1):
        print(f"# pair {k}: {a:.0f} actions/s this checkout, {b:.0f} against "
              f"({100 * (a / b - 1):+.1f} %)")
    print(f"actions/s this/against: {rate / base:.2f} x")
    if sys.platform.startswith("linux"):
        a_cpu, b_cpu = clients.server_cpu_ms("actions"), clients.server_cpu_ms("against")
        print(f"action server cpu ms against: {b_cpu:.2f} ms")
        print(f"action server cpu this/against: {a_cpu / b_cpu:.2f} x", flush=True)


if __name__ == "__main__":
    sys.exit(main())
