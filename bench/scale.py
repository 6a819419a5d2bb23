"""Scale: the same load on a single Redis, a 1-master and a 3-master Redis Cluster.

Run: ``.venv/bin/python bench/scale.py [--apis 2] [--workers 1] [--clients 24] [--seconds 8]``
(``make bench`` runs it with the defaults).

For each data store in turn (``single``: one redis-server; ``cluster-1`` / ``cluster-3``: a
private Redis Cluster of 1 or 3 masters, tests/support/redis_cluster.py, with RQ on a single
Redis of its own, ``QUEUE_REDIS_URL``) it starts the service as it runs in production, ``--apis``
gunicorn (gevent) worker processes and ``--workers`` worker processes (``python -m
service.jobs.worker``: a deadline index entry for every turn; one-day turns, so no job runs), and ``--clients``
client threads that each play whole classic 2-player matches over HTTP, one POST per action,
in lockstep with a local replay of the engine (as bench/api.py: same seed, same actions; every
answer is checked against the replay). Everything runs on this machine: clients, API, workers
and every Redis share its CPUs, so the 3 masters are not 3 machines; the per-action costs
(commands, bytes, CPU) are what carries over to a real deployment, the rates are this machine's.

Prints one figure a line, ``name: number unit``, for each store S:

- ``S actions/s``, ``S action p50 ms``, ``S action p99 ms``: client-side, over the measured
  seconds after a warm-up;
- ``S data commands/action``: commands the data Redis (every master) ran, from ``INFO
  commandstats`` before and after, per action applied; ``S queue commands/action`` the same on
  RQ's Redis (on ``single`` the two are one server: all of it is counted as data);
- ``S data bytes/action``: network bytes in + out of the data Redis per action;
- ``S server cpu ms/action``: CPU time of the gunicorn workers and every Redis per action
  (the figure to compare across stores on a loaded machine), split into ``S api cpu
  ms/action`` and ``S redis cpu ms/action`` (every data master and RQ's Redis);
- ``S stored bytes/match``: the data Redis's used memory (less an empty store's, and less the
  clients' buffers and Lua scripts, which grow with connections, not data) per match created
  (documents, event logs, indexes, inbox notices, RQ's jobs on ``single``; idempotency
  records: none here); ``S key bytes/match``, the sum of ``MEMORY USAGE`` of every key at the
  end per match created (the keys themselves: the gap to ``stored bytes/match`` is what Redis
  allocated besides, which a short run on a 3-master cluster makes large); and ``S matches
  played`` (finished in the measured seconds). With
  ``--keys``, ``# S <key pattern>: N bytes/match`` lines split it by key (``MEMORY USAGE``).

Background load (the workers' clock ticks, 5 a second each) is counted too: it is small next
to the actions (a few hundred commands a second against thousands).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from service import engine  # noqa: E402
from tests.support.keepalive import KeepAlive  # noqa: E402
from tests.support.redis_cluster import ClusterStack  # noqa: E402
from tests.support.redis_proc import RedisProcess  # noqa: E402
from tests.support.rqproc import RqWorker  # noqa: E402
from tests.support.server import ApiServer  # noqa: E402

MATCH_OPTIONS = {"ruleset": "classic", "seats": 2, "turn_timeout_s": 86400}
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# --------------------------------------------------------------------------- measuring


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
        except (OSError, IndexError, ValueError):
            pass
    return total


def node_clients(store: RedisProcess | ClusterStack) -> tuple[list[redis.Redis], redis.Redis]:
    """Plain clients to every data node, and to RQ's Redis."""
    if isinstance(store, ClusterStack):
        return [store.cluster.node(p) for p in store.cluster.ports], store.queue.client()
    return [store.client()], store.client()


def commands(nodes: list[redis.Redis]) -> int:
    return sum(int(v["calls"]) for n in nodes for v in n.info("commandstats").values())


def net_bytes(nodes: list[redis.Redis]) -> int:
    return sum(int(n.info("stats")["total_net_input_bytes"])
               + int(n.info("stats")["total_net_output_bytes"]) for n in nodes)


