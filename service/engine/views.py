"""What each player, and a spectator, may see (R29-R32), built in this one place.

A view is a projection of the state for one seat: it reads the seat's own hand, the public piles
and flags, and the event log filtered by each event's visibility. Nothing else hides data, so two
states the seat cannot tell apart give byte-identical views.

>>> from .options import new_match
>>> s = new_match("2019", 4, seed=3, first_seat=0)
>>> v = view(s, 1)
>>> len(v["hand"]), v["legal_actions"], v["turn"]
(1, [], {'seat': 0, 'phase': 'play'})
>>> "hand" in public_view(s)
False
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .cards import CARDS, NAMES
from .rules import legal_action_dicts, placings
from .state import ACTIVE, MatchState


def _common(s: MatchState) -> dict[str, Any]:
    active = s.status == ACTIVE
    n = s.players
    players = [
        {
            "seat": p,
            "tokens": s.tokens[p],
            "discards": [NAMES[c] for c in s.discards[p]],
            "hand_count": len(s.hands[p]),
            "eliminated": s.eliminated[p],
            "protected": s.protected[p],
            "forfeited": s.forfeited[p],
        }
        for p in range(n)
    ]
    return {
        "ruleset": s.ruleset,
        "players_count": n,
        "two_player_setup": s.two_player_setup,
        "tokens_to_win": s.tokens_to_win,
        "status": str(s.status),
        "round": s.round,
        "turn": {"seat": s.turn, "phase": str(s.phase)} if active and s.turn >= 0 else None,
        "players": players,
        "deck_count": len(s.deck),
        "face_up": [NAMES[c] for c in s.face_up],
        "set_aside_count": len(s.aside),
        "last_round": s.rounds[-1] if s.rounds else None,
        "result": _result(s),
    }


def _result(s: MatchState) -> dict[str, Any] | None:
    if s.status == ACTIVE:
        return None
    return {"winners": s.winners, "placings": placings(s), "tokens": s.tokens,
            "rounds": len(s.rounds)}


Fact = dict[str, Any]


def _priest_saw(d: dict[str, Any], seat: int) -> Fact:
    return {"type": "priest", "seat": d["target"], "card": d["card"]}


def _baron_compared(d: dict[str, Any], seat: int) -> Fact:
    mine, other = (d["card"], d["target_card"]) if d["seat"] == seat else \
                  (d["target_card"], d["card"])
    opponent = d["target"] if d["seat"] == seat else d["seat"]
    return {"type": "baron", "seat": opponent, "card": other, "mine": mine}


def _king_swapped(d: dict[str, Any], seat: int) -> Fact:
    if d["seat"] == seat:
        return {"type": "king", "seat": d["target"], "gave": d["gave"], "received": d["received"]}
    # the other side of the trade: what they gave is what this seat got
    return {"type": "king", "seat": d["seat"], "gave": d["received"], "received": d["gave"]}


def _chancellor_drew(d: dict[str, Any], seat: int) -> Fact:
    return {"type": "chancellor_drew", "cards": d["cards"]}


def _chancellor_returned(d: dict[str, Any], seat: int) -> Fact:
    return {"type": "chancellor_returned", "keep": d["keep"], "bottom": d["bottom"]}


def _prince_drew(d: dict[str, Any], seat: int) -> Fact:
    return {"type": "prince", "seat": d["by"], "card": d["card"]}


#: How each private event a card's effect emits (its spec's ``facts``) reads as a known fact
#: of the seat that received it (R30). A new card with a fact adds its formatter here.
FACT_FORMATS: dict[str, Callable[[dict[str, Any], int], Fact]] = {
    "priest_saw": _priest_saw, "baron_compared": _baron_compared,
    "king_swapped": _king_swapped, "chancellor_drew": _chancellor_drew,
    "chancellor_returned": _chancellor_returned, "prince_drew": _prince_drew,
}
_FACTS = frozenset(kind for spec in CARDS.values() for kind in spec.facts)
if not _FACTS <= set(FACT_FORMATS):  # a card's fact without a formatter: fail at import
    raise ImportError(f"facts without a format: {sorted(_FACTS - set(FACT_FORMATS))}")


def known_facts(state: MatchState, seat: int) -> list[Fact]:
    """The seat's private knowledge this round (R30), oldest first, each with its ``seq``,
    ``round`` and ``turn``: priest looks, baron comparisons, king trades, chancellor draws and
    returns, prince draws (the facts of the card table, in the forms of ``FACT_FORMATS``)."""
    out: list[Fact] = []
    for e in state.events[state.round_start_seq:]:
        if e.to is None or e.type not in _FACTS or seat not in e.to:
            continue
        fact = FACT_FORMATS[e.type](e.data, seat)
        fact.update(seq=e.seq, round=e.round, turn=e.data["turn"])
        out.append(fact)
    return out


def _events(s: MatchState, seat: int | None, since: int) -> list[dict[str, Any]]:
    evs = s.events[since:] if since > 0 else s.events
    if s.status != ACTIVE:  # the full record once the match has ended (R32)
        return [e.to_dict(with_audience=True) for e in evs]
    if seat is None:
        return [e.to_dict() for e in evs if e.to is None]
    return [e.to_dict() for e in evs if e.to is None or seat in e.to]


def view(state: MatchState, seat: int, *, since: int = 0) -> dict[str, Any]:
    """What ``seat`` may see: the public part, their hand, what they know, their legal actions
    (when it is their turn) and the events visible to them from ``since`` on (a ``seq``)."""
    v = _common(state)
    v["seat"] = seat
    v["hand"] = [NAMES[c] for c in state.hands[seat]]
    v["known"] = known_facts(state, seat)
    v["legal_actions"] = legal_action_dicts(state) if state.turn == seat else []
    v["events"] = _events(state, seat, since)
    return v


def public_view(state: MatchState, *, since: int = 0) -> dict[str, Any]:
    """What a spectator may see: R29 while the match runs, everything once it has ended."""
    v = _common(state)
    v["seat"] = None
    v["events"] = _events(state, None, since)
    if state.status != ACTIVE:
        v["hands"] = [[NAMES[c] for c in h] for h in state.hands]
    return v


def full_record(state: MatchState) -> dict[str, Any]:
    """Everything: options, every event with its audience, final hands and the result.
    Meant for finished matches (replays, ratings); it reveals all hidden cards."""
    return {
        "options": {
            "ruleset": state.ruleset, "players": state.players, "seed": state.seed,
            "tokens_to_win": state.tokens_to_win, "two_player_setup": state.two_player_setup,
            "first_seat": state.first_seat,
            "deck": None if state.deck_order is None else [NAMES[c] for c in state.deck_order],
        },
        "status": str(state.status),
        "rounds": state.rounds,
        "result": _result(state),
        "events": [e.to_dict(with_audience=True) for e in state.events],
    }
