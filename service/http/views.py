"""What the API shows of a match: the engine's projection for a seat (or a spectator) plus the
service's facts (ids, names, version, deadline). All hiding is done by the engine's views."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from .. import engine
from ..store.docs import ACTIVE, WAITING, MatchDoc
from . import shown_names

PUBLIC_OPTIONS = ("ruleset", "seats", "turn_timeout_s", "timeout_policy", "max_timeouts",
                  "tokens_to_win", "two_player_setup")


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def _turn(doc: MatchDoc, now: float) -> dict[str, Any] | None:
    s = doc.state
    if doc.status != ACTIVE or s is None or s.turn < 0:
        return None
    deadline = doc.deadline
    return {
        "seat": s.turn,
        "phase": s.phase,
        "deadline": rfc3339(deadline) if deadline else None,
        "seconds_left": None if deadline is None else round(max(0.0, deadline - now), 3),
    }


def _fixed(doc: MatchDoc) -> dict[str, Any]:
    """Whether the creator chose the cards (seed, deck) or the first seat, shown from creation
    on: a chosen seed lets its creator predict every hand, so nobody joins one unawares."""
    chosen = doc.fixed_by_creator
    return {"fixed_by_creator": bool(chosen), "fixed_options": chosen}


def _options(doc: MatchDoc) -> dict[str, Any]:
    opts = {k: doc.options.get(k) for k in PUBLIC_OPTIONS}
    opts.update(_fixed(doc))
    if doc.status not in (WAITING, ACTIVE):
        # Seeds and decks decide hidden cards: shown only once the match is over.
        opts.update(seed=doc.options.get("seed"), deck=doc.options.get("deck"),
                    first_seat=doc.options.get("first_seat"))
    return opts


def _waiting(doc: MatchDoc) -> dict[str, Any]:
    return {
        "ruleset": doc.options["ruleset"], "players_count": doc.seat_count,
        "tokens_to_win": doc.options.get("tokens_to_win"), "round": 0, "turn": None,
        "players": [
            {"seat": i, "tokens": 0, "discards": [], "hand_count": 0, "eliminated": False,
             "protected": False, "forfeited": False}
            for i in range(len(doc.seats))
        ],
        "deck_count": 0, "face_up": [], "set_aside_count": 0, "last_round": None,
        "result": None, "events": [],
    }


def _decorate(doc: MatchDoc, v: dict[str, Any], now: float) -> dict[str, Any]:
    shown = shown_names.of(doc.seats, doc.names)
    for p in v["players"]:
        i = p["seat"]
        p["player_id"] = doc.seats[i]
        p["name"] = shown[i]
    v["match_id"] = doc.id
    v["version"] = doc.version
    v["status"] = doc.status
    v["turn"] = _turn(doc, now)
    v["options"] = _options(doc)
    v["rated"] = doc.rated
    v["ladder"] = doc.ladder
    v["created_at"] = rfc3339(doc.created_at)
    v["aborted"] = doc.aborted
    if doc.aborted is not None:  # over for the service, though the engine's round was not
        v["result"] = None
        if "legal_actions" in v:
            v["legal_actions"] = []
    return v


def player_view(doc: MatchDoc, seat: int, now: float | None = None) -> dict[str, Any]:
    """The view of ``seat``: hand, knowledge, legal actions, events of the current round."""
    now = time.time() if now is None else now
    s = doc.state
    if s is None:
        v = _waiting(doc)
        v.update(seat=seat, hand=[], known=[], legal_actions=[])
    else:
        v = engine.view(s, seat, since=s.round_start_seq)
    return _decorate(doc, v, now)


def public_view(doc: MatchDoc, now: float | None = None) -> dict[str, Any]:
    """The spectator's summary: R29 while running; the last round's full record once ended."""
    now = time.time() if now is None else now
    s = doc.state
    if s is None:
        v = _waiting(doc)
        v["seat"] = None
    else:
        v = engine.public_view(s, since=s.round_start_seq)
    return _decorate(doc, v, now)


def summary(doc: MatchDoc, pid: str | None = None) -> dict[str, Any]:
    """One line of a match list."""
    s = doc.state
    out: dict[str, Any] = {
        "match_id": doc.id, "status": doc.status, "ruleset": doc.options["ruleset"],
        "seats": doc.seat_count, "players": [
            {"seat": i, "player_id": p, "name": n}
            for i, (p, n) in enumerate(zip(doc.seats, shown_names.of(doc.seats, doc.names),
                                           strict=True))
        ],
        "version": doc.version, "rated": doc.rated, "ladder": doc.ladder,
        "created_at": rfc3339(doc.created_at),
        "round": 0 if s is None else s.round,
        "turn_seat": s.turn if s is not None and doc.status == ACTIVE else None,
        "winners": s.winners if s is not None and doc.status not in (WAITING, ACTIVE)
        and doc.aborted is None else None,
        "aborted": doc.aborted,
        "options": _fixed(doc),
    }
    if pid is not None:
        seat = doc.seat_of(pid)
        out["seat"] = seat
        out["your_turn"] = bool(s is not None and doc.status == ACTIVE and s.turn == seat)
    return out


def event_list(doc: MatchDoc, seat: int | None, after: int = -1) -> list[dict[str, Any]]:
    """Events with ``seq > after`` that ``seat`` (None: a spectator) may see; all of them, with
    their audience, once the match has ended."""
    s = doc.state
    if s is None:
        return []
    evs = s.events[after + 1:] if after >= 0 else s.events
    if s.status != engine.ACTIVE:
        return [e.to_dict(with_audience=True) for e in evs]
    return [e.to_dict() for e in evs if e.visible_to(seat)]


def challenge_names(ch: dict[str, Any]) -> dict[str, Any]:
    """A challenge as the API shows it (``Challenge.public``), with the names of players renamed
    or deleted since it was made resolved by id, as in match documents (``shown_names``)."""
    changed = shown_names.shown()
    if not changed:
        return ch
    for who in [ch.get("challenger"), *ch.get("opponents", [])]:
        if isinstance(who, dict) and who.get("id") in changed:
            who["name"] = changed[who["id"]]
    return ch


def notice_names(notices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Inbox notices with the names in their challenges resolved (:func:`challenge_names`)."""
    for n in notices:
        if isinstance(n.get("challenge"), dict):
            challenge_names(n["challenge"])
    return notices
