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
  succeeds (a pipelined round trip per node: :func:`apply`), and the outbox is then deleted. A
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
  (``store/queues.py``): RQ needs a Redis of its own (its commands touch keys of many slots).
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
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

import redis
from redis.client import Pipeline
from redis.cluster import ClusterNode, ClusterPipeline
from redis.cluster import RedisCluster as _RedisCluster
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    RedisClusterException,
    TryAgainError,
)

from . import keys, sentinel, sockets

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
    for url in (redis_url, queue_redis_url):
        if url and sentinel.is_sentinel_url(url):
            try:
                sentinel.parse(url)
            except sentinel.SentinelURLError as e:
                raise ConfigError(str(e)) from None
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
    transaction that calls for them, as ever). ``redis+sentinel://`` names a single Redis
    watched by Sentinel (``store/sentinel.py``). Every client gets the data timeouts and health
    checks of ``store/sockets.py`` unless ``kwargs`` says otherwise."""
    kwargs = {**sockets.data_kwargs(url), **kwargs}
    if sentinel.is_sentinel_url(url):
        return sentinel.connect(url, **kwargs)
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
    # by type, remembered: an action asks several times, and isinstance against redis-py's
    # client classes walks their hierarchy each time
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

    def mget(self, keys_: Any, *args: Any) -> Any:
        """MGET across slots: a GET per key in one stock pipeline (a round trip per node; not
        atomic, as a reader of many documents wants)."""
        names = [keys_] if isinstance(keys_, (str, bytes)) else list(keys_)
        pipe = self.plain_pipeline()
        for name in [*names, *args]:
            pipe.get(name)
        return pipe.execute()

    def publish(self, channel: Any, message: Any, **kwargs: Any) -> Any:
        return self.spublish(keys.shard_channel(_text(channel)), _text(channel))


class SlotPipeline(redis.Redis):
    """A transactional pipeline that keeps its MULTI in one slot (see the module docstring).

    It is a recorder with redis-py's command methods (a ``redis.Redis`` whose
    ``execute_command`` keeps the command; those methods only build a command and call it, so
    ``redis.Redis.__init__``, which sets up a client's connection settings at some cost per
    call, is not run), and it commits through stock redis-py: a
    ``Pipeline`` on the client of the master that holds the home slot
    (``RedisCluster.get_redis_connection``), under WATCH as on a single Redis. A transaction is
    never sent again after a connection error (its WATCH died with the connection): the error
    is raised, the cluster's view of its nodes is refreshed, and the caller's retry decides."""

    def __init__(self, parent: Cluster) -> None:  # (no super().__init__: see the docstring)
        self.parent = parent
        self.home: Pipeline | None = None
        self.ll_clear()

    def ll_clear(self) -> None:
        self.watched: list[str] = []
        self.in_multi = False
        self.queued: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __enter__(self) -> SlotPipeline:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def release(self) -> None:
        """End this transaction: UNWATCH, the connection back to its pool, nothing queued."""
        if self.home is not None:
            self.home.reset()  # UNWATCH, the connection back to its pool
            self.home = None
        self.ll_clear()

    def ll_home(self, key: Any) -> Pipeline:
        """A pipeline on the master of ``key``'s slot (kept for this transaction)."""
        if self.home is None:
            node = self.parent.get_node_from_key(_text(key))
            self.home = self.parent.get_redis_connection(node).pipeline()
        return self.home

    def ll_guard(self, fn: Callable[[], Any]) -> Any:
        """``fn()``; a connection error, or a slot that moved, refreshes the cluster's view of
        its nodes (a failover) before it is raised."""
        try:
            return fn()
        except (redis.ConnectionError, redis.TimeoutError):
            self.parent.nodes_manager.initialize()
            raise
        except REDIRECTS as e:  # (redis-py's classes: their message lacks the reply's word)
            self.parent.nodes_manager.initialize()
            raise redis.ConnectionError(f"the slot moved: {e}") from e

    def watch(self, *names: Any) -> None:
        slots = {int(self.parent.keyslot(n)) for n in (*self.watched, *names)}
        if len(slots) > 1:
            raise RedisClusterException("WATCH of keys in more than one slot")
        home = self.ll_home(names[0])
        self.ll_guard(lambda: home.watch(*names))
        self.watched += [_text(n) for n in names]

    def unwatch(self) -> None:
        if self.home is not None:
            self.home.unwatch()
        self.watched = []

    def multi(self) -> None:
        self.in_multi = True

    def execute_command(self, *args: Any, **options: Any) -> Any:
        if self.watched and not self.in_multi:  # immediate, on the home slot
            home = self.home
            assert home is not None
            return self.ll_guard(lambda: home.execute_command(*args, **options))
        self.queued.append((args, options))
        return self

    def publish(self, channel: Any, message: Any, **kwargs: Any) -> Any:
        return self.execute_command("PUBLISH", channel, message)

    def ll_slot(self, args: tuple[Any, ...]) -> int:
        return int(self.parent.keyslot(args[1]))

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        try:
            return self.ll_run(raise_on_error)
        finally:
            self.release()

    def ll_run(self, raise_on_error: bool) -> list[Any]:
        ops = self.queued
        names = [str(a[0]).upper() for a, _ in ops]
        writes = [i for i, n in enumerate(names) if n not in READS]
        if self.watched:
            home_key: str | None = self.watched[0]
        else:
            keyed = [i for i in writes if names[i] != "PUBLISH"] or \
                [i for i in range(len(ops)) if names[i] != "PUBLISH"]
            home_key = _text(ops[keyed[0]][0][1]) if keyed else None
        home = None if home_key is None else int(self.parent.keyslot(home_key))
        if not writes and not self.watched and home is not None and \
                any(self.ll_slot(a) != home for a, _ in ops):
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
            elif self.ll_slot(a) == home:
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
        if (in_multi or box is not None or self.watched) and home_key is not None:
            pipe = self.ll_home(home_key)
            pipe.multi()
            for i in in_multi:
                a, kw = ops[i]
                pipe.execute_command(*a, **kw)
            if box is not None:
                pipe.set(box, json.dumps({"at": time.time(), "ops": effects}), ex=OUTBOX_TTL_S)
            # WatchError: nothing was written
            out = self.ll_guard(lambda: pipe.execute(raise_on_error))
            for i, res in zip(in_multi, out, strict=False):
                results[i] = res
        if effects:
            apply_outbox(self.parent, effects, box)
        if later_reads:
            plain = self.parent.plain_pipeline()
            for i in later_reads:
                a, kw = ops[i]
                plain.execute_command(*a, **kw)
            for i, res in zip(later_reads, plain.execute(raise_on_error=raise_on_error),
                              strict=True):
                results[i] = res
        return results


