"""Long-polls: hold a request until a match (or a player's inbox) moves, or time runs out.

The order is always: listen, read, wait. A change committed between the read and the wait has
already set the event, so nothing is missed. A poll on a match also wakes at the pending turn's
deadline and applies the timeout itself (``matches.get`` does), so polling players see a timeout
within milliseconds rather than at the next scheduler tick."""

from __future__ import annotations

import time
from typing import Any

import redis

from ..store import inbox, matches
from ..store.docs import FINISHED, MatchDoc
from . import notify

DEADLINE_SLACK_S = 0.005


def wait_for_match(r: redis.Redis, notifier: notify.Notifier, mid: str, after: int,
                   wait: float, *, deadline_jobs: bool = True) -> MatchDoc:
    """The match once its version is above ``after``, or as it is after ``wait`` seconds.
    ``deadline_jobs``: passed to the store (see ``store/matches.py``)."""
    end = time.monotonic() + wait
    with notifier.listen(notify.match_channel(mid)) as moved:
        while True:
            moved.clear()
            doc = matches.get(r, mid, deadline_jobs=deadline_jobs)  # applies a due timeout first
            left = end - time.monotonic()
            if doc.version > after or doc.status == FINISHED or left <= 0:
                return doc
            if doc.deadline is not None:
                left = min(left, max(0.0, doc.deadline - time.time()) + DEADLINE_SLACK_S)
            moved.wait(left)


def wait_for_notices(r: redis.Redis, notifier: notify.Notifier, pid: str, after: str | None,
                     wait: float) -> tuple[list[dict[str, Any]], str]:
    """The player's notices after the cursor, waiting up to ``wait`` seconds for one."""
    end = time.monotonic() + wait
    with notifier.listen(notify.player_channel(pid)) as moved:
        while True:
            moved.clear()
            notices, cursor = inbox.read(r, pid, after)
            left = end - time.monotonic()
            if notices or left <= 0:
                return notices, cursor
            moved.wait(left)
