# mypy: disable-error-code="no-untyped-call"
"""Redis Cluster: connecting, transactions that stay in one slot, and the outbox that carries
their other writes.

``REDIS_URL=redis+cluster://host:port[,host:port...]`` (``rediss+cluster://`` for TLS; the same
scheme flask-limiter's storage takes) names a cluster; any other URL a single Redis, used as
before (:func:`connect` returns a plain ``redis.Redis``).

On a cluster, a MULTI/EXEC may only touch keys of one hash slot, and every change of the service
touches keys elsewhere: a move writes its match (slot of ``{<match id>}``) and also the status
and deadline indexes, the seated players' inboxes, the action counters. So the client that
:func:`connect` returns for a cluster (:class:`Cluster`) gives every transactional pipeline the
same code path as on a single Redis (``r.pipeline()``, WATCH, MULTI, ``execute()``) but splits
what was queued by slot (:class:`SlotPipeline`):

- commands on the *home* slot (the slot of the watched keys, else of the first write) run in
  the MULTI/EXEC, under the WATCH, exactly as on a single Redis;
- writes to other slots are *effects*: they are written, serialized, into an outbox key in the
  home slot (``ll:fx:{<home tag>}:<random>``) inside that same MULTI, applied right after EXEC
  succeeds (one pipelined round trip, grouped by node), and the outbox is then deleted. A
  process that dies in between leaves the outbox: :func:`repair` (``service/jobs/repair.py``:
  every ``REPAIR_INTERVAL_S`` from ``rq cron``, and once when a worker starts) applies every
  outbox older than ``OUTBOX_GRACE_S`` and deletes it. So a committed change's effects are
  applied at least once; only such a crash can apply one twice (an inbox notice repeated);
- reads of other slots queued in the same pipeline are read right after EXEC (not in its
  snapshot); a pipeline of reads only is sent without MULTI unless all its keys share a slot;
- ``PUBLISH`` becomes sharded pub/sub (``SPUBLISH``, Redis 7.0+) on one of
  :data:`NOTIFY_SHARDS` shard channels (``keys.shard_channel``), applied with the effects:
  each API process's notifier listens to all of them (``realtime/notify.py``), as it listened
  to the pattern on a single Redis, and the cluster bus never broadcasts a wake-up to every
  node;
- jobs for RQ go to the queue Redis (``QUEUE_REDIS_URL``) after the commit
  (:func:`after_commit`): RQ needs a Redis of its own (its commands touch keys of many slots).
  A rating job lost to a crash there is found again by the ladder pass's rating of unrated
  matches; a deadline is an index entry on the data Redis, not a job queued by a change.

Effects leave indexes eventually consistent: two changes of one match committed within the same
millisecond by two processes may apply their effects in the other order, which can leave a
match in the ``waiting``/``active`` status index or the deadline index after it left that
status (never out of its own). Readers of the deadline index check the document anyway; the
repair pass also drops such entries from the status indexes."""

from __future__ import annotations

import base64
import json
import logging
import secrets
import time
from collections.abc import Callable, Iterable
from copy import copy
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

import redis
from redis.cluster import ClusterNode, ClusterPipeline
from redis.cluster import RedisCluster as _RedisCluster

from . import keys

log = logging.getLogger(__name__)

SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
#: an outbox older than this is applied by the repair pass (the committing process died)
OUTBOX_GRACE_S = 30.0
#: an outbox left behind expires by itself after this long (a week: repair runs every minute)
OUTBOX_TTL_S = 7 * 24 * 3600
OUTBOX_PREFIX = f"{keys.PREFIX}:fx:"

#: commands that only read (queued in a pipeline, they are answered, never put in an outbox)
READS = frozenset("""GET MGET HGET HMGET HGETALL HEXISTS HKEYS HVALS HLEN ZSCORE ZMSCORE ZRANGE
ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZCARD ZCOUNT ZRANK ZREVRANK LRANGE LLEN LINDEX XRANGE
XREVRANGE XLEN EXISTS TTL PTTL TYPE SMEMBERS SCARD SISMEMBER STRLEN""".split())


