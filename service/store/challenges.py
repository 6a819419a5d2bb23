"""Challenges: a player invites named players to an unrated match that starts when all accept.

A challenge is one JSON document (``keys.challenge``). Every change is a compare-and-set on it:
WATCH the document, read it, check and change it, then write it, its indexes
and its notices in one MULTI/EXEC. The accept that completes a challenge queues the match
(``matches.create_seated``: every seat taken, already started) in that same transaction, so two
last accepts racing create one match: the loser's EXEC fails, it reads again, finds the
challenge accepted and answers with it (its own accept is already in). A lost WATCH here is
never a conflict for the caller (the change is re-checked on the new document), unlike an
action on a match, whose meaning depends on the version it was chosen at.

Expiry is applied lazily (any read or answer of a challenge past ``expires_at`` closes it as
``expired`` first, in the same compare-and-set) and by :func:`expire_due` (the ``rq cron`` pass),
so an expired challenge is closed and its players told even if nobody looks at it.

Notices (each player's inbox, ``GET /v1/me/events``): the challenged get ``challenge`` when it is
made; every later change sends ``challenge_update`` to every participant except the one who
made it (an expiry to all). Both carry ``challenge_id``, the ``challenge`` as ``GET`` shows it
and ``match_id`` (null until the match exists: SDKs that predate challenges read ``match_id`` of
every notice)."""

from __future__ import annotations

import json
import random
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import redis
from redis.client import Pipeline

from . import challenge_guard, cluster, inbox, keys, matches, players, replies
from .errors import StoreError

OPEN = "open"
ACCEPTED = "accepted"
DECLINED = "declined"
CANCELLED = "cancelled"
EXPIRED = "expired"
STATUSES = (OPEN, ACCEPTED, DECLINED, CANCELLED, EXPIRED)
ANSWERS = ("pending", "accepted", "declined")

ID_RE = re.compile(keys.CHALLENGE_ID_PATTERN)  # (match with fullmatch)
#: a challenge nobody answers closes after this long (CHALLENGE_TTL_S overrides it)
TTL_S = 120
#: open challenges one player may have made at once (CHALLENGE_MAX_OPEN): each one sends
#: notices to others, so this bounds what one token can push into other inboxes
MAX_OPEN = 20
#: a closed challenge stays readable (GET, listed as recently closed) this long
KEEP_S = 24 * 3600
#: GET /v1/me/challenges lists closed challenges this long after they closed
RECENT_S = 600
#: newest challenges kept in each player's incoming and outgoing index
INDEX_KEEP = 200
#: a compare-and-set is tried this many times when others keep changing the challenge
TRIES = 50
#: the match options a challenge shows (the seed, deck and first seat only if the challenger
#: gave them: they decide hidden cards, and then every participant should know it)
SHOWN_OPTIONS = ("ruleset", "seats", "turn_timeout_s", "timeout_policy", "max_timeouts",
                 "tokens_to_win", "two_player_setup", "seed", "deck", "first_seat")


@dataclass
class Challenge:
    id: str
    created_at: float
    expires_at: float
    challenger: dict[str, str]  # {id, name, kind}
    opponents: list[dict[str, str]]  # [{id, name, kind, answer}]
    options: dict[str, Any]  # checked by the engine when the challenge was made
    seat_order: list[str] | None = None  # player ids by seat, when the challenger gave it
    status: str = OPEN
    closed_at: float | None = None
    closed_by: str | None = None
    match_id: str | None = None
    reason: str | None = None  # why it was declined, as the decliner said (shown to everyone)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: bytes | str) -> Challenge:
        return cls(**json.loads(raw))

    @property
    def player_ids(self) -> list[str]:
        return [self.challenger["id"], *(o["id"] for o in self.opponents)]

    def involves(self, pid: str) -> bool:
        return pid in self.player_ids

    def opponent(self, pid: str) -> dict[str, str] | None:
        return next((o for o in self.opponents if o["id"] == pid), None)

    def due(self, now: float) -> bool:
        return self.status == OPEN and now >= self.expires_at

    def public(self, now: float | None = None) -> dict[str, Any]:
        """What ``GET /v1/challenges/{id}`` shows (participants only)."""
        now = time.time() if now is None else now
        return {
            "challenge_id": self.id,
            "challenger": dict(self.challenger),
            "opponents": [dict(o) for o in self.opponents],
            "options": {k: self.options[k] for k in SHOWN_OPTIONS
                        if self.options.get(k) is not None},
            "rated": False,
            "seat_order": self.seat_order,
            "status": self.status,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "seconds_left": round(max(0.0, self.expires_at - now), 3)
            if self.status == OPEN else None,
            "closed_at": self.closed_at,
            "closed_by": self.closed_by,
            "match_id": self.match_id,
            "reason": self.reason,
        }


