"""What each card does when played (R12-R20): one effect function per card of :data:`CARDS`.

An effect runs after ``rules`` has moved the played card from the hand to the discards and
checked the action is legal. It receives the state, the actor's seat, the target (``None``: the
card has no target, or nobody could be chosen: R20a, no effect) and the guess, and the ``play``
event's data, to which it adds what the play revealed before appending the event. It then
appends any private events (each a fact in the views, listed in the card's ``facts``) and returns
``True`` only when the turn goes on (the chancellor's return); otherwise ``rules`` ends the turn.

Adding a card: a row in ``cards.CARDS``, an id in ``cards.Card``, and one function here decorated
with ``@effect(Card.X)`` (``docs/extending.md`` walks through it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .cards import CARDS, NAMES, RULESETS, Card
from .events import Event
from .state import PHASE_CHANCELLOR, MatchState

#: ``effect(state, seat, target, guess, data) -> turn goes on``
Effect = Callable[[MatchState, int, "int | None", "int | None", dict[str, Any]], bool]

EFFECTS: dict[int, Effect] = {}

# Final: the compiled build keeps these in C variables, not in the module's dict.
_NAMES: Final = NAMES
_RULESETS: Final = RULESETS
_FATAL: Final[tuple[bool, ...]] = tuple(CARDS[c].fatal for c in Card)
_CHANCELLOR_DRAWS: Final = CARDS[Card.CHANCELLOR].draws


def effect(card: Card) -> Callable[[Effect], Effect]:
    """Register ``fn`` as ``card``'s effect."""
    def register(fn: Effect) -> Effect:
        EFFECTS[int(card)] = fn
        return fn
    return register


# The effects append their play event themselves, as emit would: a call fewer per action.
def emit(s: MatchState, kind: str, data: dict[str, Any],
         to: tuple[int, ...] | None = None) -> None:
    if s.log:
        events = s.events
        events.append(Event(len(events), s.round, kind, data, to))


def eliminate(s: MatchState, seat: int, reason: str) -> None:
    """R21: ``seat`` is out of the round; their hand is revealed and counts as discarded."""
    cards = s.hands[seat]
    s.hands[seat] = []
    s.discards[seat].extend(cards)
    s.eliminated[seat] = True
    s.protected[seat] = False
    if s.log:
        emit(s, "eliminated", {"seat": seat, "reason": reason,
                               "revealed": [_NAMES[c] for c in cards]})


@effect(Card.SPY)
@effect(Card.COUNTESS)
def _no_effect(s: MatchState, me: int, t: int | None, guess: int | None,
               data: dict[str, Any]) -> bool:
    if s.log:
        ev = s.events
        ev.append(Event(len(ev), s.round, "play", data, None))
    return False


@effect(Card.GUARD)
def _guard(s: MatchState, me: int, t: int | None, guess: int | None,
           data: dict[str, Any]) -> bool:
    if t is None or guess is None:
        if s.log:
            ev = s.events
            ev.append(Event(len(ev), s.round, "play", data, None))
        return False
    data["guess"] = _NAMES[guess]
    hit = s.hands[t][0] == guess
    data["hit"] = hit
    if s.log:
        ev = s.events
        ev.append(Event(len(ev), s.round, "play", data, None))
    if hit:
        eliminate(s, t, "guard")
    return False


@effect(Card.PRIEST)
def _priest(s: MatchState, me: int, t: int | None, guess: int | None,
            data: dict[str, Any]) -> bool:
    if s.log:
        ev = s.events
        ev.append(Event(len(ev), s.round, "play", data, None))
    if t is not None:
        if s.log:
            emit(s, "priest_saw", {"seat": me, "target": t, "card": _NAMES[s.hands[t][0]],
                                   "turn": s.turn_no}, (me,))
    return False


