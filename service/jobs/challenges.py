"""Challenge jobs: the expiry pass (``rq cron``)."""

from __future__ import annotations

import logging

from ..store import challenges
from .timeouts import _connection

log = logging.getLogger(__name__)


def expire() -> int:
    """Close the open challenges past their expiry and tell their players (reads and answers
    also close them lazily; this pass covers the challenges nobody looks at)."""
    n = challenges.expire_due(_connection())
    if n:
        log.info("expired %d challenge(s)", n)
    return n
