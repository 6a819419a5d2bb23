"""Configuration from environment variables (documented in README's Configuration table)."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any

from .store import cluster
from .store.challenge_guard import ChallengeLimits, parse_rules
from .store.ladder_config import LadderConfig

__all__ = ["DEFAULT_LADDERS", "Config", "LadderConfig", "ladders_from_env"]


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return default if raw in (None, "") else int(raw)


def _env_limit(name: str, default: str) -> str:
    """A limit string from the environment: unset or empty -> ``default``; ``off`` -> none."""
    raw = (os.environ.get(name) or "").strip()
    return "" if raw.lower() in ("off", "0") else raw or default


@dataclass
class Config:
    redis_url: str = "redis://127.0.0.1:6379/0"
    # RQ's queues: "" = the data Redis (a single node); required when redis_url is a cluster
    # (redis+cluster://host:port,...: store/cluster.py)
    queue_redis_url: str = ""
    max_body_bytes: int = 16 * 1024
    # Long-polls and deadlines
    max_wait_s: int = 60
    rate_limit: str = "20/second;600/minute"
    rate_limits_enabled: bool = True
    # registrations per client address, on top of rate_limit ("" = no limit of its own)
    register_rate_limit: str = "10/minute;200/day"
    # reverse proxies in front of the API that append to X-Forwarded-For: the client address
    # (for the per-address limits and the request log) is then taken that many hops back. 0:
    # the header is ignored, so a client cannot pick its own address to dodge a limit.
    trusted_proxies: int = 0
    # GET /metrics: wants `Authorization: Bearer <metrics_token>` when set; without a token it
    # is closed unless metrics_open (which only `make run` sets)
    metrics_token: str = ""
    metrics_open: bool = False
    # GET /readyz expects the deadline worker and rq cron (their heartbeats); False for an API
    # run without them (tests, benchmarks), where readers apply due timeouts themselves
    expect_workers: bool = True
    # Challenges: unanswered ones expire after challenge_ttl_s (a challenger may ask for
    # 10 s to a day); one player may have challenge_max_open open at once
    challenge_ttl_s: int = 120
    challenge_max_open: int = 20
    # challenges one player may make (all targets together), and to any one target; the
    # syntax of rate_limit, "off" for none; off with every other limit when RATE_LIMITS=0
    challenge_rate_limit: str = "10/minute;100/day"
    challenge_pair_rate_limit: str = "3/minute"
    # GET /v1/players/online, profiles' presence: a poll within this many seconds is online
    # (a waiting long-poll refreshes presence every 2 s and stops when its client hangs up, so
    # a stopped bot is gone from the list within about this long)
    online_window_s: int = 5
    # Operators: (label, token) pairs from ADMIN_TOKEN ("label:token,token2,..."); none: every
    # /v1/admin/... path answers 404 as if it did not exist
    admin_tokens: tuple[tuple[str, str], ...] = ()
    # served over TLS (HTTPS=1): every answer carries Strict-Transport-Security
    https: bool = False
    # GET /readyz: the freshest deadline-worker and rq cron heartbeats may be this old
    # (store/heartbeats.py; only checked when expect_workers)
    ready_max_age_s: int = 15
    # Bounded data (store/archive.py): finished matches older than match_retention_days move
    # out of Redis into one compressed file each under archive_dir ("" = never archived), at
    # most archive_batch per pass of the archive job (rq cron, every ARCHIVE_INTERVAL_S)
    archive_dir: str = ""
    match_retention_days: float = 7.0
    archive_batch: int = 500

    @classmethod
    def from_env(cls) -> Config:
        return cls(
            redis_url=os.environ.get("REDIS_URL") or cls.redis_url,
            queue_redis_url=os.environ.get("QUEUE_REDIS_URL") or "",
            max_body_bytes=_env_int("MAX_BODY_BYTES", cls.max_body_bytes),
            max_wait_s=_env_int("MAX_WAIT_S", cls.max_wait_s),
            rate_limit=os.environ.get("RATE_LIMIT") or cls.rate_limit,
            rate_limits_enabled=os.environ.get("RATE_LIMITS", "1") != "0",
            register_rate_limit=_env_limit("REGISTER_RATE_LIMIT", cls.register_rate_limit),
            trusted_proxies=_env_int("TRUSTED_PROXIES", cls.trusted_proxies),
            metrics_token=os.environ.get("METRICS_TOKEN") or "",
            metrics_open=os.environ.get("METRICS_OPEN", "0") == "1",
            # (ENQUEUE_JOBS: the setting's former name, still read)
            expect_workers=(os.environ.get("EXPECT_WORKERS")
                            or os.environ.get("ENQUEUE_JOBS", "1")) != "0",
            challenge_ttl_s=_env_int("CHALLENGE_TTL_S", cls.challenge_ttl_s),
            challenge_max_open=_env_int("CHALLENGE_MAX_OPEN", cls.challenge_max_open),
            challenge_rate_limit=_env_limit("CHALLENGE_RATE_LIMIT", cls.challenge_rate_limit),
            challenge_pair_rate_limit=_env_limit("CHALLENGE_PAIR_RATE_LIMIT",
                                                 cls.challenge_pair_rate_limit),
            online_window_s=_env_int("ONLINE_WINDOW_S", cls.online_window_s),
            admin_tokens=admin_tokens(os.environ.get("ADMIN_TOKEN") or ""),
            https=os.environ.get("HTTPS", "0") == "1",
            ready_max_age_s=_env_int("READY_MAX_AGE_S", cls.ready_max_age_s),
            archive_dir=os.environ.get("ARCHIVE_DIR") or "",
            match_retention_days=float(os.environ.get("MATCH_RETENTION_DAYS")
                                       or cls.match_retention_days),
            archive_batch=_env_int("ARCHIVE_BATCH", cls.archive_batch),
        )

    def __post_init__(self) -> None:
        self.challenge_limits()  # a malformed limit stops the process at start, not a request

    def challenge_limits(self) -> ChallengeLimits | None:
        """The challenge limits the store applies (None: RATE_LIMITS=0)."""
        if not self.rate_limits_enabled:
            return None
        return ChallengeLimits(per_challenger=parse_rules(self.challenge_rate_limit),
                               per_pair=parse_rules(self.challenge_pair_rate_limit))

    def queue_url(self) -> str:
        """The Redis of RQ's queues (raises ``cluster.ConfigError`` when it can't be)."""
        return cluster.queue_url(self.redis_url, self.queue_redis_url)

    def replace(self, **changes: Any) -> Config:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Config(**values)


#: the shortest admin token accepted: a short one could be guessed within the rate limits
ADMIN_TOKEN_MIN_LEN = 16


def admin_tokens(raw: str) -> tuple[tuple[str, str], ...]:
    """``ADMIN_TOKEN``'s (label, token) pairs: comma-separated, each ``label:token`` or a bare
    ``token`` (labelled ``admin``, ``admin2``, ...). Raises ValueError for a token shorter than
    :data:`ADMIN_TOKEN_MIN_LEN` or a label used twice, so a typo can't open a weak door."""
    out: list[tuple[str, str]] = []
    for i, item in enumerate(x.strip() for x in raw.split(",")):
        if not item:
            continue
        label, sep, token = item.rpartition(":")
        label = label.strip() if sep else ("admin" if i == 0 else f"admin{i + 1}")
        token = token.strip()
        if len(token) < ADMIN_TOKEN_MIN_LEN:
            raise ValueError(f"ADMIN_TOKEN: each token needs at least {ADMIN_TOKEN_MIN_LEN} "
                             f"characters ({label!r} has {len(token)})")
        if not label or label in {lbl for lbl, _ in out}:
            raise ValueError(f"ADMIN_TOKEN: the label {label!r} is empty or given twice")
        out.append((label, token))
    return tuple(out)