def split(r: Any, home_key: str, ops: list[tuple[Any, ...]]) -> tuple[
        list[tuple[Any, ...]], list[list[Any]], str | None]:
    """The commands of a change that commits in the slot of ``home_key`` (a match's script,
    ``store/matches.py``), split: those of that slot, to run in the commit, with the ``SET`` of
    an outbox holding the others; the others (effects, as :func:`apply` takes them; a
    ``PUBLISH`` becomes a sharded ``SPUBLISH``); and the outbox's key (None: no effects)."""
    home = int(r.keyslot(home_key))
    local: list[tuple[Any, ...]] = []
    effects: list[list[Any]] = []
    for op in ops:
        name = str(op[0]).upper()
        if name == "PUBLISH":
            ch = _text(op[1])
            effects.append(["SPUBLISH", keys.shard_channel(ch), ch])
        elif int(r.keyslot(op[1])) == home:
            local.append(op)
        else:
            effects.append(_enc(op))
    box = None
    if effects:
        box = f"{OUTBOX_PREFIX}{{{_tag(home_key)}}}:{secrets.token_hex(8)}"
        local.append(("SET", box, json.dumps({"at": time.time(), "ops": effects}),
                      "EX", OUTBOX_TTL_S))
    return local, effects, box


def commit_script(r: Any, script: Any, names: list[str], args: list[Any]) -> bool:
    """Run a commit script (redis-py's ``Script``: EVALSHA); whether it replied 1. On a
    cluster that asks for ``wait_replicas``, the script and a ``WAIT`` go to the slot's master
    on one connection (a pipeline), so that the change is on that many replicas before it
    counts as done: a failover can't lose it."""
    wait = getattr(r, "wait_replicas", 0) if is_cluster(r) else 0
    if not wait:
        return bool(run_script(r, script, names, args))
    node = r.get_node_from_key(names[0])
    for attempt in (0, 1):
        pipe = r.pipeline(transaction=False)
        pipe.execute_command("EVALSHA", script.sha, len(names), *names, *args)
        pipe.execute_command("WAIT", wait, r.wait_timeout_ms, target_nodes=node)
        try:
            done, acked = pipe.execute()
        except redis.exceptions.NoScriptError:
            if attempt:
                raise
            r.script_load(script.script)
            continue
        if int(done) and int(acked) < wait:
            raise redis.ConnectionError(
                f"the change reached {acked} of {wait} replicas within "
                f"{r.wait_timeout_ms} ms: not acknowledged")
        return bool(int(done))
    return False  # pragma: no cover - the loop returns or raises