class ConfigError(ValueError):
    """A Redis URL the service cannot use (said at start-up, not at the first request)."""


def is_cluster_url(url: str) -> bool:
    return urlsplit(url).scheme in SCHEMES


def queue_url(redis_url: str, queue_redis_url: str | None) -> str:
    """The Redis of RQ's queues: ``QUEUE_REDIS_URL``, else the data Redis when that is a single
    node. A cluster can't hold RQ's keys (its commands touch many slots)."""
    if queue_redis_url and queue_redis_url != redis_url:
        if is_cluster_url(queue_redis_url):
            raise ConfigError("QUEUE_REDIS_URL must name a single Redis: RQ does not run on "
                              "Redis Cluster")
        if not is_cluster_url(redis_url):
            # a single Redis queues jobs in the transaction that calls for them
            raise ConfigError("QUEUE_REDIS_URL may name another Redis only when REDIS_URL "
                              "names a Redis Cluster; with a single Redis leave it unset")
        return queue_redis_url
    if is_cluster_url(redis_url):
        raise ConfigError("REDIS_URL names a Redis Cluster: set QUEUE_REDIS_URL to a single "
                          "Redis for RQ's queues (RQ does not run on a cluster)")
    return redis_url


def connect(url: str, *, queue: redis.Redis | str | None = None, **kwargs: Any) -> redis.Redis:
    """A client for ``url``: a plain ``redis.Redis``, or a :class:`Cluster` (typed as
    ``redis.Redis``: it answers the same commands) for a ``redis+cluster://`` URL. ``queue``
    (a client or URL): where a cluster's RQ jobs go (a single Redis keeps them in the
    transaction that calls for them, as ever)."""
    if not is_cluster_url(url):
        return redis.Redis.from_url(url, **kwargs)
    parts = urlsplit(url)
    nodes = []
    for hostport in parts.netloc.rpartition("@")[2].split(","):
        host, _, port = hostport.rpartition(":")
        nodes.append(ClusterNode(host or "127.0.0.1", int(port or 6379)))
    if parts.username:
        kwargs.setdefault("username", unquote(parts.username))
    if parts.password:
        kwargs.setdefault("password", unquote(parts.password))
    if SCHEMES[parts.scheme] == "rediss":
        kwargs.setdefault("ssl", True)
    kwargs.pop("retry", None)  # RedisCluster has its own retries (MOVED, failover)
    query = parse_qs(parts.query)
    client = Cluster(startup_nodes=nodes, **kwargs)
    client.wait_replicas = int(query.get("wait_replicas", ["0"])[0])
    client.wait_timeout_ms = int(query.get("wait_timeout_ms", ["500"])[0])
    client.queue = connect(queue) if isinstance(queue, str) else queue
    return cast(redis.Redis, client)


def is_cluster(r: Any) -> bool:
    # by type, remembered: isinstance against redis-py's client classes takes about 2 us, and
    # an action asks several times
    t = type(r)
    known = _CLUSTER_TYPES.get(t)
    if known is None:
        known = _CLUSTER_TYPES[t] = isinstance(r, (_RedisCluster, SlotPipeline))
    return known


_CLUSTER_TYPES: dict[type, bool] = {}


def _tag(key: str) -> str:
    """What Redis hashes of ``key``: the content of its first ``{...}``, else all of it."""
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            return key[start + 1:end]
    return key


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _enc(args: Iterable[Any]) -> list[Any]:
    return [{"b": base64.b64encode(a).decode()} if isinstance(a, bytes) else a for a in args]


def _dec(args: Iterable[Any]) -> list[Any]:
    return [base64.b64decode(a["b"]) if isinstance(a, dict) else a for a in args]