DEFAULT_LADDERS = (
    LadderConfig("duel", "classic", 2, description="Classic Love Letter, two players"),
    LadderConfig("table", "2019", 4, description="2019 edition, four players"),
)

def ladders_from_env() -> dict[str, LadderConfig]:
    """The configured ladders: ``LADDERS`` (a JSON list of objects with LadderConfig's fields)
    replaces the defaults; ``LADDER_INTERVAL_S`` / ``LADDER_TURN_TIMEOUT_S`` override those
    fields of every ladder (handy for tests and demos); ``LADDER_PRESENCE_WINDOW_S``,
    ``LADDER_BENCH_AFTER``, ``LADDER_PROVISIONAL_GAMES``, ``LADDER_ABORT_BENCH_AFTER``,
    ``LADDER_ABORT_WINDOW_S`` and ``LADDER_ABORT_BENCH_S`` (comma-separated seconds) set those
    fields of every ladder whose ``LADDERS`` entry doesn't."""
    import json

    raw = os.environ.get("LADDERS")
    given: list[dict[str, Any]] = json.loads(raw) if raw else [
        {"name": lad.name, "ruleset": lad.ruleset, "seats": lad.seats,
         "description": lad.description} for lad in DEFAULT_LADDERS]
    defaults: dict[str, Any] = _given(
        presence_window_s=_env_opt("LADDER_PRESENCE_WINDOW_S"),
        bench_after=_env_opt("LADDER_BENCH_AFTER"),
        provisional_games=_env_opt("LADDER_PROVISIONAL_GAMES"),
        abort_bench_after=_env_opt("LADDER_ABORT_BENCH_AFTER"),
        abort_window_s=_env_opt("LADDER_ABORT_WINDOW_S"))
    bench_s = (os.environ.get("LADDER_ABORT_BENCH_S") or "").strip()
    if bench_s:  # "900,3600,21600,86400": the escalating bench lengths, seconds
        defaults["abort_bench_s"] = tuple(int(x) for x in bench_s.split(","))
    overrides = _given(interval_s=_env_opt("LADDER_INTERVAL_S"),
                       turn_timeout_s=_env_opt("LADDER_TURN_TIMEOUT_S"))
    out = {}
    for d in given:
        lad = LadderConfig(**{**defaults, **d, **overrides})
        out[lad.name] = lad
    return out


def _env_opt(name: str) -> int | None:
    raw = os.environ.get(name)
    return None if raw in (None, "") else int(raw)


def _given(**values: int | None) -> dict[str, int]:
    return {k: v for k, v in values.items() if v is not None}