def run_script(r: Any, script: Any, names: list[str], args: list[Any]) -> Any:
    """``script`` (redis-py's ``Script``: EVALSHA, loaded again when a Redis lost it) on the
    keys ``names`` (of one slot) with ``args``. On a cluster it goes to the plain client of the
    master that holds their slot (``RedisCluster.get_redis_connection``): the cluster client
    would work out the slot of every key of the command again. A redirect (the slot moved), a
    connection error or a slot the cluster's view has no node for sends it again through the
    cluster client, which follows the one and retries the others (a commit script is a
    compare-and-set: one that ran before the connection broke replies 0 the second time, as
    after the cluster client's own retry)."""
    if not isinstance(r, Cluster):
        return script(keys=names, args=args, client=r)
    try:
        node = r.get_node_from_key(names[0])
        return script(keys=names, args=args, client=r.get_redis_connection(node))
    except (redis.ConnectionError, redis.TimeoutError, RedisClusterException, *REDIRECTS):
        pass
    return script(keys=names, args=args, client=r)


def apply_outbox(r: Any, effects: list[list[Any]], box: str | None) -> None:
    """Apply a committed change's effects and delete its outbox; if that fails, the repair pass
    applies the outbox later."""
    try:
        apply(r, effects, box)
    except (redis.RedisError, RedisClusterException) as exc:
        # committed: the repair pass applies the outbox
        log.warning("effects of a committed change left to the repair pass: %s", exc)


def apply(r: Cluster, effects: list[list[Any]], box: str | None = None) -> None:
    """Send the effects of an outbox: its writes (a pipelined round trip per node), then, once
    every node has acknowledged them, its wake-ups (``SPUBLISH``) with the ``DEL`` of the
    outbox ``box`` when given (so deleting it costs no round trip of its own).

    The wake-ups wait for the writes because a pipeline orders commands per node only: sent
    together, a wake-up on one node can reach a long-poll before the inbox notice it announces
    is written on another (the sender's process descheduled, or its thread losing the GIL,
    between the two nodes' sends). The poll then reads, finds nothing new, waits again, and
    nothing wakes it when the notice lands: it sleeps out its whole ``wait``
    (docs/operations.md, "Stalls"). So the nodes' writes go one node after the other, and the
    wake-ups of the node written last ride in its pipeline, after its writes (that node runs
    them in order; every other node has acknowledged its writes by then): a round trip per
    node that is written or woken. The ``DEL`` never rides with writes: an outbox whose writes
    were refused stays for the repair pass, as ever. Each node's commands go through the
    plain client of that node (:func:`send`)."""
    writes = _by_node(r, [_dec(a) for a in effects if str(a[0]).upper() != "SPUBLISH"])
    wakes = _by_node(r, [a for a in effects if str(a[0]).upper() == "SPUBLISH"])
    dels = _by_node(r, [] if box is None else [["DEL", box]])
    rider = next((n for n in reversed(writes) if n in wakes), None)
    if rider is not None:  # written last, with its wake-ups after its writes
        writes[rider] = writes.pop(rider)
    first_error: Exception | None = None
    for name, (node, cmds) in writes.items():
        extra = wakes.pop(name)[1] if name == rider else []
        redone, error = _send_node(r, node, [*cmds, *extra], len(cmds))
        first_error = first_error or error
        if redone and extra:  # writes sent again after its wake-ups: wake again
            _send_stock(r, extra)
    if first_error is not None:
        raise first_error
    for name, (node, cmds) in dels.items():
        got = wakes.get(name)
        wakes[name] = (node, [*(got[1] if got else []), *cmds])
    for node, cmds in wakes.values():
        _, error = _send_node(r, node, cmds, len(cmds))
        first_error = first_error or error
    if first_error is not None:
        raise first_error


