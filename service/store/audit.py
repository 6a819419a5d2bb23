"""The operators' audit log: every admin action that changed something, in one Redis stream
(``ll:audit``), read newest first.

Each entry: when, which admin (the label of its ``ADMIN_TOKEN``, or ``cli:<user>`` from the
command line), the action, its target, the reason given, and the state before and after. Kept
for :data:`KEEP_DAYS` days: every append trims what is older (approximately, so the trim costs
next to nothing; an entry is never dropped before that age), and sets the stream to expire
:data:`KEEP_DAYS` days after the newest entry, when every entry is that old (a stream nobody
appends to any more would otherwise keep its last entries for good)."""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from . import keys, replies

#: how long entries are kept (the issue asks for at least 90 days)
KEEP_DAYS = 100
#: the most entries one read returns
MAX_LIMIT = 500


def record(r: redis.Redis, *, admin: str, action: str, target: str, reason: str | None = None,
           before: Any = None, after: Any = None, now: float | None = None) -> str:
    """Append one entry; returns its id (the cursor it is listed under)."""
    now = time.time() if now is None else now
    fields = {"at": repr(now), "admin": admin, "action": action, "target": target,
              "reason": reason or "", "before": json.dumps(before), "after": json.dumps(after)}
    oldest = int((now - KEEP_DAYS * 86400) * 1000)
    pipe = r.pipeline(transaction=False)
    pipe.xadd(keys.AUDIT, fields,  # type: ignore[arg-type]
              minid=f"{max(0, oldest)}-0", approximate=True)
    pipe.expire(keys.AUDIT, KEEP_DAYS * 86400)
    return replies.text(pipe.execute()[0])


def read(r: redis.Redis, *, after: str | None = None,
         limit: int = 50) -> tuple[list[dict[str, Any]], str | None]:
    """Entries newest first, starting after the cursor ``after`` (the id of the last entry a
    previous page listed; None: from the newest). Returns (entries, the cursor of the next
    page or None)."""
    limit = max(1, min(limit, MAX_LIMIT))
    if after is not None and all(int(x) == 0 for x in after.split("-")):
        return [], None  # nothing is older than 0-0 (and Redis refuses "(0-0" as a bound)
    top = "+" if after is None else f"({after}"
    raw = r.xrevrange(keys.AUDIT, max=top, min="-", count=limit + 1) or []
    out = []
    for entry_id, f in raw[:limit]:
        d = {replies.text(k): replies.text(v) for k, v in (f or {}).items()}
        out.append({"id": replies.text(entry_id), "at": float(d["at"]), "admin": d["admin"],
                    "action": d["action"], "target": d["target"],
                    "reason": d["reason"] or None, "before": json.loads(d["before"]),
                    "after": json.loads(d["after"])})
    return out, out[-1]["id"] if len(raw) > limit else None
