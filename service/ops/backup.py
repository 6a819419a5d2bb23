"""Backups you can restore: ``python -m service.ops.backup [backup] [--dir DIR]`` and
``python -m service.ops.backup restore DIR/<stamp> [--replace]`` (``make backup``).

A backup is a folder ``<BACKUP_DIR>/<UTC time>/`` (``backups/`` by default) with one file per
Redis node holding data, ``<node>.llbak.gz``, and ``manifest.json`` (when, which nodes, how
many keys, the schema version). The nodes come from :func:`nodes`, the one place that knows the
deployment's shape: the single data Redis (RQ's queues included), or every master of a Redis
Cluster plus RQ's own Redis (``QUEUE_REDIS_URL``); with ``REDIS_URL`` unset, the embedded Redis
of ``make run`` (its socket while it runs, else it is started on ``$RUN_DIR/redis`` for the
backup). A single Redis behind Sentinel (``redis+sentinel://``, as ``REDIS_URL`` or as a
cluster's ``QUEUE_REDIS_URL``) is read from, and restored into, the master the sentinels name
at that moment: a replica may lag, and takes no writes.

How: every key of every node is read with ``SCAN`` and copied with ``DUMP`` and ``PTTL``
(pipelined, 500 keys a round trip), and put back with ``RESTORE`` and the TTL it had left. Why
this and not the RDB files (``BGSAVE``, then copy ``dump.rdb``): it works over the network with
nothing but a client, for every shape (the nodes of a cluster each have their own volume, the
queue Redis another, ``make run``'s Redis sits on a private socket), a restore needs neither file
access to the servers nor a restart, and it can restore into another shape (keys go to whichever
master holds their slot now: a 3-master backup restores into 1 or 6 masters). The price: keys are
read one batch after another, not at one instant. Taken while the stack runs, a backup may hold a
match document one move older or newer than an index entry of it; the service's own passes put
such differences right after a restore (the dispatcher settles every deadline index entry that
is due, and checks each against its match; the status indexes are reconciled, the ladder pass
rates unrated finished matches). For an exact
snapshot stop ``api``, ``worker`` and ``cron`` first (seconds: see docs/operations.md#backups for
the measured rates). DUMP payloads carry Redis's RDB version: restore into the same or a newer
Redis.

Left out, because they describe processes rather than data and would mislead the restored
stack (a dead worker that looks alive to the health checks, a lock nobody holds): RQ's worker
and scheduler registrations and locks, ``rq cron``'s registrations, the rate limiter's counters.
The service clock (``ll:svc:clock``) is kept: the first tick after a restore sees the gap since
the backup as an outage and credits it to every pending turn, so no turn is charged for the time
the data spent in a file, and every deadline still fires.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import struct
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import redis

from ..config import Config
from ..store import cluster, migrate, sentinel, sockets

MAGIC = b"LLBAK1\n"
BATCH = 500
#: process registrations, locks and rate-limit counters: not data (see the module docstring)
SKIP = ("rq:worker:", "rq:workers", "rq:scheduler:", "rq:scheduler-lock:", "rq:cron",
        "LIMITS:")
_HEAD = struct.Struct(">I")
_TTL = struct.Struct(">q")


@dataclass
class Node:
    """One Redis whose keys a backup copies: ``role`` is ``data`` (it may hold RQ's keys too,
    on a single Redis) or ``queue`` (RQ's own Redis next to a cluster)."""

    name: str
    role: str
    client: redis.Redis
    where: str  # for people: host:port or the socket, never a password


def _where(url: str) -> str:
    parts = urlsplit(url)
    return parts.path if parts.scheme == "unix" else parts.netloc.rpartition("@")[2]


def single(url: str) -> tuple[redis.Redis, str]:
    """A client of the single Redis ``url`` names, and where it is (for people). Behind
    Sentinel: the master the sentinels name now (its address asked for here, so that the
    manifest says which server was read); the client follows a failover as the service's do.
    No read timeout: a batch of 500 DUMPs of large documents may take a while on a busy host."""
    if not sentinel.is_sentinel_url(url):
        return redis.Redis.from_url(url), _where(url)
    client = sentinel.connect(url, socket_connect_timeout=sockets.CONNECT_TIMEOUT_S)
    host, port = sentinel.master_address(url, socket_connect_timeout=sockets.CONNECT_TIMEOUT_S,
                                         socket_timeout=sockets.READ_TIMEOUT_S)
    return client, f"{host}:{port}"


def nodes(redis_url: str, queue_url: str = "") -> list[Node]:
    """Every node of the deployment that holds data, in a stable order. The one function that
    knows the shapes: a new one is a new branch here."""
    if not cluster.is_cluster_url(redis_url):
        cluster.queue_url(redis_url, queue_url)  # (a bad Sentinel URL: said as for the service)
        client, where = single(redis_url)
        return [Node("data", "data", client, where)]
    qurl = cluster.queue_url(redis_url, queue_url)
    c: Any = cluster.connect(redis_url, queue=qurl)
    out = []
    for i, primary in enumerate(sorted(c.get_primaries(), key=lambda n: (n.host, n.port)), 1):
        out.append(Node(f"data-{i}", "data", c.get_redis_connection(primary),
                        f"{primary.host}:{primary.port}"))
    qclient, qwhere = single(qurl)
    out.append(Node("queue", "queue", qclient, qwhere))
    return out


# --------------------------------------------------------------------------- the file format


def _write_record(f: gzip.GzipFile, key: bytes, pttl: int, payload: bytes) -> None:
    f.write(_HEAD.pack(len(key)))
    f.write(key)
    f.write(_TTL.pack(pttl))
    f.write(_HEAD.pack(len(payload)))
    f.write(payload)


def _read_exact(f: gzip.GzipFile, n: int) -> bytes:
    got = f.read(n)
    if len(got) != n:
        raise ValueError("backup file truncated")
    return got


def read_records(path: Path) -> Iterator[tuple[bytes, int, bytes]]:
    """(key, ms left to live or -1, DUMP payload) of every key in a node's file."""
    with gzip.open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise ValueError(f"{path}: not a backup file of this service")
        while True:
            head = f.read(_HEAD.size)
            if not head:
                return
            key = _read_exact(f, _HEAD.unpack(head)[0])
            (pttl,) = _TTL.unpack(_read_exact(f, _TTL.size))
            payload = _read_exact(f, _HEAD.unpack(_read_exact(f, _HEAD.size))[0])
            yield key, pttl, payload


# --------------------------------------------------------------------------- backup


def dump_node(node: Node, path: Path) -> dict[str, Any]:
    """Copy every key of ``node`` (but :data:`SKIP`) into ``path``; returns its manifest entry."""
    r = node.client
    keys = written = 0
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(MAGIC)
        batch: list[bytes] = []
        for key in r.scan_iter(count=1000):
            if key.startswith(tuple(p.encode() for p in SKIP)):
                continue
            batch.append(key)
            if len(batch) >= BATCH:
                keys += _dump_batch(r, batch, f)
                batch = []
        keys += _dump_batch(r, batch, f)
        written = f.tell()
    version = str(r.info("server").get("redis_version", "?"))
    return {"name": node.name, "role": node.role, "where": node.where, "file": path.name,
            "redis_version": version, "keys": keys, "bytes": written,
            "file_bytes": path.stat().st_size}


def _dump_batch(r: redis.Redis, batch: list[bytes], f: gzip.GzipFile) -> int:
    if not batch:
        return 0
    pipe = r.pipeline(transaction=False)
    for key in batch:
        pipe.dump(key)
        pipe.pttl(key)
    replies = pipe.execute()
    done = 0
    for i, key in enumerate(batch):
        payload, pttl = replies[2 * i], int(replies[2 * i + 1])
        if payload is None or pttl == -2:  # deleted or expired since the SCAN
            continue
        _write_record(f, key, pttl, payload)
        done += 1
    return done


def backup(node_list: list[Node], root: Path, *, schema: int | None = None,
           now: datetime | None = None) -> Path:
    """One timestamped folder under ``root`` with every node's file and the manifest
    (``schema``: the data's schema version, recorded for people)."""
    now = now or datetime.now(UTC)
    folder = root / now.strftime("%Y%m%dT%H%M%S.%fZ")
    folder.mkdir(parents=True)
    started = time.monotonic()
    entries = [dump_node(n, folder / f"{n.name}.llbak.gz") for n in node_list]
    manifest = {"taken_at": now.isoformat(), "seconds": round(time.monotonic() - started, 3),
                "schema_version": schema, "nodes": entries}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return folder


# --------------------------------------------------------------------------- restore


class NotEmpty(RuntimeError):
    pass


class RestoreFailed(RuntimeError):
    pass


def _holds_data(r: redis.Redis) -> bool:
    for key in r.scan_iter(count=1000):
        if not key.decode(errors="replace").startswith(SKIP + ("ll:svc:",)):
            return True
    return False


def restore(folder: Path, data: redis.Redis, queue: redis.Redis | None = None, *,
            replace: bool = False) -> dict[str, int]:
    """Put every key of the backup in ``folder`` back, with the TTL it had left: RQ's keys
    (``rq:*``) into ``queue`` when given, everything else into ``data`` (a single Redis or a
    cluster client: each key goes to the master of its slot). Refuses (``NotEmpty``) a target
    that holds data unless ``replace``. Returns keys restored per target."""
    manifest = json.loads((folder / "manifest.json").read_text())
    targets = [data] if queue is None else [data, queue]
    if not replace:
        for t in targets:
            if _holds_data(t):
                raise NotEmpty("the target Redis already holds data: restore into empty "
                               "servers, or pass --replace to overwrite the keys of the backup")
    counts = {"data": 0, "queue": 0}
    pipes = {"data": _pipe(data), "queue": _pipe(queue) if queue is not None else None}
    pending = {"data": 0, "queue": 0}
    for entry in manifest["nodes"]:
        for key, pttl, payload in read_records(folder / entry["file"]):
            role = "queue" if queue is not None and key.startswith(b"rq:") else "data"
            pipe = pipes[role]
            assert pipe is not None
            pipe.restore(key, max(pttl, 0), payload, replace=True)
            counts[role] += 1
            pending[role] += 1
            if pending[role] >= BATCH:
                _execute(pipe, entry)
                pending[role] = 0
    for role, pipe in pipes.items():
        if pipe is not None and pending[role]:
            _execute(pipe, manifest["nodes"][-1])
    return counts


def _execute(pipe: Any, entry: dict[str, Any]) -> None:
    try:
        pipe.execute()
    except redis.ResponseError as exc:
        hint = ""
        if "payload version" in str(exc):
            hint = (f" (the backup comes from Redis {entry.get('redis_version', '?')}: it "
                    f"restores into that version or a newer one only)")
        raise RestoreFailed(f"{str(exc)[-200:]}{hint}") from None


def _pipe(r: redis.Redis) -> Any:
    # a cluster's plain pipeline sends each command to the master of its key's slot
    return cast(Any, r).plain_pipeline() if cluster.is_cluster(r) else r.pipeline(
        transaction=False)


# --------------------------------------------------------------------------- make run's Redis


@contextmanager
def embedded_url() -> Iterator[str]:
    """The URL of ``make run``'s embedded Redis: its socket while it runs (``$RUN_DIR/redis/
    socket`` names it), else a redis-server started on its data for as long as needed."""
    from .run import REPO, EmbeddedRedis, stop_all

    data_dir = Path(os.environ.get("RUN_DIR") or REPO / ".run").resolve() / "redis"
    named = data_dir / "socket"
    if named.is_file():
        url = named.read_text().strip()
        try:
            if redis.Redis.from_url(url, socket_timeout=2).ping():
                yield url
                return
        except (redis.RedisError, OSError):
            pass  # a run that ended without cleaning up
    embedded = EmbeddedRedis(data_dir)
    child = embedded.start()
    try:
        if not embedded.wait_ready(30, None):
            raise SystemExit(f"backup: the embedded Redis on {data_dir} did not start")
        yield embedded.url
    finally:
        stop_all([child])
        embedded.cleanup()


@contextmanager
def _deployment() -> Iterator[tuple[str, str]]:
    """(REDIS_URL, QUEUE_REDIS_URL) of the deployment this process is configured for."""
    if os.environ.get("REDIS_URL"):
        cfg = Config.from_env()
        yield cfg.redis_url, cfg.queue_redis_url
        return
    with embedded_url() as url:
        yield url, ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m service.ops.backup",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("action", nargs="?", default="backup", choices=("backup", "restore"))
    ap.add_argument("path", nargs="?", help="restore: the backup's folder")
    ap.add_argument("--dir", default=os.environ.get("BACKUP_DIR") or "backups",
                    help="backup: where the timestamped folder goes (BACKUP_DIR, else backups/)")
    ap.add_argument("--replace", action="store_true",
                    help="restore: overwrite the backup's keys in a Redis that holds data")
    args = ap.parse_args(argv)
    with _deployment() as (redis_url, queue_url):
        if args.action == "backup":
            started = time.monotonic()
            node_list = nodes(redis_url, queue_url)
            whole = cluster.connect(redis_url, queue=cluster.queue_url(redis_url, queue_url))
            folder = backup(node_list, Path(args.dir), schema=migrate.stored_version(whole))
            manifest = json.loads((folder / "manifest.json").read_text())
            for e in manifest["nodes"]:
                print(f"backup: {e['name']} ({e['where']}): {e['keys']} keys, "
                      f"{e['file_bytes'] / 1e6:.1f} MB", flush=True)
            print(f"backup: {folder} in {time.monotonic() - started:.1f} s", flush=True)
            return 0
        if not args.path:
            ap.error("restore needs the backup's folder")
        qurl = cluster.queue_url(redis_url, queue_url)
        queue, qwhere = None, ""
        if cluster.is_cluster_url(redis_url):
            data: redis.Redis = cluster.connect(redis_url, queue=qurl)
            where = _where(redis_url)
            queue, qwhere = single(qurl)
        else:
            data, where = single(redis_url)
        started = time.monotonic()
        try:
            counts = restore(Path(args.path), data, queue, replace=args.replace)
        except (NotEmpty, RestoreFailed) as exc:
            print(f"restore: {exc}", file=sys.stderr, flush=True)
            return 1
        print(f"restore: {counts['data']} keys into {where}"
              + (f", {counts['queue']} into RQ's Redis ({qwhere})" if queue is not None else "")
              + f" in {time.monotonic() - started:.1f} s", flush=True)
        return 0


if __name__ == "__main__":
    sys.exit(main())
