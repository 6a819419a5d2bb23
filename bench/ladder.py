"""The ladder under load: scheduled matches per minute with 100 SDK bots on the real stack, the
cost of one scheduling pass for 100 and 10,000 entered bots, and the cost of rating a match.

Run: ``make bench``, or ``.venv/bin/python bench/ladder.py [--bots 100] [--seconds 60]
[--procs 4] [--synthetic 10000]``.

1. Live: a private ``redis-server``, gunicorn (``service/ops/gunicorn_conf.py``, 2 gevent workers),
   one worker process (``python -m service.jobs.worker deadlines default``) and
   ``rq cron service/jobs/cron.py``, with the default ladders (``duel``: classic, 2 seats;
   ``table``: 2019, 4 seats), a scheduling pass every second and 2 s turn deadlines. ``--bots``
   SDK bots (half ``examples/bots/counting_bot.py``, half ``random_bot.py``), each
   ``Bot.run(client, ladders=["duel", "table"])`` in a thread, spread over ``--procs`` processes
   (this script, run with ``--child``). After a 10 s warm-up, every ladder match that finishes in
   the ``--seconds`` window counts: ``ladder matches/min`` (and per ladder). Everything shares
   this machine's CPUs: the bots' own thinking and HTTP clients included.
2. Scheduling pass: ``ladders.form_matches`` (rating sweep, reading entries, records, presence
   and concurrency, planning, writing the started matches) on a private Redis holding
   synthetic bots (player, entry, presence and a record with random mu, sigma, games and seats
   written straight into Redis), every one of them free: 100 bots (50 duels formed; median of
   5 passes) and ``--synthetic`` bots (half as many duels formed in one pass). Also the planning
   alone, and a steady-state pass where a tenth of the bots are free.
3. Rating: ``ladders.rate`` on copies of the ladder matches the live run finished (full event
   logs), each as a fresh unrated match: mean and p99 per match.

Prints one figure a line, ``name: number unit``; comment lines start with ``#``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import redis  # noqa: E402

from service.config import LadderConfig  # noqa: E402
from service.store import keys, ladder_planner, ladders, matches  # noqa: E402
from service.store.docs import FINISHED, MatchDoc, event_json  # noqa: E402
from service.store.rating import Record  # noqa: E402
from tests.support.measure import cpu_seconds, pct  # noqa: E402
from tests.support.redis_proc import RedisProcess  # noqa: E402

WARMUP_S = 10.0
ENV = {"LADDER_INTERVAL_S": "1", "LADDER_TURN_TIMEOUT_S": "2", "LADDERS": "",
       "EXPECT_WORKERS": "1"}
DUEL = LadderConfig("duel", "classic", 2, turn_timeout_s=2, interval_s=1)


# --------------------------------------------------------------------------- bot processes


def child(url: str, first: int, count: int) -> int:
    """Run ``count`` bots (bots first, first+1, ...) until SIGTERM; print their stats."""
    import logging

    from llsdk import Client
    from llsdk.cli import load_bot

    logging.basicConfig(level=logging.ERROR)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stats: list[Any] = []
    threads = []
    anon = Client(url)
    for i in range(first, first + count):
        kind = "counting" if i % 2 == 0 else "random"
        reg = anon.players.register(f"bench-{kind}-{i}-{os.getpid()}")
        bot = load_bot(os.path.join(REPO, "examples", "bots", f"{kind}_bot.py"))
        client = Client(url, reg.token)

        def run(bot: Any = bot, client: Any = client) -> None:
            stats.append(bot.run(client, ladders=["duel", "table"], stop_event=stop,
                                 poll_wait=5.0))

        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)
    print("ready", flush=True)
    while not stop.is_set():
        stop.wait(0.5)
    for t in threads:
        t.join(timeout=10)
    print(json.dumps({"finished": sum(s.matches_finished for s in stats),
                      "moves": sum(s.moves for s in stats),
                      "fallbacks": sum(s.fallbacks for s in stats)}), flush=True)
    return 0


def live(opts: argparse.Namespace, rp: RedisProcess) -> list[MatchDoc]:
    """The live run; returns the ladder matches that finished in the window."""
    from tests.support.rqproc import RqCron, RqWorker
    from tests.support.server import ApiServer

    api = ApiServer(rp.url, workers=2, env=ENV)
    worker, cron = RqWorker(rp.url, env=ENV), RqCron(rp.url, env=ENV)
    procs: list[subprocess.Popen[str]] = []
    try:
        api.start()
        worker.start()
        cron.start()
        per = -(-opts.bots // opts.procs)
        for first in range(0, opts.bots, per):
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--child", "--url", api.url,
                 "--first", str(first), "--count", str(min(per, opts.bots - first))],
                stdout=subprocess.PIPE, text=True, cwd=REPO))
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        start = time.time() + WARMUP_S
        end = start + opts.seconds
        time.sleep(start - time.time())
        groups = {"bots": [p.pid for p in procs], "api": [api.pid], "worker": [worker.pid],
                  "redis": [rp.proc.pid if rp.proc else None]}
        cpu0 = {k: sum(cpu_seconds(pid) for pid in v) for k, v in groups.items()}
        time.sleep(end - time.time())
        cpu = {k: sum(cpu_seconds(pid) for pid in v) - cpu0[k] for k, v in groups.items()}
        r = rp.client()
        ids = [m.decode() for m in r.zrange(keys.ALL_MATCHES, 0, -1)]
        docs = [matches.load(r, m) for m in ids]
        board = {lad: ladders.leaderboard(r, LadderConfig(lad, "?", 2 if lad == "duel" else 4))
                 for lad in ("duel", "table")}
        r.close()
        totals = {"finished": 0, "moves": 0, "fallbacks": 0}
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            out, _ = p.communicate(timeout=60)
            for k, v in json.loads(out.strip().splitlines()[-1]).items():
                totals[k] += v
        alive = worker.running and cron.running
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        cron.close()
        worker.close()
        api.close()
    done = [d for d in docs if d.ladder and d.status == FINISHED and d.finished_at is not None
            and start <= d.finished_at < end]
    per_min = 60.0 / opts.seconds
    print(f"# live: {opts.bots} SDK bots (half counting, half random) in {len(procs)} processes,"
          f" ladders duel (2 seats) and table (4 seats), a pass every 1 s, 2 s deadlines, "
          f"{opts.seconds:.0f} s window after {WARMUP_S:.0f} s warm-up")
    print(f"ladder matches/min: {len(done) * per_min:.1f} matches/min")
    for lad in ("duel", "table"):
        n = sum(1 for d in done if d.ladder == lad)
        print(f"{lad} matches/min: {n * per_min:.1f} matches/min")
    # how long a bot waits between the end of a ladder match and the start of its next one
    gaps: list[float] = []
    for lad in ("duel", "table"):
        last: dict[str, float] = {}
        for d in sorted((d for d in docs if d.ladder == lad), key=lambda d: d.created_at):
            for p in d.seats:
                if p in last and start <= d.created_at < end:
                    gaps.append(d.created_at - last[p])
            if d.finished_at is not None:
                for p in d.seats:
                    last[p] = d.finished_at
    print(f"idle between ladder matches p50 s: {pct(gaps, 50):.2f} s")
    print(f"idle between ladder matches p90 s: {pct(gaps, 90):.2f} s")
    games = [row["games"] for row in board["duel"]]
    if games:
        print(f"duel games per bot min/max: {min(games)}/{max(games)} games")
    timeouts = sum(row["timeouts"] for rows in board.values() for row in rows)
    print(f"ladder turn timeouts: {timeouts} turns")
    print(f"# bots: {totals['finished']} matches finished, {totals['moves']} moves, "
          f"{totals['fallbacks']} fallbacks; worker and cron alive: {alive}")
    for k, v in cpu.items():
        print(f"{k} cpu share: {v / opts.seconds * 100:.0f} % of a core")
    print(f"load average: {os.getloadavg()[0]:.1f} runnable (on {os.cpu_count()} cores)")
    return done


# --------------------------------------------------------------------------- scheduling pass


def synthetic(r: redis.Redis, lad: LadderConfig, n: int, seed: int = 1) -> list[str]:
    """``n`` entered, present bots with random records, written straight into Redis."""
    rng = random.Random(seed)
    now = time.time()
    pids = [f"p_syn{seed}x{i:06d}" for i in range(n)]
    pipe = r.pipeline(transaction=False)
    for i, pid in enumerate(pids):
        pipe.hset(keys.player(pid), mapping={"id": pid, "name": f"syn{seed}-{i}",
                                             "created_at": now})
        games = rng.randrange(200)
        seats = [games // lad.seats] * lad.seats
        seats[rng.randrange(lad.seats)] += games % lad.seats
        rec = Record(mu=rng.gauss(25, 6), sigma=rng.uniform(0.8, 8.3), games=games,
                             wins=games // 2, seats=seats, recent=rng.uniform(0, 30),
                             last_at=now - rng.uniform(0, 600),
                             last_table=[pids[rng.randrange(n)] for _ in range(lad.seats - 1)])
        pipe.hset(keys.ladder(lad.name, "players"), pid, rec.to_json())
        pipe.zadd(keys.ladder(lad.name, "entries"), {pid: now})
        pipe.zadd(keys.PRESENCE, {pid: now})
        if len(pipe) > 5000:
            pipe.execute()
    pipe.execute()
    return pids


def timed_pass(r: redis.Redis, lad: LadderConfig) -> tuple[float, int]:
    t = time.perf_counter()
    created = ladders.form_matches(r, lad, rng=random.Random(7))
    return (time.perf_counter() - t) * 1000, len(created)


def scheduling(opts: argparse.Namespace, rp: RedisProcess) -> None:
    r = rp.client()
    small = []
    for k in range(5):
        r.flushall()
        synthetic(r, DUEL, 100, seed=k)
        ms, made = timed_pass(r, DUEL)
        assert made == 50, made
        small.append(ms)
    print(f"scheduler pass ms (100 bots): {statistics.median(small):.1f} ms")
    r.flushall()
    n = opts.synthetic
    pids = synthetic(r, DUEL, n)
    raws = r.hmget(keys.ladder(DUEL.name, "players"), pids)
    recs = {p: Record.from_json(x, 2) for p, x in zip(pids, raws, strict=True)}
    t = time.perf_counter()
    tables = ladder_planner.plan_tables(DUEL, pids, recs, random.Random(3))
    plan_ms = (time.perf_counter() - t) * 1000
    assert len(tables) == n // 2
    ms, made = timed_pass(r, DUEL)
    assert made == n // 2, made
    print(f"scheduler pass ms ({n} bots): {ms:.0f} ms")
    print(f"# ({made} duels formed and written in that pass; the planning alone: "
          f"{plan_ms:.0f} ms)")
    print(f"scheduler plan ms ({n} bots): {plan_ms:.0f} ms")
    # steady state: a tenth of the bots free (the others still in their matches)
    r.flushall()
    synthetic(r, DUEL, n, seed=2)
    busy = random.Random(5).sample(range(n), n - n // 10)
    pipe = r.pipeline(transaction=False)
    for i in busy:
        pipe.hset(keys.ladder(DUEL.name, "active"), f"p_syn2x{i:06d}", 1)
    pipe.execute()
    ms, made = timed_pass(r, DUEL)
    print(f"scheduler pass ms ({n} bots, a tenth free): {ms:.0f} ms")
    r.flushall()
    r.close()


# --------------------------------------------------------------------------- rating


def rating(done: list[MatchDoc], rp: RedisProcess) -> None:
    """Time ladders.rate on fresh copies of real finished ladder matches."""
    r = rp.client()
    r.flushall()
    lads = {"duel": LadderConfig("duel", "classic", 2), "table": LadderConfig("table", "2019", 4)}
    copies = []
    for d in done[:300]:
        d.id = "m_copy" + d.id[2:]
        assert d.state is not None
        r.hset(keys.match(d.id), mapping={"v": d.version, "rs": d.state.round_start_seq,
                                          "doc": d.to_stored()})
        r.rpush(keys.match_events(d.id), *map(event_json, d.state.events))
        r.hset(keys.ladder(d.ladder, "inflight"), d.id, json.dumps(d.seats))
        copies.append(d.id)
    took = []
    for mid in copies:
        t = time.perf_counter()
        assert ladders.rate(r, mid, lads)
        took.append((time.perf_counter() - t) * 1000)
    if took:
        size = statistics.mean(len(r.hget(keys.match(m), "doc") or b"") + sum(
            map(len, r.lrange(keys.match_events(m), 0, -1))) for m in copies) / 1024
        print(f"rating update ms: {statistics.mean(took):.2f} ms")
        print(f"rating update p99 ms: {pct(took, 99):.2f} ms")
        print(f"# ({len(took)} finished ladder matches of the live run, mean document "
              f"and log {size:.0f} KiB; loading the match, placings, OpenSkill, one WATCH/MULTI)")
    else:
        print("# no finished ladder match to rate")
    r.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bots", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=60.0, help="measured live window")
    ap.add_argument("--procs", type=int, default=4, help="processes running the bots")
    ap.add_argument("--synthetic", type=int, default=10_000, help="bots of the big pass")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.child:
        return child(opts.url, opts.first, opts.count)
    with RedisProcess() as rp:
        done = live(opts, rp)
        scheduling(opts, rp)
        rating(done, rp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
