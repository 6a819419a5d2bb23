"""How long a request waits for its answer while the data Redis stalls (issue 24, item 1).

A private redis-server and the API under gunicorn (2 gevent workers, rate limits on, so the
limiter's Redis wait is counted too) on it. The Redis is SIGSTOPped (it keeps accepting
connections and answers nothing); meanwhile several kinds of request are sent one after another
from 4 threads for ``--seconds`` (an authenticated read, an action with an Idempotency-Key, a
match list, a notice poll, ``/readyz``), every one of which must be answered ``503
service_unavailable`` with ``Retry-After``; then SIGCONT. A long-poll that was waiting when the
stall began is timed too (from the SIGSTOP to its 503).

Prints one figure a line, ``name: number unit``. Run:
``.venv/bin/python bench/stall.py [--seconds S]``. Exits 1 if any answer during the stall was
not a 503 with Retry-After, or took longer than 5 s."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any

import requests

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.support.measure import pct  # noqa: E402
from tests.support.redis_proc import RedisProcess  # noqa: E402
from tests.support.server import ApiServer  # noqa: E402
from tests.support.stall import stalled  # noqa: E402

LIMIT_S = 5.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    env = {"RATE_LIMITS": "1", "RATE_LIMIT": "100000/second"}
    with RedisProcess() as rp:
        api = ApiServer(rp.url, workers=2, env=env)
        api.start()
        try:
            http = requests.Session()
            http.trust_env = False
            me = http.post(api.url + "/v1/players", json={"name": "stall-a"}, timeout=10).json()
            other = http.post(api.url + "/v1/players", json={"name": "stall-b"},
                              timeout=10).json()
            auth = {"Authorization": f"Bearer {me['token']}"}
            mid = http.post(api.url + "/v1/matches", headers=auth, timeout=10,
                            json={"ruleset": "classic", "seats": 2}).json()["match_id"]
            http.post(f"{api.url}/v1/matches/{mid}/join", headers=auth, timeout=10)
            http.post(f"{api.url}/v1/matches/{mid}/join", timeout=10,
                      headers={"Authorization": f"Bearer {other['token']}"})
            calls: list[tuple[str, str, dict[str, Any]]] = [
                ("GET", "/v1/me", {"headers": auth}),
                ("POST", f"/v1/matches/{mid}/actions",
                 {"headers": {**auth, "Idempotency-Key": "k"},
                  "json": {"type": "play", "card": "handmaid"}}),
                ("GET", "/v1/matches?status=active", {}),
                ("GET", "/v1/me/events?wait=30", {"headers": auth}),
                ("GET", "/readyz", {}),
            ]
            times: dict[str, list[float]] = {}
            bad: list[str] = []
            lock = threading.Lock()
            stop = threading.Event()

            def run(offset: int) -> None:
                s = requests.Session()
                s.trust_env = False
                i = offset
                while not stop.is_set():
                    method, path, kw = calls[i % len(calls)]
                    i += 1
                    t0 = time.monotonic()
                    resp = s.request(method, api.url + path, timeout=60, **kw)
                    dt = time.monotonic() - t0
                    with lock:
                        times.setdefault(path.split("?")[0].split("/")[-1] or path, []).append(dt)
                        if resp.status_code != 503 or "Retry-After" not in resp.headers \
                                or dt > LIMIT_S:
                            bad.append(f"{method} {path}: {resp.status_code} in {dt:.2f} s")

            waiting: list[float] = []
            cursor = http.get(api.url + "/v1/me/events?wait=0", headers=auth,
                              timeout=10).json()["cursor"]

            def long_poll() -> None:
                s = requests.Session()
                s.trust_env = False
                resp = s.get(f"{api.url}/v1/me/events?wait=30&after={cursor}", headers=auth,
                             timeout=60)
                waiting.append(time.monotonic())
                if resp.status_code != 503:
                    bad.append(f"waiting long-poll: {resp.status_code}")

            poller = threading.Thread(target=long_poll)
            poller.start()
            time.sleep(1.0)
            with stalled(rp):
                t_stop = time.monotonic()
                threads = [threading.Thread(target=run, args=(k,)) for k in range(args.threads)]
                for t in threads:
                    t.start()
                time.sleep(args.seconds)
                stop.set()
                for t in threads:
                    t.join()
                poller.join(timeout=30)
        finally:
            api.close()
    every = [x for v in times.values() for x in v]
    print(f"stall_answers: {len(every)} requests")
    print(f"stall_answer_p50: {pct(every, 50) * 1000:.0f} ms")
    print(f"stall_answer_p99: {pct(every, 99) * 1000:.0f} ms")
    print(f"stall_answer_max: {max(every) * 1000:.0f} ms")
    for name, v in sorted(times.items()):
        print(f"stall_answer_max_{name.replace('-', '_')}: {max(v) * 1000:.0f} ms")
    if waiting:
        print(f"stall_waiting_longpoll_answer: {(waiting[0] - t_stop) * 1000:.0f} ms")
    for line in bad[:10]:
        print(f"# not as expected: {line}", file=sys.stderr)
    return 1 if bad or not waiting else 0


if __name__ == "__main__":
    sys.exit(main())
