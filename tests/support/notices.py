"""Reading a player's whole inbox right after a write, in the store tests."""

from __future__ import annotations

import time
from typing import Any

import redis

from service.store import inbox


def all_notices(r: redis.Redis, pid: str) -> list[dict[str, Any]]:
    """Every notice ``pid`` has, the newest included. A read holds back the entries of the
    server's current millisecond while it hands out older ones (service/store/inbox.py), so a
    read that follows a write within that millisecond ends one notice short (a suite run on a
    busy machine read ``match_started`` where the ``your_turn`` just written was due). The
    host's clock is the server's: once that millisecond has passed, one read has them all."""
    time.sleep(2 * inbox.HOLD_BACK_WAIT_S)
    notices, _ = inbox.read(r, pid, None)
    return notices
