"""Backup and restore time for a filled store (service/ops/backup.py).

Setup: a private ``redis-server``; one classic two-player match is played to its end through
the real API (gunicorn), then its document is copied under ``--matches`` new ids (5,000 by
default), with two player records each, so the store holds that many finished matches of real
size. Then ``backup`` (SCAN + DUMP + PTTL into a gzip file) and ``restore`` (RESTORE into a
fresh ``redis-server``) are timed, end to end, as ``python -m service.ops.backup`` runs them.

Prints ``name: number unit`` lines. Run: ``.venv/bin/python bench/backup.py [--matches N]``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.ops import backup  # noqa: E402
from service.store import keys  # noqa: E402
from tests.support.apiclient import NO_TIMEOUTS, Api, play_randomly  # noqa: E402
from tests.support.redis_proc import RedisProcess  # noqa: E402
from tests.support.server import ApiServer  # noqa: E402


def fill(rp: RedisProcess, n: int) -> None:
    r = rp.client()
    with ApiServer(rp.url) as srv:
        api = Api(srv.url)
        mid, players, joins = api.new_match(2, prefix="bb", ruleset="classic", seed="bb",
                                            **NO_TIMEOUTS)
        play_randomly(api, mid, players, random.Random("bb"), joins[-1])
        api.close()
    doc = r.dump(keys.match(mid))
    player = r.dump(keys.player(players[0].id))
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.restore(keys.match(f"m_{i:012x}"), 0, doc, replace=True)
        pipe.restore(keys.player(f"p_{2 * i:012x}"), 0, player, replace=True)
        pipe.restore(keys.player(f"p_{2 * i + 1:012x}"), 0, player, replace=True)
        pipe.zadd(keys.ALL_MATCHES, {f"m_{i:012x}": i})
        if i % 500 == 499:
            pipe.execute()
    pipe.execute()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=5000)
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="llbackup-bench-"))
    try:
        with RedisProcess() as src:
            fill(src, opts.matches)
            r = src.client()
            used = int(r.info("memory")["used_memory"])
            nkeys = int(r.dbsize())
            t0 = time.perf_counter()
            folder = backup.backup(backup.nodes(src.url), tmp)
            took = time.perf_counter() - t0
            size = sum(f.stat().st_size for f in folder.iterdir())
        with RedisProcess() as dst:
            t0 = time.perf_counter()
            counts = backup.restore(folder, dst.client())
            back = time.perf_counter() - t0
            assert counts["data"] == nkeys, (counts, nkeys)
        print(f"matches: {opts.matches} finished")
        print(f"keys: {nkeys} keys")
        print(f"redis_used_memory: {used / 1e6:.1f} MB")
        print(f"backup_time: {took:.2f} s")
        print(f"backup_rate: {used / 1e6 / took:.1f} MB/s of Redis memory")
        print(f"backup_file: {size / 1e6:.1f} MB")
        print(f"restore_time: {back:.2f} s")
        print(f"restore_rate: {used / 1e6 / back:.1f} MB/s of Redis memory")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
