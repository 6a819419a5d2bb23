"""Memory of finished matches in Redis, before and after the archive pass (store/archive.py).

Setup: a private ``redis-server``; ``--players`` players registered through the store;
``--templates`` classic two-player matches played to their end in-process through the store's
own API (seeded random legal moves: what the API does, without HTTP), so their documents,
event logs, index entries and inbox notices are what real play writes; then each is copied
under new ids, between two players drawn at random, until the store holds ``--matches``
(20,000 by default) finished matches, each with its document, its log, its entries in the
match, status, per-player and archive indexes, all finished ``--age-days`` ago.

Then the archive pass runs as the cron job runs it (batches of ``ARCHIVE_BATCH``, 500) until
nothing is left to archive, into a temporary directory.

Prints ``name: number unit`` lines:

- ``used_memory empty/with players/before archiving/after archiving``: Redis's ``used_memory``;
- ``hot bytes/match``: (before archiving - with players) / matches: one finished match kept
  in Redis, and its key by key split (``hot document bytes/match``: the hash, with the packed
  log of a finished match; ``hot events list bytes/match``: the log's list, none once packed;
  from ``MEMORY USAGE``);
- ``archived redis bytes/match``: what stays in Redis per archived match (its index entries);
- ``archived file bytes/match``: the archive file; ``archived disk bytes/match`` with the file
  system's blocks;
- ``player bytes``: one player's records without its inbox, and ``inbox bytes/notice`` (a player's
  inbox keeps its newest 1,000 match notices, 7 days after its last match started or ended);
- ``archive pass matches/s`` (wall clock: Redis round trips and the file system, on a loaded
  machine mostly waiting) and ``archive pass cpu ms/match`` (this process's CPU).

Run: ``.venv/bin/python bench/memory.py [--matches 20000]``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service import engine  # noqa: E402
from service.store import archive, inbox, keys, matches, players  # noqa: E402
from service.store.docs import ACTIVE, FINISHED, MatchDoc  # noqa: E402
from tests.support.redis_proc import RedisProcess  # noqa: E402


def used(r: redis.Redis) -> int:
    return int(r.info("memory")["used_memory"])


def respond(doc: MatchDoc, seat: int, now: float) -> dict[str, Any]:
    return {"version": doc.version}


def play(r: redis.Redis, pids: list[str], seed: str, now: float) -> str:
    doc = matches.create(r, pids[0], {"ruleset": "classic", "seats": 2, "seed": seed,
                                      "turn_timeout_s": 86400}, now=now)
    for pid in pids:
        doc = matches.join(r, doc.id, pid, now=now)
    rng = random.Random(seed)
    while doc.status == ACTIVE:
        assert doc.state is not None
        action = rng.choice(engine.legal_action_dicts(doc.state))
        matches.act(r, doc.id, pids[doc.state.turn], action, respond=respond, now=now)
        doc = matches.load(r, doc.id)
    return doc.id


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=20_000)
    ap.add_argument("--players", type=int, default=1_000)
    ap.add_argument("--templates", type=int, default=20)
    ap.add_argument("--age-days", type=float, default=30.0)
    ap.add_argument("--batch", type=int, default=archive.DEFAULT_BATCH)
    opts = ap.parse_args()
    rng = random.Random(1)
    with RedisProcess() as rp:
        r = rp.client()
        finished_at = time.time() - opts.age_days * 86400
        tpl_players = [players.register(r, f"tpl{i}")["id"] for i in range(2)]
        templates = [play(r, tpl_players, f"mem-{i}", finished_at)
                     for i in range(opts.templates)]
        notices = sum(int(r.xlen(inbox.key(p))) for p in tpl_players)
        inbox_bytes = sum(int(r.memory_usage(inbox.key(p)) or 0) for p in tpl_players)
        split = {"document": 0, "events": 0}
        raw = []
        count = 0
        for mid in templates:
            h: dict[bytes, bytes] = {k: v for k, v in r.hgetall(keys.match(mid)).items()
                                     if isinstance(k, bytes) and isinstance(v, bytes)}
            evs = r.lrange(keys.match_events(mid), 0, -1)  # none once its log is packed
            split["document"] += int(r.memory_usage(keys.match(mid), samples=0) or 0)
            split["events"] += int(r.memory_usage(keys.match_events(mid), samples=0) or 0)
            packed = h.get(b"ev")
            if isinstance(packed, bytes):
                count += len(matches.unpack_log(packed))
            count += len(evs)
            raw.append((h, evs, MatchDoc.from_stored(h[b"doc"])))
        # the templates and their players go: what stays is the copies and their players
        r.flushall()
        empty = used(r)
        pids = [players.register(r, f"mem{i}")["id"] for i in range(opts.players)]
        with_players = used(r)
        names = {p: players.get(r, p)["name"] for p in pids}

        pipe = r.pipeline(transaction=False)
        for i in range(opts.matches):
            h, evs, doc = raw[i % len(raw)]
            seats = rng.sample(pids, 2)
            doc.id = f"m_{i:012x}"
            doc.seats, doc.names = seats, [names[p] for p in seats]
            doc.created_by = seats[0]
            at = finished_at - i
            doc.created_at, doc.finished_at = at - 600, at
            fields: dict[Any, Any] = {**h, b"doc": doc.to_stored()}
            pipe.hset(keys.match(doc.id), mapping=fields)
            if evs:
                pipe.rpush(keys.match_events(doc.id), *evs)
            pipe.zadd(keys.ALL_MATCHES, {doc.id: doc.created_at})
            pipe.zadd(keys.matches_by_status(FINISHED), {doc.id: doc.created_at})
            pipe.zadd(keys.TO_ARCHIVE, {doc.id: at})
            for p in seats:
                pipe.zadd(keys.player_matches(p), {doc.id: doc.created_at})
            if len(pipe) >= 2000:
                pipe.execute()
        pipe.execute()
        before = used(r)

        folder = tempfile.mkdtemp(prefix="llarchive-")
        try:
            arc = archive.Archive(folder)
            t0, c0 = time.perf_counter(), time.process_time()
            done = 0
            while True:
                got = archive.archive_due(r, arc, retention_s=7 * 86400, batch=opts.batch)
                done += got.archived
                if got.total() == 0:
                    break
            took, cpu = time.perf_counter() - t0, time.process_time() - c0
            after = used(r)
            files = [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs]
            file_bytes = sum(os.path.getsize(f) for f in files)
            disk_bytes = sum(os.stat(f).st_blocks * 512 for f in files)
            archive.attach(r, folder)
            sample = matches.get(r, f"m_{(opts.matches - 1):012x}", events_from=0)
            assert sample.status == FINISHED and sample.event_count > 100
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        n = opts.matches
        assert done == n, (done, n)
        lines = [
            ("used_memory empty", empty, "bytes"),
            ("used_memory with players", with_players, "bytes"),
            ("used_memory before archiving", before, "bytes"),
            ("used_memory after archiving", after, "bytes"),
            ("matches", n, "matches"),
            ("hot bytes/match", (before - with_players) / n, "bytes"),
            ("hot document bytes/match", split["document"] / len(raw), "bytes"),
            ("hot events list bytes/match", split["events"] / len(raw), "bytes"),
            ("events/match", count / len(raw), "events"),
            ("archived redis bytes/match", (after - with_players) / n, "bytes"),
            ("archived file bytes/match", file_bytes / n, "bytes"),
            ("archived disk bytes/match", disk_bytes / n, "bytes"),
            ("player bytes", (with_players - empty) / opts.players, "bytes"),
            ("inbox bytes/notice", inbox_bytes / max(1, notices), "bytes"),
            ("inbox notices/match/player", notices / len(tpl_players) / len(templates),
             "notices"),
            ("archive pass matches/s", n / took, "matches/s"),
            ("archive pass cpu ms/match", cpu * 1000 / n, "ms"),
        ]
        for name, value, unit in lines:
            print(f"{name}: {value:.1f} {unit}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