def used_memory(nodes: list[redis.Redis]) -> int:
    return sum(int(n.info("memory")["used_memory"]) for n in nodes)


def memory_fields(nodes: list[redis.Redis]) -> dict[str, int]:
    """The numeric fields of ``INFO memory`` and ``MEMORY STATS`` in bytes, summed over the
    nodes."""
    out: dict[str, int] = {}
    for n in nodes:
        stats = n.memory_stats()
        flat = {f"stats.{k}": v for k, v in stats.items()}
        for k, v in stats.items():
            if isinstance(v, dict):
                flat.update({f"stats.{k}.{k2}": v2 for k2, v2 in v.items()})
        for k, v in [*n.info("memory").items(), *flat.items()]:
            if isinstance(v, int) and not k.endswith(("_human", "_perc")) and "ratio" not in k \
                    and k not in ("total_system_memory", "maxmemory", "used_memory_peak",
                                  "used_memory_rss", "allocator_resident", "allocator_active",
                                  "allocator_allocated", "used_memory_peak_time"):
                out[k] = out.get(k, 0) + v
    return out


def stored_memory(nodes: list[redis.Redis]) -> int:
    """``used_memory`` less what grows with connections, not with data: the clients' buffers
    (``mem_clients_normal``: 16 client threads keep the API's pools busy) and the cached Lua
    scripts (``used_memory_scripts``, a fixed few KB once loaded)."""
    total = 0
    for n in nodes:
        m = n.info("memory")
        total += (int(m["used_memory"]) - int(m.get("mem_clients_normal", 0))
                  - int(m.get("used_memory_scripts", 0)))
    return total


_ID_PARTS = re.compile(r"(?<=[_{:])[0-9a-f]{12,64}|(?<=[:-])[0-9]+(?=$|[:}-])")


def key_bytes(nodes: list[redis.Redis]) -> dict[str, tuple[int, int]]:
    """``MEMORY USAGE`` of every key, summed by its pattern (ids and numbers replaced by ``*``):
    pattern -> (keys, bytes). What ``stored bytes/match`` is made of (``--keys``)."""
    out: dict[str, tuple[int, int]] = {}
    for n in nodes:
        names = list(n.scan_iter(count=1000))
        pipe = n.pipeline(transaction=False)
        for k in names:
            pipe.memory_usage(k, samples=0)
        for k, size in zip(names, pipe.execute(), strict=True):
            pat = _ID_PARTS.sub("*", k.decode(errors="replace"))
            count, total = out.get(pat, (0, 0))
            out[pat] = (count + 1, total + int(size or 0))
    return out


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * p / 100))] * 1000


# --------------------------------------------------------------------------- the load


class Load:
    """Client threads playing matches in lockstep with a local replay until ``stop``."""

    def __init__(self, port: int, clients: int, tag: str) -> None:
        self.port, self.clients, self.tag = port, clients, tag
        self.lats: list[list[tuple[float, float]]] = [[] for _ in range(clients)]
        self.matches = 0
        self.errors: list[BaseException] = []
        self.ready = threading.Barrier(clients + 1)
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run_thread(self, i: int) -> None:
        try:
            self._play(i)
        except BaseException as e:  # reported by the caller
            self.errors.append(e)
            self.ready.abort()

    def _new_match(self, c: KeepAlive, tokens: list[str], seed: str) -> tuple[str, Any, int]:
        created = c.ok("POST", "/v1/matches", {**MATCH_OPTIONS, "seed": seed}, tokens[0])
        mid = created["match_id"]
        c.ok("POST", f"/v1/matches/{mid}/join", token=tokens[0])
        view = c.ok("POST", f"/v1/matches/{mid}/join", token=tokens[1])
        with self.lock:
            self.matches += 1
        state = engine.new_match("classic", 2, seed=seed)
        return mid, state, int(view["version"])

    def _play(self, i: int) -> None:
        c = KeepAlive(self.port, timeout=60)
        rng = random.Random(i)
        name = f"s{self.tag}x{i}"
        tokens = [c.ok("POST", "/v1/players", {"name": f"{name}s{s}"})["token"] for s in (0, 1)]
        made = 1
        mid, state, version = self._new_match(c, tokens, f"{name}-1")
        self.ready.wait(timeout=120)
        while not self.stop.is_set():
            seat = state.turn
            action = rng.choice(engine.legal_action_dicts(state))
            t0 = time.perf_counter()
            status, view = c.call("POST", f"/v1/matches/{mid}/actions", action, tokens[seat])
            t1 = time.perf_counter()
            if status != 200:
                raise RuntimeError(f"action {action} in {mid} -> {status}: {view}")
            engine.apply_inplace(state, action, seat=seat)
            version += 1
            if view["version"] != version or view["status"] != state.status:
                raise RuntimeError(f"{mid}: server {view['version']}/{view['status']}, "
                                   f"replay {version}/{state.status}")
            self.lats[i].append((t0, t1 - t0))
            if state.status == engine.FINISHED:
                made += 1
                mid, state, version = self._new_match(c, tokens, f"{name}-{made}")
        c.close()


