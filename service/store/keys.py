"""Redis key layout. Every key of one match carries the hash tag ``{<match_id>}`` so that all of
them live in one Redis Cluster slot and one transaction can touch them all."""

from __future__ import annotations

import re
import secrets
import zlib

PREFIX = "ll"

# Ids as minted here; the HTTP layer refuses any path segment that doesn't match (404) before it
# can name a key, and the store checks again (with fullmatch: a regex `$` accepts a final "\n").
PLAYER_ID_PATTERN = r"p_[0-9a-f]{12}"
MATCH_ID_PATTERN = r"m_[0-9a-f]{12}"
CHALLENGE_ID_PATTERN = r"c_[0-9a-f]{12}"
PLAYER_ID_RE = re.compile(PLAYER_ID_PATTERN)
#: what the store accepts as a match id: the minted shape and the few others that tools make
#: (bench/ copies documents under other ids); never ':', '{', '}' or whitespace
STORE_MATCH_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def new_player_id() -> str:
    return "p_" + secrets.token_hex(6)


def new_match_id() -> str:
    return "m_" + secrets.token_hex(6)


def match(mid: str) -> str:
    """The match document (a hash): ``doc`` the options, seats, status, deadline and engine state
    but its event log (zlib-compressed JSON: ``MatchDoc.to_stored``); ``v`` the version (what a commit compares); ``rs`` the seq of the first
    event of the round in play (where a view starts reading the log)."""
    return f"{PREFIX}:m:{{{mid}}}:state"


def match_events(mid: str) -> str:
    """The match's event log (a list, one JSON entry per event, index = seq)."""
    return f"{PREFIX}:m:{{{mid}}}:events"


def idempotency(mid: str, pid: str, key: str) -> str:
    return f"{PREFIX}:m:{{{mid}}}:idem:{pid}:{key}"


def match_asked(mid: str) -> str:
    """Set of the seated player ids that asked about the match since it started (a view, a
    notice, an event read): a seat that never did may abort a rated match (store/attendance.py).
    In the match's slot, beside its document."""
    return f"{PREFIX}:m:{{{mid}}}:asked"


def player(pid: str) -> str:
    return f"{PREFIX}:p:{pid}"


def player_name(canonical: str) -> str:
    """The name index entry of a canonical name (``players.canonical_name``)."""
    return f"{PREFIX}:pname:{canonical}"


def token(token_hash: str) -> str:
    return f"{PREFIX}:tok:{token_hash}"


def player_matches(pid: str) -> str:
    """Sorted set of the player's match ids, scored by creation time."""
    return f"{PREFIX}:p:{pid}:matches"


def matches_by_status(status: str) -> str:
    return f"{PREFIX}:idx:status:{status}"


ALL_MATCHES = f"{PREFIX}:idx:matches"
DEADLINES = f"{PREFIX}:idx:deadlines"  # zset: match id -> pending turn deadline (epoch s)
#: zset: finished matches still in Redis, match id -> when it finished (the archive pass's list,
#: store/archive.py; written by the commit that finishes the match)
TO_ARCHIVE = f"{PREFIX}:idx:to_archive"
PRESENCE = f"{PREFIX}:idx:presence"  # zset: player id -> last poll (epoch s)
STATS = f"{PREFIX}:stats"  # hash: actions, timeouts -> how many were applied (GET /metrics)


def heartbeats(role: str) -> str:
    """zset on RQ's Redis: process name -> its last heartbeat (store/heartbeats.py)."""
    return f"{PREFIX}:svc:hb:{role}"


def challenge(cid: str) -> str:
    """A challenge document (JSON): challenger, opponents and their answers, options, status."""
    return f"{PREFIX}:ch:{cid}"


def player_challenges(pid: str, direction: str) -> str:
    """Sorted set of the player's challenges (``in`` or ``out``), scored by creation time."""
    return f"{PREFIX}:p:{pid}:ch:{direction}"