# --------------------------------------------------------------------------- making one


def resolve(r: redis.Redis, challenger: str, refs: list[str]) -> list[str]:
    """The opponents' ids for names or ids, refused in the order a caller would fix them."""
    ids: list[str] = []
    for ref in refs:
        pid = players.find(r, ref)
        if pid is None:
            raise StoreError("player_not_found", f"no player named or with the id {ref!r}")
        if pid == challenger:
            raise StoreError("challenge_self", "you cannot challenge yourself")
        if pid in ids:
            raise StoreError("duplicate_opponent", f"{ref!r} is named twice")
        ids.append(pid)
    barred = players.banned(r, ids)  # a banned player is never challengeable
    if barred:
        raise StoreError("player_not_found", "banned, so not to be challenged: "
                         + ", ".join(players.names(r, sorted(barred))))
    return ids


def _outgoing_open(pipe: Pipeline | redis.Redis, pid: str, now: float) -> list[Challenge]:
    ids = replies.texts(pipe.zrevrange(keys.player_challenges(pid, "out"), 0, INDEX_KEEP - 1))
    if not ids:
        return []
    # On a cluster the documents sit in other slots than the watched index: read them outside
    # the transaction (they were never watched: the index is the guard).
    reader = cluster.data_client(pipe) if cluster.is_cluster(pipe) else pipe
    raws = reader.mget([keys.challenge(c) for c in ids])
    docs = [Challenge.from_json(raw) for raw in raws if raw is not None]
    return [c for c in docs if c.status == OPEN and not c.due(now)]


def create(r: redis.Redis, challenger: str, opponents: list[str], options: dict[str, Any], *,
           seat_order: list[str] | None = None, ttl_s: float = TTL_S,
           max_open: int = MAX_OPEN, limits: challenge_guard.ChallengeLimits | None = None,
           now: float | None = None) -> Challenge:
    """Make a challenge and tell each opponent (``opponents``: names or ids). Refused when an
    opponent blocked the challenger or takes no challenges, or over ``limits``
    (``challenge_guard.screen``: nothing is written, no notice sent)."""
    now = time.time() if now is None else now
    if not 1 <= len(opponents) <= 5:
        raise StoreError("invalid_request", "name 1 to 5 opponents")
    ids = resolve(r, challenger, opponents)
    seats = options.get("seats")
    if seats is not None and seats != len(ids) + 1:
        raise StoreError("invalid_request", f"seats must be {len(ids) + 1}: you and "
                         f"{len(ids)} opponent(s) (every seat of a challenge is taken)")
    opts = matches.check_options({**options, "seats": len(ids) + 1}, rated=False)
    everyone = [challenger, *ids]
    if seat_order is not None and (len(seat_order) != len(everyone)
                                   or set(seat_order) != set(everyone)):
        raise StoreError("invalid_request", "seat_order must list the ids of you and every "
                         "opponent, each once")
    challenge_guard.screen(r, challenger, ids, limits, now)
    briefs = players.briefs(r, everyone)
    ch = Challenge(
        id="c_" + secrets.token_hex(6), created_at=now, expires_at=now + ttl_s,
        challenger={"id": challenger, "name": briefs[0][0], "kind": briefs[0][1]},
        opponents=[{"id": pid, "name": name, "kind": kind, "answer": "pending"}
                   for pid, (name, kind) in zip(ids, briefs[1:], strict=True)],
        options=opts, seat_order=list(seat_order) if seat_order is not None else None)
    out_key = keys.player_challenges(challenger, "out")
    with r.pipeline() as pipe:
        for _ in range(TRIES):
            try:
                pipe.watch(out_key)  # two creates at once can't both slip under the cap
                mine = _outgoing_open(pipe, challenger, now)
                if len(mine) >= max_open:
                    raise StoreError("too_many_challenges", f"you have {len(mine)} open "
                                     f"challenges (at most {max_open}): wait for answers or "
                                     f"cancel one")
                for c in mine:
                    again = set(ids) & {o["id"] for o in c.opponents}
                    if again:
                        who = next(o["name"] for o in c.opponents if o["id"] in again)
                        raise StoreError("already_challenged", f"your challenge {c.id} to "
                                         f"{who} is still open: cancel it or wait for it")
                pipe.multi()
                _write(pipe, ch, now)
                pipe.zadd(out_key, {ch.id: now})
                pipe.zremrangebyrank(out_key, 0, -INDEX_KEEP - 1)
                for pid in ids:
                    in_key = keys.player_challenges(pid, "in")
                    pipe.zadd(in_key, {ch.id: now})
                    pipe.zremrangebyrank(in_key, 0, -INDEX_KEEP - 1)
                    inbox.push(pipe, pid, _notice("challenge", ch, now))
                pipe.execute()
                return ch
            except redis.WatchError:
                continue
    raise StoreError("unavailable", "too many changes at once; try again")


