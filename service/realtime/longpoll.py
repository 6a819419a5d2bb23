"""Long-polls: hold a request until a match (or a player's inbox) moves, or time runs out.

The order is always: listen, read, wait. A change committed between the read and the wait has
already set the event, so nothing is missed. A poll on a match also wakes at the pending turn's
deadline and applies the timeout itself (``matches.get`` does), so polling players see a timeout
within milliseconds rather than at the next scheduler tick.

Presence: a bot counts as present for the ladder only while it is listening (store/presence.py).
A waiting poll refreshes the player's presence every ``PRESENCE_REFRESH_S`` and, at the same
moments, looks whether its client hung up (a stopped bot closes its connection): then the wait
ends at once and presence is no longer refreshed, so the bot stops counting as present within
the ladder's presence window even though its poll had many seconds left."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Mapping
from typing import Any

import redis

from ..store import inbox, matches, presence
from ..store.docs import FINISHED, MatchDoc
from . import notify

DEADLINE_SLACK_S = 0.005
#: a waiting poll refreshes its player's presence (and checks its client is there) this often
PRESENCE_REFRESH_S = 2.0


def client_gone(environ: Mapping[str, Any]) -> bool:
    """Whether the client of this request closed its connection (only under gunicorn, which
    hands its socket over in ``gunicorn.socket``; elsewhere: never). A readable socket with
    nothing to read is at end of file; a readable one with data (a pipelined request) is not."""
    sock = environ.get("gunicorn.socket")
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return bool(sock.recv(1, socket.MSG_PEEK) == b"")
    except (OSError, ValueError):
        return True


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
        presence.touch(self.r, self.pid)
        if self.challenges:
            presence.listen(self.r, self.pid)
        return True


def wait_for_match(r: redis.Redis, notifier: notify.Notifier, mid: str, after: int,
                   wait: float, listening: Listening | None = None, *,
                   deadline_jobs: bool = True) -> MatchDoc:
    """The match once its version is above ``after``, or as it is after ``wait`` seconds (or
    when the client has gone). ``deadline_jobs``: passed to the store (see
    ``store/matches.py``)."""
    end = time.monotonic() + wait
    with notifier.listen(notify.match_channel(mid)) as moved:
        while True:
            moved.clear()
            doc = matches.get(r, mid, deadline_jobs=deadline_jobs)  # applies a due timeout first
            left = end - time.monotonic()
            if doc.version > after or doc.status == FINISHED or left <= 0:
                return doc
            if listening is not None and not listening.still():
                return doc
            if doc.deadline is not None:
                left = min(left, max(0.0, doc.deadline - time.time()) + DEADLINE_SLACK_S)
            moved.wait(left if listening is None else listening.slice(left))


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
            left = end - time.monotonic()
            if notices or left <= 0:
                return notices, cursor
            if listening is not None and not listening.still():
                return notices, cursor
            moved.wait(left if listening is None else listening.slice(left))
