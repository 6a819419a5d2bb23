"""What a notice read costs since the inbox keeps challenge notices in a stream of their own
(issue 23): the read (``store/inbox.py``) runs one script over both streams (two XRANGEs, the
server's time, and the trim check) where it was one XRANGE. A private redis-server, one
client, ``--reads`` reads of each kind, alternating before/after in ``--pairs`` pairs:

- ``empty``: the cursor is the newest notice (a caught-up long-poll looking again);
- ``two_new``: two notices after the cursor (a bot told it is its turn).

Prints one figure a line, ``name: number unit`` (microseconds of wall time per read, client and
server on one machine; compare the pairs, not the numbers across machines). Run:
``.venv/bin/python bench/inbox.py [--reads N] [--pairs P]``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import orjson  # noqa: E402
import redis  # noqa: E402

from service.store import inbox, replies  # noqa: E402
from tests.support.redis_proc import RedisProcess  # noqa: E402

PID = "p_00000000be7c"


def read_before(r: redis.Redis, after: str, count: int = 100) -> tuple[list[Any], str]:
    """The read as it was: one XRANGE of the one stream."""
    out = []
    cursor = after
    for entry_id, fields in r.xrange(inbox.key(PID), min=f"({after}", max="+", count=count):
        cursor = replies.text(entry_id)
        notice = orjson.loads(fields[b"n"])
        notice["cursor"] = cursor
        out.append(notice)
    return out, cursor


def per_read_us(fn: Any, n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reads", type=int, default=3000)
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    with RedisProcess() as rp:
        r = rp.client()
        for i in range(50):
            r.xadd(inbox.key(PID), {"n": orjson.dumps({"type": "your_turn", "match_id": "m_x",
                                                       "version": i})})
        time.sleep(0.01)  # (no entry of the current millisecond: nothing held back)
        ids = [replies.text(e[0]) for e in r.xrange(inbox.key(PID))]
        cases = {"empty": ids[-1], "two_new": ids[-3]}
        for after in cases.values():  # the same answers
            assert inbox.read(r, PID, after)[0] == read_before(r, after)[0]
        for pair in range(args.pairs):
            for name, after in cases.items():
                before = per_read_us(lambda a=after: read_before(r, a), args.reads)
                now = per_read_us(lambda a=after: inbox.read(r, PID, a), args.reads)
                print(f"inbox_read_{name}_before_{pair}: {before:.1f} us")
                print(f"inbox_read_{name}_after_{pair}: {now:.1f} us")
        r.close()


if __name__ == "__main__":
    main()
