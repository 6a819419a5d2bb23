"""Moderation from a terminal, against the configured Redis (``REDIS_URL``, ``LADDERS``...), audited
as the HTTP admin calls are (the admin label is ``cli:<user>``, ``$USER`` or the login name).

    python -m service.ops.admin find bob
    python -m service.ops.admin ban bob --reason "slurs in the name" [--until 2027-01-01T00:00:00Z]
    python -m service.ops.admin unban bob [--reason ...]
    python -m service.ops.admin rename bob robert [--reason ...]
    python -m service.ops.admin remove-entry duel bob [--reason ...]
    python -m service.ops.admin reset-ladder duel [--reason ...]
    python -m service.ops.admin audit [--limit 20] [--after <id>]

A player is named by its id or its name (any case). Each command prints its result as JSON and
exits 0; a refusal prints ``error: <code>: <message>`` and exits 1, 2 for a usage error."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from datetime import datetime
from typing import Any

import redis

from ..config import Config, ladders_from_env
from ..store import audit, cluster, moderation, players
from ..store.errors import StoreError


def _pid(r: redis.Redis, ref: str) -> str:
    pid = players.find(r, ref)
    if pid is None:
        raise StoreError("not_found", f"no player named or with the id {ref!r}")
    return pid


def _until(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError as e:
        raise StoreError("invalid_request", f"--until: not RFC 3339: {raw!r}") from e
    if when.tzinfo is None:
        raise StoreError("invalid_request", "--until: give an offset (Z or +hh:mm)")
    return when.timestamp()


def _ladder(name: str) -> Any:
    lad = ladders_from_env().get(name)
    if lad is None:
        raise StoreError("not_found", f"no ladder {name!r} in the configuration")
    return lad


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m service.ops.admin", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("find", help="players by id or the start of a name")
    p.add_argument("q")
    p = sub.add_parser("ban", help="ban a player")
    p.add_argument("player")
    p.add_argument("--reason", required=True)
    p.add_argument("--until", help="RFC 3339; absent: until unbanned")
    p = sub.add_parser("unban", help="lift a ban")
    p.add_argument("player")
    p.add_argument("--reason")
    p = sub.add_parser("rename", help="rename a player")
    p.add_argument("player")
    p.add_argument("name")
    p.add_argument("--reason")
    p = sub.add_parser("remove-entry", help="remove a player's entry and rating from a ladder")
    p.add_argument("ladder")
    p.add_argument("player")
    p.add_argument("--reason")
    p = sub.add_parser("reset-ladder", help="start a new season on a ladder")
    p.add_argument("ladder")
    p.add_argument("--reason")
    p = sub.add_parser("audit", help="the audit log, newest first")
    p.add_argument("--after")
    p.add_argument("--limit", type=int, default=20)
    return ap


def run(r: redis.Redis, args: argparse.Namespace, admin: str) -> Any:
    """The command's result (what is printed)."""
    cmd = args.command
    if cmd == "find":
        return moderation.search(r, args.q)
    if cmd == "audit":
        entries, nxt = audit.read(r, after=args.after, limit=args.limit)
        return {"entries": entries, "next_cursor": nxt}
    if cmd == "reset-ladder":
        target = args.ladder
        before, after = moderation.reset_ladder(r, _ladder(args.ladder))
    elif cmd == "remove-entry":
        pid = _pid(r, args.player)
        target = f"{args.ladder}/{pid}"
        before, after = moderation.remove_entry(r, _ladder(args.ladder), pid)
    else:
        target = _pid(r, args.player)
        if cmd == "ban":
            before, after = moderation.ban(r, target, reason=args.reason,
                                           until=_until(args.until), by=admin,
                                           ladders=ladders_from_env().values())
        elif cmd == "unban":
            before, after = moderation.unban(r, target)
        else:
            before, after = moderation.rename(r, target, args.name)
    action = {"reset-ladder": "reset_ladder", "remove-entry": "remove_entry"}.get(cmd, cmd)
    entry = audit.record(r, admin=admin, action=action, target=target,
                         reason=args.reason, before=before, after=after)
    return {"audit_id": entry, "before": before, "after": after}


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no $USER and no passwd entry (a bare container)
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    cfg = Config.from_env()
    r = cluster.connect(cfg.redis_url, queue=cfg.queue_redis_url or None)
    try:
        out = run(r, args, "cli:" + _user())
    except StoreError as e:
        print(f"error: {e.code}: {e.message}", file=sys.stderr)
        return 1
    finally:
        r.close()
    print(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