#: replies that say a command went to a node that doesn't hold its slot (now); redis-py raises
#: them as these errors, their message without the reply's first word
REDIRECTS = (MovedError, AskError, TryAgainError, ClusterDownError)


def _at_node(r: Cluster, cmds: list[list[Any]]) -> dict[str, tuple[ClusterNode, list[int]]]:
    """The positions in ``cmds`` (each ``[name, key, ...]``) grouped by the master of their
    key's slot, in the order of their first command, each group in its order."""
    out: dict[str, tuple[ClusterNode, list[int]]] = {}
    for i, args in enumerate(cmds):
        node = r.get_node_from_key(args[1])
        out.setdefault(node.name, (node, []))[1].append(i)
    return out


def _by_node(r: Cluster, cmds: list[list[Any]]) -> dict[str, tuple[ClusterNode, list[list[Any]]]]:
    """``cmds`` grouped as :func:`_at_node` groups their positions."""
    return {name: (node, [cmds[i] for i in idx])
            for name, (node, idx) in _at_node(r, cmds).items()}


def send(r: Cluster, cmds: list[list[Any]]) -> list[Any]:
    """Commands of any slots, without MULTI (reads, say): a pipeline per node on the node's
    plain client (a round trip per node, one node after the other), the replies in the order of
    ``cmds``; raises the first error among them (as redis-py's cluster pipeline does)."""
    out: list[Any] = [None] * len(cmds)
    for node, idx in _at_node(r, cmds).values():
        got, _ = _node_replies(r, node, [cmds[i] for i in idx])
        for i, value in zip(idx, got, strict=True):
            out[i] = value
    for value in out:
        if isinstance(value, Exception):
            raise value
    return out


def _send_node(r: Cluster, node: ClusterNode, cmds: list[list[Any]], check: int) -> tuple[
        bool, Exception | None]:
    """:func:`_node_replies`: whether any of the first ``check`` commands went again through
    the cluster pipeline, and the first error among the replies (None: none)."""
    replies, again = _node_replies(r, node, cmds)
    error = next((v for v in replies if isinstance(v, Exception)), None)
    return any(i < check for i in again), error


def _node_replies(r: Cluster, node: ClusterNode, cmds: list[list[Any]]) -> tuple[
        list[Any], list[int]]:
    """Send ``cmds`` to ``node`` in one pipeline of its plain client (no MULTI); the commands
    it refused with a redirect (a slot that moved), or all of them after a connection error,
    go again through redis-py's cluster pipeline (which follows redirects and retries). Returns
    the replies (an error in place of a refused command's) and which went again."""
    client = r.get_redis_connection(node)
    try:
        if len(cmds) == 1:  # (a command costs less than a pipeline of one)
            try:
                replies = [client.execute_command(*cmds[0])]
            except redis.ResponseError as e:
                replies = [e]
        else:
            pipe = client.pipeline(transaction=False)
            for args in cmds:
                pipe.execute_command(*args)
            replies = list(pipe.execute(raise_on_error=False))
    except (redis.ConnectionError, redis.TimeoutError):
        return _send_stock(r, cmds), list(range(len(cmds)))
    again = [i for i, v in enumerate(replies)
             if isinstance(v, REDIRECTS)]
    if again:
        for i, value in zip(again, _send_stock(r, [cmds[i] for i in again]), strict=True):
            replies[i] = value
    return replies, again


def _send_stock(r: Cluster, cmds: list[list[Any]]) -> list[Any]:
    plain = r.plain_pipeline()
    for args in cmds:
        plain.execute_command(*args)
    return list(plain.execute(raise_on_error=False))


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
