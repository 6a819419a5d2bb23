"""Long-polls: hold a request until a match (or a player's inbox) moves, or time runs out.

The order is always: listen, read, wait. A change committed between the read and the wait has
already set the event, so nothing is missed. A poll on a match also wakes at the pending turn's
deadline and applies the timeout itself (``matches.get`` does), so polling players see a timeout
within milliseconds rather than at the next scheduler tick.

Presence: a bot counts as present for the ladder only while it is listening (store/presence.py).
A waiting poll refreshes the player's presence every ``PRESENCE_REFRESH_S`` and, at the same
moments, looks whether its client hung up (a stopped bot closes its connection): then the wait
ends at once and presence is no longer refreshed, so the bot stops counting as present within
the ladder's presence window even though its poll had many seconds left.

The refreshes of one process are written together (:class:`PresenceBatch`, every
``PRESENCE_FLUSH_S``): one ZADD of many players instead of a Redis round trip per poll and
refresh, which at 5,000 idle polls on two processes was 2,500 round trips a second, most of
the CPU the idle polls cost (``bench/longpoll.py``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

import redis
from gevent import monkey

from ..store import inbox, matches, presence
from ..store.docs import FINISHED, MatchDoc
from . import notify

DEADLINE_SLACK_S = 0.005
#: ``socket.socket`` before gevent's patch (gevent's documented ``get_original``; unpatched, the
#: class itself)
_PLAIN_SOCKET: type[socket.socket] = monkey.get_original("socket", "socket")
#: a waiting poll refreshes its player's presence (and checks its client is there) this often
PRESENCE_REFRESH_S = 2.0
#: how often a process writes the presence refreshes of its polls (a refresh lands this late)
PRESENCE_FLUSH_S = 0.25


class PresenceBatch:
    """The presence refreshes of this process's waiting polls on one Redis client, written by
    one daemon thread (a greenlet under gevent) every ``PRESENCE_FLUSH_S`` in one ZADD per key.
    A failed write (Redis down) is dropped: the next refresh of each poll comes 2 s later."""

    _all: dict[int, PresenceBatch] = {}
    _all_lock = threading.Lock()

    @classmethod
    def of(cls, r: redis.Redis) -> PresenceBatch:
        with cls._all_lock:
            batch = cls._all.get(id(r))
            if batch is None or batch.r is not r:
                batch = cls._all[id(r)] = PresenceBatch(r)
            return batch

    def __init__(self, r: redis.Redis, every: float = PRESENCE_FLUSH_S) -> None:
        self.r, self.every = r, every
        self._lock = threading.Lock()
        self._seen: dict[str, float] = {}
        self._listening: dict[str, float] = {}
        self._thread: threading.Thread | None = None

    def add(self, pid: str, *, challenges: bool = False) -> None:
        now = time.time()
        with self._lock:
            self._seen[pid] = now
            if challenges:
                self._listening[pid] = now
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="presence", daemon=True)
                self._thread.start()

    def flush(self) -> None:
        with self._lock:
            seen, self._seen = self._seen, {}
            listening, self._listening = self._listening, {}
        try:
            presence.touch_many(self.r, seen, listening)
        except (redis.RedisError, OSError):  # down, stalled or full: presence can wait
            pass

    def _run(self) -> None:
        while True:
            time.sleep(self.every)
            self.flush()


def client_gone(environ: Mapping[str, Any]) -> bool:
    """Whether the client of this request closed its connection (only under gunicorn, which
    hands its socket over in ``gunicorn.socket``; elsewhere: never). A peek that finds the end
    of the stream means gone; pending data (a pipelined request) or nothing to read, not.

    The peek is a non-blocking ``recv`` on the descriptor itself: ``select()`` refuses
    descriptors above 1023, which a process holding a thousand polls hands out, and took every
    such poll for gone at its first presence refresh (5,000 polls on two processes ended after
    2 s instead of 60: ``bench/longpoll.py``); the socket object's own ``recv`` would wait
    (gevent's, or one with a timeout)."""
    sock = environ.get("gunicorn.socket")
    if sock is None:
        return False
    try:
        fd = sock.fileno()
    except (OSError, ValueError):
        return True
    if fd < 0:
        return True
    # unpatched: gevent's recv would wait for data; shares the descriptor: detached below
    peek = _PLAIN_SOCKET(fileno=fd)
    try:
        return peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False  # nothing to read: still there
    except OSError:
        return True
    finally:
        peek.detach()


class Listening:
    """The waiting side of a long-poll of player ``pid``: :meth:`still` refreshes the player's
    presence every ``PRESENCE_REFRESH_S`` and answers False once the client has gone."""

    def __init__(self, r: redis.Redis, pid: str, environ: Mapping[str, Any] | None = None,
                 every: float = PRESENCE_REFRESH_S, *, challenges: bool = False) -> None:
        self.r, self.pid, self.environ, self.every = r, pid, environ or {}, every
        self.challenges = challenges  # also refresh "answers challenges" (presence.listen)
        self._next = time.monotonic() + every

    def slice(self, left: float) -> float:
        """How long to wait before looking again."""
        return max(0.0, min(left, self._next - time.monotonic()))

    def still(self) -> bool:
        if time.monotonic() < self._next:
            return True
        self._next = time.monotonic() + self.every
        if client_gone(self.environ):
            return False
        PresenceBatch.of(self.r).add(self.pid, challenges=self.challenges)
        return True


def _idle(moved: threading.Event, until: float, listening: Listening | None) -> bool:
    """Wait until ``moved`` is set or the monotonic time ``until``, refreshing presence on the
    way; False when the client has gone. Nothing is read meanwhile: a waiting poll costs a
    wake-up every ``PRESENCE_REFRESH_S`` and a line in the next presence batch, not a read."""
    while not moved.is_set():
        left = until - time.monotonic()
        if left <= 0:
            return True
        if listening is not None and not listening.still():
            return False
        moved.wait(left if listening is None else listening.slice(left))
    return True


def wait_for_match(r: redis.Redis, notifier: notify.Notifier, mid: str, after: int,
                   wait: float, listening: Listening | None = None) -> MatchDoc:
    """The match once its version is above ``after``, or as it is after ``wait`` seconds (or
    when the client has gone)."""
    end = time.monotonic() + wait
    with notifier.listen(notify.match_channel(mid)) as moved:
        while True:
            moved.clear()
            doc = matches.get(r, mid)  # applies a due timeout first
            now = time.monotonic()
            if doc.version > after or doc.status == FINISHED or now >= end:
                return doc
            until = end
            if doc.deadline is not None:
                until = min(end, now + max(0.0, doc.deadline - time.time()) + DEADLINE_SLACK_S)
            # the document is read again on waking: a waiting poll holds none (a six-seat
            # match's is tens of kilobytes as objects, times thousands of polls)
            del doc
            if not _idle(moved, until, listening):
                return matches.get(r, mid)


def wait_for_notices(r: redis.Redis, notifier: notify.Notifier, pid: str, after: str | None,
                     wait: float, listening: Listening | None = None
                     ) -> tuple[list[dict[str, Any]], str]:
    """The player's notices after the cursor, waiting up to ``wait`` seconds for one (or until
    the client has gone)."""
    end = time.monotonic() + wait
    with notifier.listen(notify.player_channel(pid)) as moved:
        while True:
            moved.clear()
            notices, cursor = inbox.read(r, pid, after)
            if notices or time.monotonic() >= end:
                return notices, cursor
            if not _idle(moved, end, listening):
                return notices, cursor
