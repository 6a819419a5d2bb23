"""The archive job (``rq cron``, every ``ARCHIVE_INTERVAL_S``): finished matches older than
``MATCH_RETENTION_DAYS`` move out of Redis into the archive directory (``store/archive.py``),
at most ``ARCHIVE_BATCH`` per run, oldest first. A backlog larger than a batch drains over the
next runs. Idempotent: two runs at once, or a run repeated after a crash, archive each match
once and lose nothing."""

from __future__ import annotations

import logging

from ..config import Config
from ..store import archive
from .timeouts import _connection

log = logging.getLogger(__name__)


def run() -> dict[str, int]:
    """One pass; returns how many matches were archived, found archived already, and kept."""
    cfg = Config.from_env()
    if not cfg.archive_dir:
        return {"archived": 0, "gone": 0, "kept": 0}
    got = archive.archive_due(_connection(), archive.Archive(cfg.archive_dir),
                              retention_s=cfg.match_retention_days * 86400,
                              batch=cfg.archive_batch)
    if got.archived:
        log.info("archive: %d match(es) moved to %s", got.archived, cfg.archive_dir)
    return {"archived": got.archived, "gone": got.gone, "kept": got.kept}
