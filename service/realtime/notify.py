"""Wake-ups across API processes.

Every committed change publishes on ``ll:notify:m:<match>`` and ``ll:notify:p:<player>`` (the
channel names are the store's: ``store/keys.py``). Each API
process keeps ONE pattern subscription (a background thread, a greenlet under gevent) and sets
the in-memory events of the pollers waiting on those channels. A long-poll therefore holds neither
an OS thread (with gevent workers) nor a Redis connection of its own."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import redis

from ..store.keys import NOTIFY_PATTERN as PATTERN
from ..store.keys import match_channel, player_channel

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

    def _run(self) -> None:
        failing = False
        while True:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.psubscribe(PATTERN)
                # A wake-up may have been missed while (re)connecting: make everyone re-read.
                self._subscribed.set()
                failing = False
                self._wake_all()
                for msg in pubsub.listen():
                    channel = msg.get("channel")
                    if isinstance(channel, bytes):
                        channel = channel.decode()
                    with self._lock:
                        events = list(self._waiters.get(channel, ()))
                    for e in events:
                        e.set()
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                # Once per outage: a Redis that is gone for good (a test's, at exit) would
                # otherwise log every retry.
                (log.debug if failing else log.warning)(
                    "notifier lost its subscription: %s; reconnecting", exc)
                failing = True
                self._subscribed.clear()
                self._wake_all()
                time.sleep(0.2)
            finally:
                try:
                    pubsub.close()
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass

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