class Cluster(_RedisCluster):
    """RedisCluster whose default pipeline is a :class:`SlotPipeline` (see the module
    docstring); ``transaction=False`` gives the stock, non-transactional pipeline."""

    queue: redis.Redis | None = None
    #: replicas a transaction must reach before it counts as done (``?wait_replicas=N`` in
    #: the URL; 0: don't wait, as on a single Redis) and how long to wait for them
    wait_replicas: int = 0
    wait_timeout_ms: int = 500

    def pipeline(self, transaction: bool | None = True, shard_hint: Any = None) -> Any:
        if transaction is False:
            return super().pipeline(transaction=False)
        return SlotPipeline(self)

    def plain_pipeline(self) -> ClusterPipeline:
        return cast(ClusterPipeline, super().pipeline(transaction=False))

    def _execute_pipeline_by_slot(self, command: str, slots_to_args: Any) -> Any:
        # redis-py's own multi-slot helpers (mget_nonatomic...) want the stock pipeline
        pipe = self.plain_pipeline()
        for slot, slot_args in slots_to_args.items():
            pipe.execute_command(command, *slot_args, target_nodes=[
                self.nodes_manager.get_node_from_slot(slot, False)])
        return pipe.execute()

    def mget(self, keys_: Any, *args: Any) -> Any:
        """MGET across slots (one per node, not atomic: as a reader of many documents wants)."""
        return self.mget_nonatomic(keys_, *args)

    def publish(self, channel: Any, message: Any, **kwargs: Any) -> Any:
        return self.spublish(keys.shard_channel(_text(channel)), _text(channel))


