"""Ladder jobs: the scheduling pass (``rq cron``) and the rating of a finished match."""

from __future__ import annotations

import logging

from ..config import ladders_from_env
from ..store import ladders
from .timeouts import _connection

log = logging.getLogger(__name__)


def schedule(name: str) -> list[str]:
    """Form the ladder's matches from its present, entered, unbenched bots."""
    lad = ladders_from_env()[name]
    created = ladders.form_matches(_connection(), lad)
    if created:
        log.info("ladder %s: started %d match(es)", name, len(created))
    return created


def rate(match_id: str) -> bool:
    """Rate a finished ladder match; a repeated run changes nothing."""
    return ladders.rate(_connection(), match_id, ladders_from_env())
