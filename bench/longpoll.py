"""Long-poll benchmark: idle pollers held, wake-up latency, requests per action, server memory.

Run: ``make bench``, or ``.venv/bin/python bench/longpoll.py [--pollers 5000] [--actions 200]``.

Setup: a private ``redis-server`` (tests/support/redis_proc.py) and the app under gunicorn with
``service/ops/gunicorn_conf.py`` and two gevent worker processes (``WEB_CONCURRENCY=2``),
``RATE_LIMITS=0``, ``EXPECT_WORKERS=0``. The client is this one process under gevent (monkey
patched), speaking plain HTTP/1.1 over keep-alive sockets, one connection per poller.

1. ``--pollers`` / 6 six-seat matches (2019 rules, turn timeouts of a day; 5,000 pollers by
   default, ``--matches`` to give the matches instead) are created and filled; every seated
   player long-polls its view, ``GET /v1/matches/{id}/view?wait=60&after=V``, with
   ``V`` the current version: all of them idle. ``idle pollers held`` is the server's own count
   (the ``ll_longpoll_waiting`` gauge of ``/metrics``, summed over both workers), checked against
   the client's count of requests still open. ``server rss`` is the resident memory of the
   gunicorn master and workers (``VmRSS`` from /proc) while they are held; ``server rss per
   1000 pollers`` is its growth from before the pollers came, per 1,000 held.
2. With all of them held, ``--actions`` moves are posted one after another, on the matches in
   turn (the mover reads its view first, untimed). Each move wakes the six pollers of its match;
   a wake-up's latency runs from just before the move's POST is sent to the moment a poller has
   read its whole answer (a view at the new version), and each woken poller polls again at once,
   so the idle count stays up. ``wake p50 ms`` / ``wake p99 ms`` are over every poller woken
   (a comment line adds the move's own answer time and the wake-ups counted from that answer).
3. ``requests per action``: SDK-style bots (a long-poll of the view with ``after`` = the version
   it has, then a POST of one of its legal actions while it is its turn; the POST's answer is the
   new view) play ``--bot-matches`` whole two-player classic matches; all requests of both bots
   divided by the actions applied.

Prints one figure a line, ``name: number unit``; comment lines start with ``#``.
Targets (issue 17): >= 5,000 pollers held on 2 processes, wake p99 <= 20 ms, <= 2.2 requests
per action. The client process and the server raise their open-file limit to what the pollers
need (up to the hard limit).
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import gevent  # noqa: E402
import gevent.event  # noqa: E402
import gevent.pool  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from service.ops.run import descendants  # noqa: E402
from tests.support.redis_proc import RedisProcess  # noqa: E402
from tests.support.server import ApiServer  # noqa: E402

SEATS = 6
MATCH = {"ruleset": "2019", "seats": SEATS, "turn_timeout_s": 86400}
BOT_MATCH = {"ruleset": "classic", "seats": 2, "turn_timeout_s": 86400}
POLL_WAIT = 60


# --------------------------------------------------------------------------- a tiny HTTP client


class Conn:
    """One keep-alive HTTP/1.1 connection; answers are (status, lower-cased headers, body)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.requests = 0

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, method: str, path: str, token: str | None = None, body: Any = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}"]
        if token:
            head.append(f"Authorization: Bearer {token}")
        if body is not None:
            head.append("Content-Type: application/json")
        if body is not None or method != "GET":
            head.append(f"Content-Length: {len(data)}")
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        self.requests += 1

    def read(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip()
                   for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            rest += chunk
        self.buf = rest[length:]
        return status, headers, rest[:length]

    def request(self, method: str, path: str, token: str | None = None,
                body: Any = None) -> tuple[int, dict[str, str], bytes]:
        self.send(method, path, token, body)
        return self.read()

    def json(self, method: str, path: str, token: str | None = None, body: Any = None,
             want: int = 200) -> Any:
        status, _, data = self.request(method, path, token, body)
        if status != want:
            raise RuntimeError(f"{method} {path} -> {status}: {data[:300]!r}")
        return json.loads(data)


# --------------------------------------------------------------------------- helpers


def raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, need)) if hard != resource.RLIM_INFINITY else max(soft, need)
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def process_tree(pid: int) -> list[int]:
    """``pid`` and every live descendant (the /proc walk that service.ops.run uses)."""
    return [pid, *(p for p, _ in descendants(pid))]


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def waiting_on_server(port: int) -> int | None:
    """The ``ll_longpoll_waiting`` gauge (all workers), or None without /metrics."""
    c = Conn(port)
    try:
        status, _, body = c.request("GET", "/metrics")
    finally:
        c.close()
    if status != 200:
        return None
    for line in body.decode().splitlines():
        if line.startswith("ll_longpoll_waiting"):
            return int(float(line.split()[-1]))
    return None


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * len(s) + 0.5) - 1))]


