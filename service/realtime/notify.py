"""Wake-ups across API processes.

Every committed change publishes on ``ll:notify:m:<match>`` and ``ll:notify:p:<player>`` (the
channel names are the store's: ``store/keys.py``). Each API
process keeps ONE pattern subscription (a background thread, a greenlet under gevent) and sets
the in-memory events of the pollers waiting on those channels. On a Redis Cluster the wake-ups
travel by sharded pub/sub instead (SPUBLISH on ``keys.NOTIFY_SHARDS`` shard channels, Redis
7.0+, ``store/cluster.py``): the notifier subscribes to every shard channel, a connection per
master, which again delivers every wake-up to every API process, without the cluster bus
broadcasting each one to every node as PUBLISH does. A long-poll therefore holds neither
an OS thread (with gevent workers) nor a Redis connection of its own."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import redis

from ..store import cluster, sockets
from ..store.keys import NOTIFY_PATTERN as PATTERN
from ..store.keys import match_channel, player_channel, shard_channels

log = logging.getLogger(__name__)

__all__ = ["PATTERN", "Gauge", "Notifier", "match_channel", "player_channel"]


class Gauge(Protocol):
    """What the notifier needs of a gauge (a prometheus_client ``Gauge`` is one): it counts
    the pollers waiting, without this layer importing the metrics library."""

    def inc(self, amount: float = 1) -> None: ...

    def dec(self, amount: float = 1) -> None: ...


class _NoGauge:
    def inc(self, amount: float = 1) -> None:
        pass

    def dec(self, amount: float = 1) -> None:
        pass


def pump(pubsub: Any, *, ping_s: float = sockets.PUBSUB_PING_S,
         stall_s: float = sockets.PUBSUB_STALL_S) -> Iterator[dict[str, Any]]:
    """The messages of a subscribed ``pubsub``, for as long as its Redis answers.

    A subscription is silent for as long as nothing happens, so it can't read with the data's
    read timeout (``store/sockets.py``: it would give up after a quiet second) nor without one
    (a stalled Redis would never be noticed, and the long-polls would wait on it for their
    whole ``wait``). So it reads in slices of ``ping_s`` and, after a silent slice, PINGs:
    Redis answers a subscribed connection's PING in the same stream. Nothing heard for
    ``stall_s`` after a PING raises ``redis.TimeoutError``: the caller treats it as a lost
    subscription (wakes every poller, which reads, fails and answers 503 as in an outage, and
    subscribes again)."""
    heard = time.monotonic()
    pinged: float | None = None
    while True:
        msg = pubsub.get_message(timeout=ping_s)
        now = time.monotonic()
        if msg is not None:
            heard, pinged = now, None
            if msg.get("type") in ("pong", b"pong"):
                continue
            yield msg
            continue
        if pinged is not None and now - pinged >= stall_s:
            raise redis.TimeoutError(
                f"pub/sub: no answer to a PING for {now - pinged:.1f} s (Redis stalled)")
        if pinged is None and now - heard >= ping_s:
            pubsub.ping()
            pinged = now


class Notifier:
    def __init__(self, client: redis.Redis, waiting_gauge: Gauge | None = None) -> None:
        self._redis = client
        self._gauge: Gauge = waiting_gauge or _NoGauge()
        self._lock = threading.Lock()
        self._waiters: dict[str, set[threading.Event]] = {}
        self._thread: threading.Thread | None = None
        self._subscribed = threading.Event()

    @property
    def waiting(self) -> int:
        """How many pollers wait right now (for metrics and benchmarks)."""
        with self._lock:
            return sum(len(s) for s in self._waiters.values())

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="notifier", daemon=True)
                self._thread.start()
        self._subscribed.wait(2.0)

    def _wake_all(self) -> None:
        with self._lock:
            events = [e for s in self._waiters.values() for e in s]
        for e in events:
            e.set()

    def _notify(self, channel: object) -> None:
        if isinstance(channel, bytes):
            channel = channel.decode()
        with self._lock:
            events = list(self._waiters.get(str(channel), ()))
        for e in events:
            e.set()

    def _run(self) -> None:
        if cluster.is_cluster(self._redis):
            self._run_sharded()
            return
        failing = False
        while True:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.psubscribe(PATTERN)
                # A wake-up may have been missed while (re)connecting: make everyone re-read.
                self._subscribed.set()
                failing = False
                self._wake_all()
                for msg in pump(pubsub):
                    self._notify(msg.get("channel"))
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                self._lost(exc, failing)
                failing = True
            finally:
                try:
                    pubsub.close()
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass

    def _lost(self, exc: BaseException, failing: bool) -> None:
        """The subscription broke: wake every poller (it may miss a wake-up until we are back)
        and pause before subscribing again. Logged once per outage: a Redis that is gone for
        good (a test's, at exit) would otherwise log every retry."""
        (log.debug if failing else log.warning)(
            "notifier lost its subscription: %s; reconnecting", exc)
        self._subscribed.clear()
        self._wake_all()
        time.sleep(0.2)

    def _run_sharded(self) -> None:
        """On a Redis Cluster: SSUBSCRIBE to every shard channel (``keys.shard_channels``), one
        connection and one listener per master that owns some of them; each message names the
        channel it wakes. Any listener that ends (a node gone, a slot moved: the server then
        sends ``sunsubscribe``) makes the whole set subscribe again on the current topology,
        waking every poller (it may have missed a wake-up meanwhile)."""
        failing = False
        client: Any = self._redis
        while True:
            subs: list[Any] = []
            broken = threading.Event()
            try:
                if failing:
                    client.nodes_manager.initialize()  # the slots may have moved (failover)
                groups: dict[str, tuple[Any, list[str]]] = {}
                for ch in shard_channels():
                    node = client.get_node_from_key(ch)
                    groups.setdefault(node.name, (node, []))[1].append(ch)
                for node, chans in groups.values():
                    ps = client.get_redis_connection(node).pubsub()
                    subs.append(ps)
                    for ch in chans:  # one by one: the channels sit in different slots
                        ps.ssubscribe(ch)
                for ps in subs:
                    threading.Thread(target=self._listen_shard, args=(ps, broken),
                                     name="notifier-shard", daemon=True).start()
                self._subscribed.set()
                failing = False
                self._wake_all()
                broken.wait()
                raise redis.ConnectionError("a shard subscription ended")
            except Exception as exc:  # noqa: BLE001 - RedisClusterException is no RedisError
                self._lost(exc, failing)
                failing = True
            finally:
                for ps in subs:
                    try:
                        ps.close()
                    except Exception:  # noqa: BLE001 - closing a broken connection
                        pass

    def _listen_shard(self, ps: Any, broken: threading.Event) -> None:
        try:
            for msg in pump(ps):
                kind = msg.get("type")
                if kind in ("smessage", b"smessage"):
                    self._notify(msg.get("data"))
                elif kind in ("sunsubscribe", b"sunsubscribe"):
                    break  # the slot moved to another node
        except Exception:  # noqa: BLE001 - any end of a listener means: subscribe again
            pass
        finally:
            broken.set()

    @contextmanager
    def listen(self, *channels: str) -> Iterator[threading.Event]:
        """Register an event set whenever one of ``channels`` is published to. Register first,
        then re-read the state, then wait: no wake-up can fall between the two."""
        self._start()
        event = threading.Event()
        with self._lock:
            for ch in channels:
                self._waiters.setdefault(ch, set()).add(event)
        self._gauge.inc()
        try:
            yield event
        finally:
            self._gauge.dec()
            with self._lock:
                for ch in channels:
                    s = self._waiters.get(ch)
                    if s is not None:
                        s.discard(event)
                        if not s:
                            del self._waiters[ch]
