"""Configuration from environment variables (documented in README's Configuration table)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return default if raw in (None, "") else int(raw)


@dataclass
class Config:
    redis_url: str = "redis://127.0.0.1:6379/0"
    max_body_bytes: int = 16 * 1024
    # Long-polls and deadlines
    max_wait_s: int = 60
    default_turn_timeout_s: int = 30
    idempotency_ttl_s: int = 48 * 3600
    rate_limit: str = "20/second;600/minute"
    rate_limits_enabled: bool = True
    enqueue_jobs: bool = True  # schedule RQ deadline jobs when turns start
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> Config:
        return cls(
            redis_url=os.environ.get("REDIS_URL") or cls.redis_url,
            max_body_bytes=_env_int("MAX_BODY_BYTES", cls.max_body_bytes),
            max_wait_s=_env_int("MAX_WAIT_S", cls.max_wait_s),
            default_turn_timeout_s=_env_int("DEFAULT_TURN_TIMEOUT_S", cls.default_turn_timeout_s),
            rate_limit=os.environ.get("RATE_LIMIT") or cls.rate_limit,
            rate_limits_enabled=os.environ.get("RATE_LIMITS", "1") != "0",
            enqueue_jobs=os.environ.get("ENQUEUE_JOBS", "1") != "0",
        )

    def replace(self, **changes: Any) -> Config:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Config(**values)