def parallel(n: int, fn: Callable[[int], Any], size: int = 64) -> list[Any]:
    pool = gevent.pool.Pool(size)
    return list(pool.imap(fn, range(n)))


class Players:
    """Registered players and one setup connection per greenlet."""

    def __init__(self, port: int) -> None:
        self.port = port

    def register(self, n: int, prefix: str) -> list[dict[str, Any]]:
        def one(i: int) -> dict[str, Any]:
            c = Conn(self.port)
            try:
                return c.json("POST", "/v1/players", body={"name": f"{prefix}{i}-{os.getpid()}"},
                              want=201)  # type: ignore[no-any-return]
            finally:
                c.close()
        return parallel(n, one)

    def match(self, players: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
        c = Conn(self.port)
        try:
            mid = c.json("POST", "/v1/matches", players[0]["token"], options, want=201)["match_id"]
            v: dict[str, Any] = {}
            for p in players:
                v = c.json("POST", f"/v1/matches/{mid}/join", p["token"])
            return v
        finally:
            c.close()


# --------------------------------------------------------------------------- 1 + 2: pollers


class Poller:
    def __init__(self, port: int, mid: str, seat: int, token: str, version: int,
                 bench: PollBench) -> None:
        self.conn = Conn(port)
        self.mid, self.seat, self.token, self.version = mid, seat, token, version
        self.bench = bench
        self.open = False
        self.greenlet = gevent.spawn(self.run)

    def run(self) -> None:
        path = f"/v1/matches/{self.mid}/view?wait={POLL_WAIT}&after="
        while not self.bench.stopping:
            self.conn.send("GET", path + str(self.version), self.token)
            self.open = True
            status, headers, _ = self.conn.read()
            now = time.perf_counter()
            self.open = False
            if status == 503 and not self.bench.stopping:
                # the server was too busy to answer (Retry-After): poll again, as a bot does
                self.bench.retried += 1
                gevent.sleep(float(headers.get("retry-after", "1")))
                continue
            if status != 200:
                self.bench.errors.append(f"poll {self.mid}/{self.seat}: {status}")
                return
            version = int(headers["etag"].strip('"'))
            if version > self.version:
                self.bench.woken(self.mid, version, now)
            self.version = version


class PollBench:
    def __init__(self, server: ApiServer, matches: int) -> None:
        self.server = server
        self.port = server.port
        self.n_matches = matches
        self.stopping = False
        self.errors: list[str] = []
        self.retried = 0  # polls answered 503 (busy) and sent again
        self.pollers: list[Poller] = []
        self.players: dict[str, list[dict[str, Any]]] = {}
        self.versions: dict[str, int] = {}
        # the move being measured: match id, its new version, when it was sent, who woke
        self.target: tuple[str, int, float] | None = None
        self.latencies: list[float] = []
        self.action_latencies: list[float] = []
        self.first_wake: list[float] = []
        self.move_no = 0
        self.after_answer: list[tuple[int, float]] = []  # (move, woken at), per poller
        self.answered_at: dict[int, float] = {}  # move -> when its answer arrived
        self.woke = 0
        self.all_woke = gevent.event.Event()

    def setup(self) -> None:
        everyone = Players(self.port).register(self.n_matches * SEATS, "lp")
        groups = [everyone[i * SEATS:(i + 1) * SEATS] for i in range(self.n_matches)]
        views = parallel(self.n_matches, lambda i: Players(self.port).match(groups[i], MATCH),
                         size=32)
        for group, v in zip(groups, views, strict=True):
            assert v["status"] == "active", v
            self.players[v["match_id"]] = group
            self.versions[v["match_id"]] = v["version"]

    def hold(self, wave: int = 500) -> tuple[int, int]:
        """Start every poller, ``wave`` at a time (each wave once the server holds the ones
        before it, or after 30 s: bots come and go over time, they don't all connect in the
        same second); returns (server's count, client's count) once all are held."""
        seats = [(mid, seat, p) for mid, group in self.players.items()
                 for seat, p in enumerate(group)]
        server = None
        for i in range(0, len(seats), wave):
            for mid, seat, p in seats[i:i + wave]:
                self.pollers.append(Poller(self.port, mid, seat, p["token"], self.versions[mid],
                                           self))
            want = len(self.pollers)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                gevent.sleep(0.25)
                server = waiting_on_server(self.port)
                if server is None or server >= want:
                    break
        gevent.sleep(0.5)  # nothing returns while idle: the counts stay put
        server = waiting_on_server(self.port)
        client = sum(1 for p in self.pollers if p.open)
        return (client if server is None else server), client

    def woken(self, mid: str, version: int, at: float) -> None:
        t = self.target
        if t is not None and t[0] == mid and version >= t[1]:
            self.latencies.append(at - t[2])
            self.after_answer.append((self.move_no, at))
            if self.woke == 0:
                self.first_wake.append(at - t[2])
            self.woke += 1
            if self.woke == SEATS:
                self.all_woke.set()

    def moves(self, n: int, rng: random.Random) -> int:
        c = Conn(self.port)
        mids = list(self.players)
        done = 0
        try:
            for i in range(n):
                mid = mids[i % len(mids)]
                summary = c.json("GET", f"/v1/matches/{mid}")
                if summary["status"] != "active":
                    continue
                mover = self.players[mid][summary["turn"]["seat"]]
                view = c.json("GET", f"/v1/matches/{mid}/view", mover["token"])
                action = rng.choice(view["legal_actions"])
                self.woke = 0
                self.all_woke.clear()
                sent = time.perf_counter()
                self.target = (mid, view["version"] + 1, sent)
                moved = c.json("POST", f"/v1/matches/{mid}/actions", mover["token"], action)
                self.answered_at[self.move_no] = time.perf_counter()
                self.action_latencies.append(self.answered_at[self.move_no] - sent)
                assert moved["version"] == view["version"] + 1, (moved["version"], view["version"])
                if not self.all_woke.wait(5):
                    self.errors.append(f"{mid}: only {self.woke} of {SEATS} pollers woke")
                self.target = None
                self.move_no += 1
                done += 1
                gevent.sleep(0.005)
        finally:
            c.close()
        return done

    def stop(self) -> None:
        self.stopping = True
        gevent.killall([p.greenlet for p in self.pollers], block=True, timeout=5)
        for p in self.pollers:
            p.conn.close()


# --------------------------------------------------------------------------- 3: bot loop


def bot(port: int, mid: str, token: str, seed: int) -> tuple[int, int]:
    """Play the match to its end, SDK style; returns (requests, actions applied)."""
    rng = random.Random(seed)
    c = Conn(port)
    applied = 0
    version: int | None = None
    try:
        while True:
            path = f"/v1/matches/{mid}/view"
            if version is not None:
                path += f"?wait=30&after={version}"
            v = c.json("GET", path, token)
            while v["status"] == "active" and v["legal_actions"]:
                status, _, body = c.request(
                    "POST", f"/v1/matches/{mid}/actions", token,
                    {**rng.choice(v["legal_actions"]), "expected_version": v["version"]})
                if status != 200:
                    raise RuntimeError(f"action -> {status}: {body[:300]!r}")
                applied += 1
                v = json.loads(body)
            if v["status"] == "finished":
                return c.requests, applied
            version = v["version"]
    finally:
        c.close()


def bot_matches(port: int, n: int) -> tuple[int, int]:
    players = Players(port)
    total_requests = total_actions = 0
    for i in range(n):
        pair = players.register(2, f"bot{i}-")
        v = players.match(pair, BOT_MATCH)
        mid = v["match_id"]
        jobs = [gevent.spawn(bot, port, mid, p["token"], 1000 * i + s)
                for s, p in enumerate(pair)]
        gevent.joinall(jobs, raise_error=True, timeout=300)
        for j in jobs:
            reqs, acts = j.value
            total_requests += reqs
            total_actions += acts
        record = Conn(port).json("GET", f"/v1/matches/{mid}/events")["events"]
        moves = sum(1 for e in record if e["type"] in ("play", "chancellor_returned"))
        assert moves == sum(j.value[1] for j in jobs), (moves, [j.value for j in jobs])
    return total_requests, total_actions


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--pollers", type=int, default=5000,
                    help="idle pollers (a six-seat match per 6 of them; default 5000)")
    ap.add_argument("--matches", type=int, default=None,
                    help="six-seat matches polled (x6 pollers), instead of --pollers")
    ap.add_argument("--actions", type=int, default=200, help="moves timed while pollers wait")
    ap.add_argument("--bot-matches", type=int, default=5, help="matches played by the bots")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    if args.matches is None:
        args.matches = -(-args.pollers // SEATS)
    # the pollers' sockets here and in the server (a child: it inherits the limit)
    raise_fd_limit(args.matches * SEATS * 2 + 1024)

    with RedisProcess() as redis_proc:
        server = ApiServer(redis_proc.url, workers=args.workers,
                           env={"RATE_LIMITS": "0", "METRICS_OPEN": "1"})
        server.start()
        try:
            bench = PollBench(server, args.matches)
            t0 = time.monotonic()
            bench.setup()
            print(f"# setup: {args.matches} matches x {SEATS} seats in "
                  f"{time.monotonic() - t0:.1f} s", flush=True)
            assert server.pid is not None
            rss_before = rss_kib(process_tree(server.pid))
            held, client_open = bench.hold()
            rss = rss_kib(process_tree(server.pid))
            print(f"# pollers started: {len(bench.pollers)}, open on the client: {client_open}"
                  f", polls answered 503 (busy) and sent again: {bench.retried}")
            print(f"idle pollers held: {held} pollers", flush=True)
            print(f"server rss: {rss / 1024:.1f} MiB")
            print(f"server rss per 1000 pollers: "
                  f"{(rss - rss_before) / 1024 / max(1, held) * 1000:.1f} MiB")
            print(f"# server rss before the pollers: {rss_before / 1024:.1f} MiB "
                  f"(gunicorn master + {args.workers} workers)")
            moved = bench.moves(args.actions, random.Random(4))
            after = waiting_on_server(server.port)
            bench.stop()
            if bench.errors:
                print("# errors: " + "; ".join(bench.errors[:5]))
            lat = [x * 1000 for x in bench.latencies]
            print(f"# {moved} moves, {len(lat)} wake-ups measured; held afterwards: {after}")
            print(f"wake p50 ms: {statistics.median(lat):.2f} ms")
            print(f"wake p99 ms: {percentile(lat, 99):.2f} ms")
            print(f"wake max ms: {max(lat):.2f} ms")
            act = [x * 1000 for x in bench.action_latencies]
            first = [x * 1000 for x in bench.first_wake]
            since = [(at - bench.answered_at[n]) * 1000 for n, at in bench.after_answer
                     if n in bench.answered_at]
            print(f"# the move's own answer: p50 {statistics.median(act):.2f} ms, p99 "
                  f"{percentile(act, 99):.2f} ms; first poller of a match woken: p50 "
                  f"{statistics.median(first):.2f} ms, p99 {percentile(first, 99):.2f} ms; "
                  f"wake-ups counted from the move's answer instead: p50 "
                  f"{statistics.median(since):.2f} ms, p99 {percentile(since, 99):.2f} ms")
            requests, actions = bot_matches(server.port, args.bot_matches)
            print(f"# bots: {requests} requests for {actions} actions over "
                  f"{args.bot_matches} two-player matches")
            print(f"requests per action: {requests / actions:.3f} requests")
            log = server.log_text()
            if "Traceback" in log:
                print("# the server logged a traceback:\n" + log[-3000:], file=sys.stderr)
                return 1
            want = args.matches * SEATS
            ok = held >= want and percentile(lat, 99) <= 20 and requests / actions <= 2.2 \
                and not bench.errors
            print(f"# targets (all {want} held, p99 <= 20 ms, <= 2.2 req/action): "
                  f"{'met' if ok else 'NOT met'}")
        finally:
            server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