# --------------------------------------------------------------------------- changing one


def _notice(kind: str, ch: Challenge, now: float) -> dict[str, Any]:
    return {"type": kind, "challenge_id": ch.id, "challenge": ch.public(now),
            "match_id": ch.match_id}


def _write(pipe: Pipeline, ch: Challenge, now: float) -> None:
    """Queue the document and the open index (inside MULTI)."""
    if ch.status == OPEN:
        pipe.set(keys.challenge(ch.id), ch.to_json(),
                 ex=int(max(1.0, ch.expires_at - now) + KEEP_S))
        pipe.zadd(keys.OPEN_CHALLENGES, {ch.id: ch.expires_at})
    else:
        pipe.set(keys.challenge(ch.id), ch.to_json(), ex=KEEP_S)
        pipe.zrem(keys.OPEN_CHALLENGES, ch.id)


def _close(ch: Challenge, status: str, by: str | None, now: float) -> None:
    ch.status, ch.closed_at, ch.closed_by = status, now, by


def _seats(ch: Challenge) -> list[str]:
    """The seat order: as given, else shuffled by the challenge's seed (the server's own
    random draw when no seed was given)."""
    if ch.seat_order is not None:
        return list(ch.seat_order)
    order = list(ch.player_ids)
    seed = ch.options.get("seed")
    rng = random.Random(f"{seed}/seats") if seed is not None else random.SystemRandom()
    rng.shuffle(order)
    return order


Op = Callable[[Challenge], None]


def _change(r: redis.Redis, cid: str, pid: str | None, op: Op,
            now: float | None = None) -> Challenge:
    """The one compare-and-set every change goes through. ``pid``: the caller (None: the
    expiry pass), who must take part in the challenge. A challenge past its expiry is closed as
    expired first; ``op`` then checks and changes it or raises (the expiry is kept anyway)."""
    if not isinstance(cid, str) or not ID_RE.fullmatch(cid):
        raise StoreError("challenge_not_found", f"no challenge {cid!r}")
    key = keys.challenge(cid)
    with r.pipeline() as pipe:
        for _ in range(TRIES):
            try:
                pipe.watch(key)
                raw = pipe.get(key)
                if raw is None:
                    raise StoreError("challenge_not_found", f"no challenge {cid!r}")
                ch = Challenge.from_json(raw)
                if pid is not None and not ch.involves(pid):
                    # Outsiders learn nothing, not even that it exists.
                    raise StoreError("challenge_not_found", f"no challenge {cid!r}")
                t = time.time() if now is None else now
                before = ch.to_json()
                old_status = ch.status
                lapsed = ch.due(t)
                if lapsed:
                    _close(ch, EXPIRED, None, t)
                error: StoreError | None = None
                try:
                    op(ch)
                except StoreError as e:
                    error = e
                if ch.to_json() == before:
                    pipe.unwatch()
                    if error is not None:
                        raise error
                    return ch
                if ch.status == ACCEPTED and old_status != ACCEPTED:
                    seats = _seats(ch)
                    brief = {ch.challenger["id"]: ch.challenger["name"],
                             **{o["id"]: o["name"] for o in ch.opponents}}
                    pipe.multi()
                    match_doc = matches.create_seated(
                        pipe, f"challenge:{ch.id}", ch.options, seats,
                        [brief[p] for p in seats], rated=False, now=t)
                    ch.match_id = match_doc.id
                else:
                    pipe.multi()
                actor = pid if error is None and not lapsed else None
                _write(pipe, ch, t)
                for p in ch.player_ids:
                    if p != actor:
                        inbox.push(pipe, p, _notice("challenge_update", ch, t))
                pipe.execute()
                if error is not None:
                    raise error
                return ch
            except redis.WatchError:
                continue
    raise StoreError("unavailable", "the challenge kept changing; try again")