class SlotPipeline(ClusterPipeline):
    """A transactional pipeline that keeps its MULTI in one slot (see the module docstring)."""

    def __init__(self, parent: Cluster) -> None:
        super().__init__(
            nodes_manager=parent.nodes_manager, commands_parser=parent.commands_parser,
            startup_nodes=list(parent.nodes_manager.startup_nodes.values()),
            result_callbacks=parent.result_callbacks,
            cluster_response_callbacks=parent.cluster_response_callbacks,
            read_from_replicas=parent.read_from_replicas,
            load_balancing_strategy=parent.load_balancing_strategy,
            reinitialize_steps=parent.reinitialize_steps, retry=parent.retry,
            lock=parent._lock, transaction=True, event_dispatcher=parent._event_dispatcher)
        self.parent = parent
        # No retry of a transaction's commands: redis-py would send the MULTI/EXEC again on a
        # new connection after a connection error, without the WATCH (which lived on the lost
        # connection), so a compare-and-set could overwrite a newer document (a failover is
        # exactly when that happens). The error is raised instead, as a single Redis's
        # pipeline does while watching: nothing or everything was applied, the caller's
        # retry (an Idempotency-Key) finds out which; the topology is refreshed meanwhile.
        strategy: Any = self._execution_strategy
        retry = copy(strategy._retry)
        retry.update_retries(0)
        strategy._retry = retry
        self._ll_wait = parent.wait_replicas
        self._ll_wait_timeout_ms = parent.wait_timeout_ms
        self._ll_wait_pending = False
        self._ll_reset()

    def _ll_reset(self) -> None:
        self._ll_watched: list[str] = []
        self._ll_multi = False
        self._ll_ops: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self._ll_after: list[Callable[[], None]] = []

    def reset(self) -> Any:
        try:
            if getattr(self, "_ll_wait_pending", False):
                self._ll_wait_pending = False
                self._wait_replicas()
        finally:
            super().reset()
            if hasattr(self, "_ll_ops"):
                self._ll_reset()

    def _wait_replicas(self) -> None:
        """``WAIT`` on the connection that ran the EXEC (ClusterPipeline.execute calls reset()
        right after it, before the connection goes back to its pool): the change is on
        ``wait_replicas`` replicas before it is acknowledged, so a failover can't lose it."""
        conn = getattr(self._execution_strategy, "_transaction_connection", None)
        if conn is None:
            return
        conn.send_command("WAIT", self._ll_wait, self._ll_wait_timeout_ms)
        acked = int(conn.read_response())
        if acked < self._ll_wait:
            raise redis.ConnectionError(
                f"the change reached {acked} of {self._ll_wait} replicas within "
                f"{self._ll_wait_timeout_ms} ms: not acknowledged")

    def watch(self, *names: Any) -> Any:
        self._ll_watched += [_text(n) for n in names]
        return super().watch(*names)

    def multi(self) -> None:
        self._ll_multi = True
        super().multi()

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        name = str(args[0]).upper()
        if name in ("WATCH", "UNWATCH") or (self._ll_watched and not self._ll_multi):
            return super().execute_command(*args, **kwargs)  # immediate, on the home slot
        self._ll_ops.append((args, kwargs))
        return self

    # ClusterPipeline blocks PUBLISH and hands DEL/EXISTS/UNLINK to its strategy directly:
    # route them through execute_command like every other command.
    def publish(self, channel: Any, message: Any, **kwargs: Any) -> Any:
        return self.execute_command("PUBLISH", channel, message)

    def delete(self, *names: Any) -> Any:
        return self.execute_command("DEL", *names)

    def unlink(self, *names: Any) -> Any:
        return self.execute_command("UNLINK", *names)

    def exists(self, *names: Any) -> Any:
        return self.execute_command("EXISTS", *names)

    def after_commit(self, fn: Callable[[], None]) -> None:
        self._ll_after.append(fn)

    def _slot(self, args: tuple[Any, ...]) -> int:
        return int(self.parent.keyslot(args[1]))

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        ops, after = self._ll_ops, self._ll_after
        try:
            return self._execute(ops, after, raise_on_error)
        finally:
            self.reset()

    def _execute(self, ops: list[tuple[tuple[Any, ...], dict[str, Any]]],
                 after: list[Callable[[], None]], raise_on_error: bool) -> list[Any]:
        names = [str(a[0]).upper() for a, _ in ops]
        writes = [i for i, n in enumerate(names) if n not in READS]
        if self._ll_watched:
            home: int | None = int(self.parent.keyslot(self._ll_watched[0]))
            home_key: str | None = self._ll_watched[0]
        else:
            keyed = [i for i in writes if names[i] != "PUBLISH"] or \
                [i for i in range(len(ops)) if names[i] != "PUBLISH"]
            home = self._slot(ops[keyed[0]][0]) if keyed else None
            home_key = _text(ops[keyed[0]][0][1]) if keyed else None
        if not writes and not self._ll_watched and home is not None and \
                any(self._slot(a) != home for a, _ in ops):
            plain = self.parent.plain_pipeline()  # reads only, of several slots: no MULTI
            for a, kw in ops:
                plain.execute_command(*a, **kw)
            return list(plain.execute(raise_on_error=raise_on_error))
        results: list[Any] = [None] * len(ops)
        in_multi: list[int] = []
        later_reads: list[int] = []
        effects: list[list[Any]] = []
        for i, (a, _kw) in enumerate(ops):
            if names[i] == "PUBLISH":
                ch = _text(a[1])
                effects.append(["SPUBLISH", keys.shard_channel(ch), ch])
            elif self._slot(a) == home:
                in_multi.append(i)
            elif names[i] in READS:
                later_reads.append(i)
            else:
                effects.append(_enc(a))
        box = None
        if effects and home_key is not None:
            box = f"{OUTBOX_PREFIX}{{{_tag(home_key)}}}:{secrets.token_hex(8)}"
            if self.parent.keyslot(box) != home:
                raise redis.RedisError(f"no outbox key in the slot of {home_key!r}")
        if in_multi or box is not None:
            if not self._ll_multi and not self._ll_watched:
                super().multi()
            for i in in_multi:
                a, kw = ops[i]
                super().execute_command(*a, **kw)
            if box is not None:
                super().execute_command(
                    "SET", box, json.dumps({"at": time.time(), "ops": effects}),
                    "EX", OUTBOX_TTL_S)
            # reset() waits for the replicas (see _wait_replicas), after writes only
            self._ll_wait_pending = bool(self._ll_wait) and (
                box is not None or any(names[i] not in READS for i in in_multi))
            out = super().execute(raise_on_error)  # WatchError: nothing was written
            for i, res in zip(in_multi, out, strict=False):
                results[i] = res
        elif self._ll_watched:
            super().execute(raise_on_error)  # nothing to write: EXEC checks the WATCH only
        if effects:
            try:
                apply(self.parent, effects)
                if box is not None:
                    self.parent.delete(box)
            except redis.RedisError as exc:  # committed: the repair pass applies the outbox
                log.warning("effects of a committed change left to the repair pass: %s", exc)
        for fn in after:
            try:
                fn()
            except redis.RedisError as exc:  # the passes that catch lost jobs will
                log.warning("a job of a committed change was not queued: %s", exc)
        if later_reads:
            plain = self.parent.plain_pipeline()
            for i in later_reads:
                a, kw = ops[i]
                plain.execute_command(*a, **kw)
            for i, res in zip(later_reads, plain.execute(raise_on_error=raise_on_error),
                              strict=True):
                results[i] = res
        return results


