"""Scenario helpers for the rule-by-rule engine tests (tests/engine/test_rules.py).

A scenario is a match on an explicit round-1 deck. :func:`build_deck` writes the cards a test
cares about on top and completes the deck with the ruleset's remaining cards in card order (spy,
guard, priest, ... princess), so the whole deck is known and every outcome is exact.
:func:`scenario` goes one step further and lays the top of the deck out the way setup takes it
(docs/rules.md#R5 to #R7): the face-down set-aside card(s), the face-up cards (2 players), one card per seat
dealt from the first player on, then the cards drawn turn by turn.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from service.engine import (
    NAMES,
    RULESETS,
    Action,
    Card,
    EngineError,
    Event,
    MatchState,
    apply,
    new_match,
)


def build_deck(ruleset: str, top: Sequence[str]) -> list[str]:
    """``top`` (top card first), then the rest of ``ruleset``'s cards in card order."""
    rest = Counter(RULESETS[ruleset].deck())
    for name in top:
        c = int(Card.parse(name))
        if rest[c] <= 0:
            raise ValueError(f"too many {name!r} for ruleset {ruleset}")
        rest[c] -= 1
    return list(top) + [NAMES[c] for c in sorted(rest.elements())]


def scenario(
    ruleset: str,
    players: int,
    *,
    aside: Sequence[str],
    hands: Sequence[str],
    draws: Sequence[str] = (),
    face_up: Sequence[str] = (),
    first: int = 0,
    seed: str | int = "rules",
    two_player_setup: str = "three-up",
    tokens_to_win: int | None = None,
) -> MatchState:
    """A match whose round 1 is laid out card by card.

    ``aside``: the face-down set-aside cards (1, or 4 with ``three-down-one-up``), ``aside[0]``
    being the R5 card; ``face_up``: the face-up cards of a 2-player round; ``hands[seat]``: the
    card dealt to each seat; ``draws``: the next cards of the deck, in the order they are drawn.
    """
    two = players == 2
    assert len(aside) == (4 if two and two_player_setup == "three-down-one-up" else 1)
    assert len(face_up) == ((3 if two_player_setup == "three-up" else 1) if two else 0)
    assert len(hands) == players
    dealt = [hands[(first + i) % players] for i in range(players)]
    top = [*aside, *face_up, *dealt, *draws]
    return new_match(ruleset, players, seed=seed, first_seat=first,
                     deck=build_deck(ruleset, top), two_player_setup=two_player_setup,
                     tokens_to_win=tokens_to_win)


def play(card: str, target: int | None = None, guess: str | None = None) -> Action:
    """``play("guard", 1, "priest")``: a play action by card names."""
    return Action.play(Card.parse(card), target=target,
                       guess=None if guess is None else Card.parse(guess))


def ret(keep: str, *bottom: str) -> Action:
    """``ret("king", "guard", "spy")``: a chancellor return (``bottom`` top to bottom)."""
    return Action.chancellor_return(Card.parse(keep), [Card.parse(c) for c in bottom])


def run(state: MatchState, *actions: Action) -> tuple[MatchState, list[Event]]:
    """Apply ``actions`` in order; return the final state and every event they produced."""
    events: list[Event] = []
    for a in actions:
        state, evs = apply(state, a)
        events += evs
    return state, events


def history(state: MatchState, *actions: Action) -> list[MatchState]:
    """The state before and after each action: ``[state, after_1, after_2, ...]``."""
    out = [state]
    for a in actions:
        out.append(apply(out[-1], a)[0])
    return out


def names(cards: Sequence[int]) -> list[str]:
    return [NAMES[c] for c in cards]


def hands(state: MatchState) -> list[list[str]]:
    """Every seat's hand by card names."""
    return [names(h) for h in state.hands]


def discards(state: MatchState) -> list[list[str]]:
    return [names(d) for d in state.discards]


def ev(e: Event) -> dict[str, Any]:
    """An event as one flat dict: its type, its data, and ``to`` (only if private)."""
    d: dict[str, Any] = {"type": e.type, **e.data}
    if e.to is not None:
        d["to"] = list(e.to)
    return d


def evs(events: Sequence[Event], *, stop: str | None = None) -> list[dict[str, Any]]:
    """:func:`ev` of each event; with ``stop``, up to and including the first of that type."""
    out = []
    for e in events:
        out.append(ev(e))
        if e.type == stop:
            break
    return out


def refused(code: str, fn: Callable[..., object], *args: Any, **kwargs: Any) -> str:
    """Assert that ``fn(*args, **kwargs)`` raises ``EngineError(code)``; return its message."""
    with pytest.raises(EngineError) as info:
        fn(*args, **kwargs)
    assert info.value.code == code, info.value
    assert info.value.message
    return info.value.message


def dumps(data: Any) -> str:
    """The canonical bytes of a view (R32 compares these)."""
    return json.dumps(data, sort_keys=True)


def without_legal(view: dict[str, Any]) -> str:
    """A view's JSON text without its legal actions (whose guard guesses name every card)."""
    return dumps({k: v for k, v in view.items() if k != "legal_actions"})