@contextmanager
def stack(kind: str, apis: int, workers: int) -> Iterator[tuple[Any, ApiServer]]:
    store: RedisProcess | ClusterStack
    store = RedisProcess() if kind == "single" else ClusterStack(masters=int(kind[-1]))
    with store:
        env = {**store.env, "EXPECT_WORKERS": "1", "RATE_LIMITS": "0", "LOG_LEVEL": "warning",
               "REQUEST_LOG": "0"}
        api = ApiServer(store.url, workers=apis, env=env)
        procs = [RqWorker(store.url, env={**store.env, "LADDERS": "[]"})
                 for _ in range(workers)]
        try:
            api.start()
            for p in procs:
                p.start()
            yield store, api
            log = api.log_text()
            if "Traceback" in log:
                raise RuntimeError(f"the API logged an error:\n{log[-4000:]}")
        finally:
            for p in procs:
                p.stop()
                p.close()
            api.close()


def measure(kind: str, opts: argparse.Namespace) -> dict[str, float]:
    with stack(kind, opts.apis, opts.workers) as (store, api):
        data, queue = node_clients(store)
        mem0 = stored_memory(data)  # an empty store's own memory, left out of bytes/match
        info0 = memory_fields(data)
        used0 = used_memory(data)
        load = Load(api.port, opts.clients, f"{kind[0]}{kind[-1]}{os.getpid() % 1000}")
        threads = [threading.Thread(target=load.run_thread, args=(i,), daemon=True)
                   for i in range(opts.clients)]
        for t in threads:
            t.start()
        load.ready.wait(timeout=180)
        time.sleep(opts.warmup)
        one = isinstance(store, RedisProcess)
        assert api.proc is not None
        api_pids = [*_children(api.proc.pid)]
        if isinstance(store, ClusterStack):
            redis_pids = [p.pid for p in store.cluster.procs.values()]
            assert store.queue.proc is not None
            redis_pids.append(store.queue.proc.pid)
        else:
            assert store.proc is not None
            redis_pids = [store.proc.pid]
        c0, q0, b0 = commands(data), 0 if one else commands([queue]), net_bytes(data)
        api0, redis0 = cpu_seconds(api_pids), cpu_seconds(redis_pids)
        matches0 = load.matches
        t0 = time.perf_counter()
        time.sleep(opts.seconds)
        t1 = time.perf_counter()
        c1, q1, b1 = commands(data), 0 if one else commands([queue]), net_bytes(data)
        api1, redis1 = cpu_seconds(api_pids), cpu_seconds(redis_pids)
        load.stop.set()
        for t in threads:
            t.join(timeout=60)
        if load.errors:
            raise load.errors[0]
        lats = [d for per in load.lats for (start, d) in per if t0 <= start and start + d <= t1]
        # actions applied in the window (answered 200 inside it), as the clients counted them
        applied = sum(1 for per in load.lats for (start, d) in per if t0 <= start + d <= t1)
        mem = stored_memory(data) - mem0
        keys_total = sum(total for _, total in key_bytes(data).values())
        grown = (used_memory(data) - used0) / max(1, load.matches)
        print(f"# {kind} used_memory growth: {grown:.0f} bytes/match created, connections' "
              "buffers and scripts included", flush=True)
        if opts.keys:
            made = max(1, load.matches)
            info1 = memory_fields(data)
            grew = sorted(((k, info1[k] - info0.get(k, 0)) for k in info1),
                          key=lambda kv: -abs(kv[1]))
            for k, d in grew[:16]:
                print(f"# {kind} INFO memory {k}: {d / made:+.0f} bytes/match", flush=True)
            by_key = sorted(key_bytes(data).items(), key=lambda kv: -kv[1][1])
            for pat, (count, total) in by_key[:25]:
                print(f"# {kind} {pat}: {total / made:.0f} bytes/match ({count} keys)",
                      flush=True)
        return {
            "actions/s": applied / (t1 - t0),
            "action p50 ms": pct(lats, 50),
            "action p99 ms": pct(lats, 99),
            "data commands/action": (c1 - c0) / applied,
            "queue commands/action": (q1 - q0) / applied,
            "data bytes/action": (b1 - b0) / applied,
            "server cpu ms/action": (api1 - api0 + redis1 - redis0) * 1000 / applied,
            "api cpu ms/action": (api1 - api0) * 1000 / applied,
            "redis cpu ms/action": (redis1 - redis0) * 1000 / applied,
            "stored bytes/match": mem / max(1, load.matches),
            "key bytes/match": keys_total / max(1, load.matches),
            "matches played": float(load.matches - matches0),
        }