@effect(Card.BARON)
def _baron(s: MatchState, me: int, t: int | None, guess: int | None,
           data: dict[str, Any]) -> bool:
    if t is None:
        if s.log:
            ev = s.events
            ev.append(Event(len(ev), s.round, "play", data, None))
        return False
    mine, theirs = s.hands[me][0], s.hands[t][0]
    values = _RULESETS[s.ruleset].values
    vm, vt = values[mine], values[theirs]
    loser = t if vm > vt else me if vt > vm else None
    data["loser"] = loser
    if s.log:
        ev = s.events
        ev.append(Event(len(ev), s.round, "play", data, None))
    if s.log:
        emit(s, "baron_compared", {"seat": me, "target": t, "card": _NAMES[mine],
                                   "target_card": _NAMES[theirs], "turn": s.turn_no}, (me, t))
    if loser is not None:
        eliminate(s, loser, "baron")
    return False


@effect(Card.HANDMAID)
def _handmaid(s: MatchState, me: int, t: int | None, guess: int | None,
              data: dict[str, Any]) -> bool:
    s.protected[me] = True
    if s.log:
        ev = s.events
        ev.append(Event(len(ev), s.round, "play", data, None))
    return False


@effect(Card.PRINCE)
def _prince(s: MatchState, me: int, t: int | None, guess: int | None,
            data: dict[str, Any]) -> bool:
    if t is None:  # not reached: the prince can always target its own player
        if s.log:
            ev = s.events
            ev.append(Event(len(ev), s.round, "play", data, None))
        return False
    hand = s.hands[t]
    discarded = hand.pop()
    s.discards[t].append(discarded)
    data["discarded"] = _NAMES[discarded]
    if _FATAL[discarded]:
        if s.log:
            ev = s.events
            ev.append(Event(len(ev), s.round, "play", data, None))
        eliminate(s, t, _NAMES[discarded])
        return False
    if s.deck:
        new = s.deck.pop(0)
        data["drew_from"] = "deck"
    else:
        new = s.aside.pop(0)  # the R5 card
        data["drew_from"] = "set_aside"
    hand.append(new)
    if s.log:
        ev = s.events
        ev.append(Event(len(ev), s.round, "play", data, None))
    if s.log:
        emit(s, "prince_drew", {"seat": t, "by": me, "card": _NAMES[new], "turn": s.turn_no}, (t,))
    return False


@effect(Card.CHANCELLOR)
def _chancellor(s: MatchState, me: int, t: int | None, guess: int | None,
                data: dict[str, Any]) -> bool:
    if s.log:
        ev = s.events
        ev.append(Event(len(ev), s.round, "play", data, None))
    n = min(_CHANCELLOR_DRAWS, len(s.deck))
    data["drew"] = n  # the play event shares this dict: it shows how many were drawn
    if not n:
        return False
    drawn = s.deck[:n]
    del s.deck[:n]
    s.hands[me].extend(drawn)
    s.phase = PHASE_CHANCELLOR
    if s.log:
        emit(s, "chancellor_drew", {"seat": me, "turn": s.turn_no,
                                    "cards": [_NAMES[c] for c in drawn]}, (me,))
    return True


@effect(Card.KING)
def _king(s: MatchState, me: int, t: int | None, guess: int | None,
          data: dict[str, Any]) -> bool:
    if s.log:
        ev = s.events
        ev.append(Event(len(ev), s.round, "play", data, None))
    if t is not None:
        hands = s.hands
        mine, theirs = hands[me][0], hands[t][0]
        hands[me], hands[t] = hands[t], hands[me]
        if s.log:
            emit(s, "king_swapped", {"seat": me, "target": t, "gave": _NAMES[mine],
                                     "received": _NAMES[theirs], "turn": s.turn_no}, (me, t))
    return False


@effect(Card.PRINCESS)
def _princess(s: MatchState, me: int, t: int | None, guess: int | None,
              data: dict[str, Any]) -> bool:
    if s.log:
        ev = s.events
        ev.append(Event(len(ev), s.round, "play", data, None))
    eliminate(s, me, "princess")  # R20
    return False


_missing = [c for c in CARDS if int(c) not in EFFECTS]
if _missing:  # a card row without its effect would fail at its first play: fail at import
    raise ImportError(f"cards without an effect function: {_missing}")