def player_aborts(pid: str) -> str:
    """Sorted set: the rated matches the player aborted by its absence, match id -> when."""
    return f"{PREFIX}:p:{pid}:aborts"


def player_benches(pid: str) -> str:
    """Sorted set: when the player's abort benches began (the escalation's memory)."""
    return f"{PREFIX}:p:{pid}:benches"


def player_abort_lock(pid: str) -> str:
    """redis-py lock: one abort of the player counted at a time (``store/aborts.py``)."""
    return f"{PREFIX}:p:{pid}:abortlock"


ABORT_BENCH = f"{PREFIX}:idx:abort_bench"  # hash: player id -> its current abort bench (JSON)


def player_blocks(pid: str) -> str:
    """Sorted set: the players ``pid`` blocked (their challenges are refused), id -> when."""
    return f"{PREFIX}:p:{pid}:blocks"


CHALLENGES_OFF = f"{PREFIX}:idx:challenges_off"  # set: players who turned challenges off


def challenge_rate(scope: str, window_s: int) -> str:
    """The counter of challenges made (``scope``: the challenger, or challenger>target) in its
    current window of ``window_s`` seconds (the key expires with the window)."""
    return f"{PREFIX}:chrl:{scope}:{window_s}"


OPEN_CHALLENGES = f"{PREFIX}:idx:challenges:open"  # zset: challenge id -> expires at (epoch s)
LISTENING = f"{PREFIX}:idx:listening"  # zset: player id -> last notice poll with challenges=true


def ladder(name: str, part: str) -> str:
    """A key of ladder ``name`` (``entries``, ``players``, ``active``, ``inflight``, ``h:<pid>``,
    ``lock``). All of one ladder's keys share the hash tag ``{<ladder>}``: a rating's
    transaction WATCHes ``inflight`` and ``players`` together (one slot on a Redis Cluster).
    Before the tag they were ``ll:lad:<ladder>:<part>`` (``store/migrate.py`` renames them)."""
    return f"{PREFIX}:lad:{{{name}}}:{part}"


def ladder_entries(name: str) -> str:
    """Sorted set of the players entered in a ladder, scored by when they entered."""
    return ladder(name, "entries")


# Pub/sub channels: every committed change publishes on its match's and its players' channels
# (store/inbox.py); the realtime layer's notifier subscribes to the pattern.
NOTIFY_PATTERN = f"{PREFIX}:notify:*"


#: Sharded pub/sub on a Redis Cluster (SSUBSCRIBE has no patterns): every wake-up is published,
#: with its channel's name as the message, on one of this many shard channels, and every
#: notifier subscribes to them all (``store/cluster.py``). 64: spread over the masters' slots.
NOTIFY_SHARDS = 64


def shard_channel(channel: str) -> str:
    """The shard channel that carries wake-ups of ``channel`` on a cluster."""
    return f"{PREFIX}:notify:{{n{zlib.crc32(channel.encode()) % NOTIFY_SHARDS}}}"


def shard_channels() -> list[str]:
    return [f"{PREFIX}:notify:{{n{i}}}" for i in range(NOTIFY_SHARDS)]


def match_channel(mid: str) -> str:
    return f"{PREFIX}:notify:m:{mid}"


def player_channel(pid: str) -> str:
    return f"{PREFIX}:notify:p:{pid}"


# Accounts and moderation (store/names.py, store/audit.py, store/moderation.py)
SHOWN_NAMES = f"{PREFIX}:names"  # hash: player id -> the name shown now, for renamed/deleted ones
SHOWN_NAMES_GEN = f"{PREFIX}:names:gen"  # a random value, set anew on every change of SHOWN_NAMES
AUDIT = f"{PREFIX}:audit"  # stream: every admin action, oldest first


def ladder_season(name: str) -> str:
    """Ladder ``name``'s season record (hash: season number, when it started, and the start of
    every earlier season as JSON)."""
    return ladder(name, "season")

