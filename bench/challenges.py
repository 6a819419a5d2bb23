"""Challenge benchmark: what starting a match by challenge costs, beside the create-and-join path.

Run: ``make bench``, or ``.venv/bin/python bench/challenges.py [--n 200] [--bot-n 30]``.

Setup: a private ``redis-server`` and the app under gunicorn (``service/ops/gunicorn_conf.py``, two
workers, ``RATE_LIMITS=0``, ``EXPECT_WORKERS=0``), one client process with keep-alive sessions.

1. Side by side, interleaved on the same server, ``--n`` two-player classic matches started each
   way by two players who answer at once: a challenge (``POST /v1/challenges`` then the
   opponent's ``POST .../accept``, which creates and starts the match) and the older path
   (``POST /v1/matches``, then two ``POST .../join``). ``start ms`` is the wall time of the
   requests of one start; each match is resigned afterwards (untimed).
2. ``--bot-n`` challenges to an SDK bot running ``Bot.run`` (long-polling its notices, 25 s
   waits): ``bot accept ms`` runs from just before the challenge's POST to the moment the
   challenger's own long-poll of ``/v1/me/events`` hands it the ``challenge_update`` with the
   match id (so it includes both wake-ups), and ``bot requests per challenge`` counts the bot's
   HTTP requests per answered challenge (its notice poll, the accept, its view of the match).

Prints one figure a line, ``name: number unit``; comment lines start with ``#``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import threading
import time
from typing import Any

import requests

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from llsdk import Action, Bot, Client, View  # noqa: E402

from tests.support.redis_proc import RedisProcess  # noqa: E402
from tests.support.server import ApiServer  # noqa: E402


class FirstLegal(Bot):
    def choose(self, view: View) -> Action:
        return view.legal_actions[0]


class Http:
    def __init__(self, url: str) -> None:
        self.url = url
        self.s = requests.Session()
        self.s.trust_env = False

    def call(self, method: str, path: str, token: str | None = None, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        r = self.s.request(method, self.url + path, headers=headers, timeout=60, **kw)
        if r.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {r.status_code} {r.text[:300]}")
        return r.json() if r.content else None

    def register(self, prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = self.call("POST", "/v1/players",
                                        json={"name": f"{prefix}-{secrets.token_hex(5)}"})
        return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def side_by_side(http: Http, n: int) -> None:
    a, b = http.register("bench-a"), http.register("bench-b")
    by_challenge: list[float] = []
    by_join: list[float] = []
    opts = {"ruleset": "classic", "turn_timeout_s": 86400}
    for _ in range(n):
        t0 = time.perf_counter()
        ch = http.call("POST", "/v1/challenges", a["token"], json={"opponents": [b["id"]], **opts})
        done = http.call("POST", f"/v1/challenges/{ch['challenge_id']}/accept", b["token"])
        by_challenge.append((time.perf_counter() - t0) * 1000)
        assert done["match_id"], done
        http.call("POST", f"/v1/matches/{done['match_id']}/resign", a["token"])

        t0 = time.perf_counter()
        m = http.call("POST", "/v1/matches", a["token"], json={"seats": 2, **opts})
        http.call("POST", f"/v1/matches/{m['match_id']}/join", a["token"])
        http.call("POST", f"/v1/matches/{m['match_id']}/join", b["token"])
        by_join.append((time.perf_counter() - t0) * 1000)
        http.call("POST", f"/v1/matches/{m['match_id']}/resign", a["token"])
    for name, xs in (("challenge", by_challenge), ("create+join", by_join)):
        print(f"{name} start p50: {statistics.median(xs):.2f} ms")
        print(f"{name} start p95: {pct(xs, 0.95):.2f} ms")


def with_bot(url: str, http: Http, n: int) -> None:
    bot_player = http.register("bench-bot")
    counted = {"requests": 0}
    bot_client = Client(url, bot_player["token"])

    def count(resp: requests.Response, *args: Any, **kw: Any) -> None:
        counted["requests"] += 1

    bot_client.session.hooks["response"].append(count)
    stop = threading.Event()
    runner = threading.Thread(target=FirstLegal().run, args=(bot_client,), daemon=True,
                              kwargs={"stop_event": stop, "poll_wait": 25})
    runner.start()
    me = http.register("bench-challenger")
    cursor = http.call("GET", "/v1/me/events", me["token"])["cursor"]
    time.sleep(1.0)  # the bot is polling
    lat: list[float] = []
    before = counted["requests"]
    for _ in range(n):
        t0 = time.perf_counter()
        ch = http.call("POST", "/v1/challenges", me["token"],
                       json={"opponents": [bot_player["id"]], "turn_timeout_s": 86400})
        mid = None
        while mid is None:
            got = http.call("GET", "/v1/me/events", me["token"],
                            params={"after": cursor, "wait": 20})
            cursor = got["cursor"]
            for notice in got["events"]:
                if notice.get("challenge_id") == ch["challenge_id"] and notice.get("match_id"):
                    mid = notice["match_id"]
        lat.append((time.perf_counter() - t0) * 1000)
        for _ in range(20):  # the bot may be moving at the same moment: read, try again
            try:
                http.call("POST", f"/v1/matches/{mid}/resign", me["token"])
                break
            except RuntimeError as e:
                if "version_conflict" not in str(e) and "not_your_turn" not in str(e):
                    raise
    time.sleep(0.5)  # the bot reads the end of the last match
    per = (counted["requests"] - before) / n
    stop.set()
    runner.join(30)
    print(f"bot accept p50: {statistics.median(lat):.2f} ms")
    print(f"bot accept p95: {pct(lat, 0.95):.2f} ms")
    print(f"bot requests per challenge: {per:.2f} requests")
    print("# (per challenge the bot also reads the match's end: its view after the resignation)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--bot-n", type=int, default=30)
    args = ap.parse_args()
    with RedisProcess() as redis_proc:
        server = ApiServer(redis_proc.url, workers=2)
        server.start()
        try:
            http = Http(server.url)
            side_by_side(http, args.n)
            with_bot(server.url, http, args.bot_n)
        finally:
            server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