def apply(r: Cluster, effects: list[list[Any]]) -> None:
    """Send the effects of an outbox (one pipelined round trip per node)."""
    plain = r.plain_pipeline()
    for args in effects:
        plain.execute_command(*_dec(args))
    plain.execute()


def after_commit(pipe: Any, fn: Callable[[], None]) -> bool:
    """Run ``fn`` once ``pipe`` has committed (a cluster's pipeline); False: ``pipe`` is a
    single Redis's pipeline, whose MULTI holds RQ's commands too (do them there)."""
    if isinstance(pipe, SlotPipeline):
        pipe.after_commit(fn)
        return True
    return False


def queue_client(r: Any) -> redis.Redis:
    """The queue Redis of a cluster client or of its pipeline."""
    parent = r.parent if isinstance(r, SlotPipeline) else r
    q = getattr(parent, "queue", None)
    if q is None:
        raise ConfigError("this cluster client has no queue Redis (QUEUE_REDIS_URL)")
    return cast(redis.Redis, q)


def data_client(r: Any) -> redis.Redis:
    """The client behind a pipeline (reads outside the transaction's slot go through it)."""
    if isinstance(r, SlotPipeline):
        return cast(redis.Redis, r.parent)
    if isinstance(r, redis.client.Pipeline):
        return redis.Redis(connection_pool=r.connection_pool)
    return cast(redis.Redis, r)


# --------------------------------------------------------------------------- repair

#: called with (client, home tag) after an outbox was applied by the repair pass
_repair_hooks: list[Callable[[redis.Redis, str], None]] = []


def on_repair(fn: Callable[[redis.Redis, str], None]) -> None:
    _repair_hooks.append(fn)


def repair(r: redis.Redis, *, grace_s: float = OUTBOX_GRACE_S, now: float | None = None) -> int:
    """Apply and delete every outbox older than ``grace_s`` (its process died between EXEC and
    its effects); returns how many. A single Redis has none (its transactions hold
    everything). Reads every key once (SCAN on each master, 1,000 per call)."""
    if not is_cluster(r):
        return 0
    c = cast(Cluster, r)
    now = time.time() if now is None else now
    done = 0
    for raw_key in c.scan_iter(match=OUTBOX_PREFIX + "*", count=1000):
        key = _text(raw_key)
        raw = c.get(key)
        if raw is None:
            continue
        box = json.loads(raw)
        if float(box["at"]) > now - grace_s:
            continue
        apply(c, box["ops"])
        c.delete(key)
        done += 1
        tag = _tag(key)
        for fn in _repair_hooks:
            fn(r, tag)
    return done