UNITS = {"actions/s": "actions/s", "matches played": "matches", "stored bytes/match": "bytes",
         "key bytes/match": "bytes",
         "data bytes/action": "bytes"}


def main() -> int:
    ap = argparse.ArgumentParser(description="the same load on 1 Redis, 1 and 3 cluster masters")
    ap.add_argument("--apis", type=int, default=2, help="gunicorn worker processes (2)")
    ap.add_argument("--workers", type=int, default=1, help="worker processes (1)")
    ap.add_argument("--clients", type=int, default=24, help="client threads (24)")
    ap.add_argument("--seconds", type=float, default=8.0, help="measured seconds per store (8)")
    ap.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds (2)")
    ap.add_argument("--stores", default="single,cluster-1,cluster-3",
                    help="which stores, in order (single,cluster-1,cluster-3)")
    ap.add_argument("--keys", action="store_true",
                    help="also print the stored bytes per match of each key pattern")
    opts = ap.parse_args()
    print(f"# {opts.apis} API processes, {opts.workers} deadline workers, {opts.clients} client "
          f"threads, {opts.seconds:g} s measured per store after {opts.warmup:g} s; "
          f"{os.cpu_count()} CPUs shared by everything", flush=True)
    results = {}
    for kind in opts.stores.split(","):
        results[kind] = r = measure(kind, opts)
        for name, value in r.items():
            unit = UNITS.get(name, "ms" if "ms" in name.replace("/", " ").split() else "commands")
            print(f"{kind} {name}: {value:.2f} {unit}", flush=True)
    if "cluster-1" in results and "cluster-3" in results:
        a, b = results["cluster-1"], results["cluster-3"]
        print(f"# cluster-3 / cluster-1: actions/s x{b['actions/s'] / a['actions/s']:.2f}, "
              f"server cpu/action x{b['server cpu ms/action'] / a['server cpu ms/action']:.2f}")
    if "single" in results and "cluster-3" in results:
        a, b = results["single"], results["cluster-3"]
        print(f"# cluster-3 / single: data commands/action "
              f"x{b['data commands/action'] / a['data commands/action']:.2f}, server cpu/action "
              f"x{b['server cpu ms/action'] / a['server cpu ms/action']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
