"""The API's own CPU per action, in process: where an action's time goes, without gunicorn,
gevent or a client competing for the CPUs.

Run: ``.venv/bin/python bench/hotpath.py [--actions 1500] [--rounds 3] [--store single]
[--against DIR] [--profile N]``.

Each measurement is a child process that starts a private Redis (``--store single``) or a
3-master Redis Cluster with RQ on a Redis of its own (``cluster-3``), builds the app
(``create_app``, ``RATE_LIMITS=0``, ``EXPECT_WORKERS=0``, the request log on and thrown away),
creates classic 2-player matches through Flask's test client and plays ``--actions`` actions
on them, one ``POST /v1/matches/{id}/actions`` each (as bench/api.py: no ``Idempotency-Key``
or ``If-Match``), 8 matches in turn, in lockstep with a local replay of the engine (as bench/api.py: the local
replay picks each action and is not timed; every answer is checked against it). It reports the
process's CPU time inside the requests per action (``api cpu ms/action``) and the Redis
servers' CPU per action (``INFO cpu``, ``redis cpu ms/action``).

With ``--against DIR`` every round measures this checkout and then the checkout ``DIR`` (a
``git worktree`` of an older commit, say), alternating, so that both see the same machine;
``# pair`` lines show each round and the ratio lines the medians. ``--profile N`` prints the
N most expensive functions (cProfile, cumulative) of one run of this checkout instead.

Prints one figure a line, ``name: number unit``: ``S api cpu ms/action`` and ``S redis cpu
ms/action`` (the median over the rounds; S the store), with ``against`` versions and
``S api cpu this/against`` under ``--against``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(opts: argparse.Namespace) -> None:
    """One measurement, with the code of ``opts.tree`` (first on sys.path)."""
    sys.path.insert(0, opts.tree)
    os.chdir(opts.tree)
    import random

    from service import engine
    from tests.support.redis_proc import RedisProcess

    if opts.store == "single":
        stack: Any = RedisProcess()
    else:
        from tests.support.redis_cluster import ClusterStack
        stack = ClusterStack(masters=3)
    with stack:
        os.environ.update({"REDIS_URL": stack.url, "RATE_LIMITS": "0", "EXPECT_WORKERS": "0",
                           "ENQUEUE_JOBS": "0", "LADDERS": "[]"})
        if opts.store != "single":
            os.environ["QUEUE_REDIS_URL"] = stack.queue_url
        from service.http.app import create_app
        app = create_app()
        c = app.test_client()

        def call(method: str, path: str, body: Any = None, token: str | None = None,
                 headers: dict[str, str] | None = None) -> Any:
            h = dict(headers or {})
            if token:
                h["Authorization"] = f"Bearer {token}"
            resp = c.open(path, method=method, json=body, headers=h)
            if resp.status_code >= 300:
                raise RuntimeError(f"{method} {path} -> {resp.status_code}: {resp.data[:300]!r}")
            return resp.get_json()

        tokens = [call("POST", "/v1/players", {"name": f"hp{s}"})["token"] for s in (0, 1)]
        rng = random.Random(7)
        opts_m = {"ruleset": "classic", "seats": 2, "turn_timeout_s": 86400}

        def new_match(k: int) -> tuple[str, Any, int]:
            seed = f"hot-{k}"
            mid = call("POST", "/v1/matches", {**opts_m, "seed": seed}, tokens[0])["match_id"]
            call("POST", f"/v1/matches/{mid}/join", token=tokens[0])
            v = call("POST", f"/v1/matches/{mid}/join", token=tokens[1])["version"]
            return mid, engine.new_match("classic", 2, seed=seed), v

        clients = [new_match(k) for k in range(8)]  # 8 matches in turn, as 8 bots would
        made = len(clients)
        redis_pids = _redis_clients(stack)

        def redis_cpu() -> float:
            total = 0.0
            for rc in redis_pids:
                info = rc.info("cpu")
                total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
            return total

        prof = None
        if opts.profile:
            import cProfile
            prof = cProfile.Profile(time.process_time)  # CPU time: the machine is shared
        spent = 0.0
        r0 = redis_cpu()
        done = 0
        i = 0
        while done < opts.actions:
            mid, state, version = clients[i % len(clients)]
            seat = state.turn
            action = rng.choice(engine.legal_action_dicts(state))
            t0 = time.process_time()
            if prof is not None:
                prof.enable()
            view = call("POST", f"/v1/matches/{mid}/actions", action, tokens[seat])
            if prof is not None:
                prof.disable()
            spent += time.process_time() - t0
            engine.apply_inplace(state, action, seat=seat)
            version += 1
            if view["version"] != version or view["status"] != state.status:
                raise RuntimeError(f"{mid}: server at {view['version']}, replay at {version}")
            done += 1
            if state.status == engine.FINISHED:
                clients[i % len(clients)] = new_match(made)
                made += 1
            else:
                clients[i % len(clients)] = (mid, state, version)
            i += 1
        r1 = redis_cpu()
        for rc in redis_pids:
            rc.close()
        if prof is not None:
            import pstats
            st = pstats.Stats(prof, stream=sys.stderr)
            st.sort_stats("cumulative").print_stats(opts.profile)
            st.sort_stats("tottime").print_stats(opts.profile)
            st.sort_stats("tottime").print_stats("service/", opts.profile)
        print(json.dumps({"api_ms": spent / done * 1000, "redis_ms": (r1 - r0) / done * 1000}))


def _redis_clients(stack: Any) -> list[Any]:
    """A plain client per Redis server of the stack (each master, and RQ's Redis)."""
    import redis
    if hasattr(stack, "cluster"):
        out = [redis.Redis(host="127.0.0.1", port=p) for p in stack.cluster.ports]
        return [*out, stack.queue.client()]
    return [stack.client()]


def measure(tree: str, opts: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--tree", tree,
           "--store", opts.store, "--actions", str(opts.actions)]
    if opts.profile:
        cmd += ["--profile", str(opts.profile)]
    env = {**os.environ, "LOG_LEVEL": "warning"}
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{tree}: {out.stderr[-3000:]}")
    if opts.profile:
        print(out.stderr, file=sys.stderr)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(description="the API's CPU per action, in process")
    ap.add_argument("--actions", type=int, default=1500, help="actions per run (1500)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each checkout (3)")
    ap.add_argument("--store", choices=("single", "cluster-3"), default="single")
    ap.add_argument("--against", metavar="DIR", help="another checkout, measured alternately")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="print the N costliest functions of one run (cProfile) and stop")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=REPO, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.child:
        child(opts)
        return 0
    if opts.profile:
        got = measure(REPO, opts)
        print(f"{opts.store} api cpu ms/action: {got['api_ms']:.3f} ms (profiled)")
        return 0
    trees = [REPO] + ([os.path.abspath(opts.against)] if opts.against else [])
    runs: dict[str, list[dict[str, float]]] = {t: [] for t in trees}
    print(f"# {opts.actions} actions per run, {opts.rounds} rounds, store {opts.store}",
          flush=True)
    for k in range(opts.rounds):
        order = trees if k % 2 == 0 else trees[::-1]
        got = {t: measure(t, opts) for t in order}
        for t in trees:
            runs[t].append(got[t])
        if opts.against:
            a, b = got[trees[0]]["api_ms"], got[trees[1]]["api_ms"]
            print(f"# pair {k + 1}: api {a:.3f} ms this checkout, {b:.3f} against "
                  f"({100 * (a / b - 1):+.1f} %)", flush=True)
    s = opts.store
    med = {t: {f: statistics.median(x[f] for x in runs[t]) for f in ("api_ms", "redis_ms")}
           for t in trees}
    print(f"{s} api cpu ms/action: {med[REPO]['api_ms']:.3f} ms")
    print(f"{s} redis cpu ms/action: {med[REPO]['redis_ms']:.3f} ms")
    if opts.against:
        o = med[trees[1]]
        print(f"# against: {trees[1]}")
        print(f"{s} api cpu ms/action against: {o['api_ms']:.3f} ms")
        print(f"{s} redis cpu ms/action against: {o['redis_ms']:.3f} ms")
        print(f"{s} api cpu this/against: {med[REPO]['api_ms'] / o['api_ms']:.2f} x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