def _check_open(ch: Challenge, *, same: str | None = None) -> bool:
    """Whether the op is a repeat that changes nothing (``ch.status == same``); raises when the
    challenge is closed otherwise."""
    if ch.status == same:
        return True
    if ch.status == EXPIRED:
        raise StoreError("challenge_expired", "the challenge expired unanswered")
    if ch.status != OPEN:
        raise StoreError("challenge_closed", f"the challenge is {ch.status}")
    return False


def accept(r: redis.Redis, cid: str, pid: str, *, now: float | None = None) -> Challenge:
    """Accept; the last accept creates the match and starts it. Accepting again is harmless
    (a retried request gets the same answer)."""

    def op(ch: Challenge) -> None:
        t = time.time() if now is None else now
        me = ch.opponent(pid)
        if me is None:
            raise StoreError("not_challenged", "you made this challenge; only the players it "
                             "names accept it")
        if me["answer"] == "accepted" and ch.status in (OPEN, ACCEPTED):
            return
        _check_open(ch)
        me["answer"] = "accepted"
        if all(o["answer"] == "accepted" for o in ch.opponents):
            _close(ch, ACCEPTED, pid, t)

    return _change(r, cid, pid, op, now)


#: the longest decline reason kept (characters)
REASON_MAX = 200


def decline(r: redis.Redis, cid: str, pid: str, *, reason: str | None = None,
            now: float | None = None) -> Challenge:
    """Decline (also after accepting, while the challenge is open): the challenge closes.
    ``reason`` (at most :data:`REASON_MAX` characters) is shown to every participant."""

    def op(ch: Challenge) -> None:
        t = time.time() if now is None else now
        me = ch.opponent(pid)
        if me is None:
            raise StoreError("not_challenged", "you made this challenge: cancel it instead")
        if me["answer"] == "declined":
            return
        _check_open(ch)
        me["answer"] = "declined"
        _close(ch, DECLINED, pid, t)
        ch.reason = reason[:REASON_MAX] if reason else None

    return _change(r, cid, pid, op, now)


def cancel(r: redis.Redis, cid: str, pid: str, *, now: float | None = None) -> Challenge:
    """Withdraw an open challenge (challenger only). Cancelling again is harmless."""

    def op(ch: Challenge) -> None:
        t = time.time() if now is None else now
        if ch.challenger["id"] != pid:
            raise StoreError("not_challenger", "only the challenger may cancel; decline instead")
        if _check_open(ch, same=CANCELLED):
            return
        _close(ch, CANCELLED, pid, t)

    return _change(r, cid, pid, op, now)


def get(r: redis.Redis, cid: str, pid: str, *, now: float | None = None) -> Challenge:
    """The challenge as a participant sees it (closed as expired first if it is due)."""
    return _change(r, cid, pid, lambda ch: None, now)


# --------------------------------------------------------------------------- listing, expiry


def for_player(r: redis.Redis, pid: str, *, now: float | None = None,
               recent_s: float = RECENT_S) -> dict[str, list[dict[str, Any]]]:
    """The player's incoming and outgoing challenges, newest first: the open ones and those
    closed within ``recent_s``."""
    now = time.time() if now is None else now
    out: dict[str, list[dict[str, Any]]] = {}
    for direction, label in (("in", "incoming"), ("out", "outgoing")):
        idx = keys.player_challenges(pid, direction)
        ids = replies.texts(r.zrevrange(idx, 0, INDEX_KEEP - 1))
        raws = r.mget([keys.challenge(c) for c in ids]) if ids else []
        rows = []
        gone = []
        for cid, raw in zip(ids, raws, strict=True):
            if raw is None:
                gone.append(cid)
                continue
            ch = Challenge.from_json(raw)
            if ch.due(now):
                try:
                    ch = _change(r, cid, None, lambda c: None, now)
                except StoreError:
                    continue
            if ch.status == OPEN or (ch.closed_at or 0) >= now - recent_s:
                rows.append(ch.public(now))
        if gone:
            r.zrem(idx, *gone)
        out[label] = rows
    return out


def expire_due(r: redis.Redis, *, now: float | None = None, limit: int = 1000) -> int:
    """Close every open challenge past its expiry (the ``rq cron`` pass); returns how many."""
    now = time.time() if now is None else now
    due = replies.texts(r.zrangebyscore(keys.OPEN_CHALLENGES, "-inf", now, start=0, num=limit))
    closed = 0
    for cid in due:
        try:
            ch = _change(r, cid, None, lambda c: None, now)
        except StoreError:
            r.zrem(keys.OPEN_CHALLENGES, cid)  # the document is gone
            continue
        closed += ch.status == EXPIRED and ch.closed_at == now
    return closed
