"""The rules (R5-R28): match setup, legal actions, applying actions, rounds, forfeits.

Checking and applying are separate steps: :func:`legal_actions` lists what the player to act may
do, in a canonical order; :func:`apply` refuses anything not in that list and otherwise returns a
new state and the events it produced. What each card allows and does comes from the card table
(``cards.CARDS``) and its effect function (``effects``); nothing here names a particular card.

>>> from .options import new_match
>>> s = new_match("classic", 2, seed=7, first_seat=0,
...               deck=["guard"] * 5 + ["priest", "priest", "baron", "baron", "handmaid",
...                     "handmaid", "prince", "prince", "king", "countess", "princess"])
>>> s.face_up, s.hands  # aside a guard, 3 guards face up, deal guard and priest, 0 draws a priest
([1, 1, 1], [[1, 2], [2]])
>>> legal_actions(s)[:2]
[Action(type='play', card=1, target=1, guess=2, keep=None, bottom=None), \
Action(type='play', card=1, target=1, guess=3, keep=None, bottom=None)]
>>> s2, events = apply(s, Action.play(Card.GUARD, target=1, guess=Card.PRIEST))
>>> [e.type for e in events][:3], s2.tokens, s2.round  # the hit ends round 1 at once
(['play', 'eliminated', 'round_end'], [1, 0], 2)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from hashlib import sha512
from itertools import permutations
from random import Random
from typing import Any, Final

from .actions import CHANCELLOR_RETURN, PLAY, Action
from .cards import CARDS, NAMES, RULESETS, Card, Ruleset, Target
from .effects import EFFECTS, eliminate, emit
from .errors import (
    AlreadyForfeited,
    IllegalAction,
    InvalidSeat,
    InvalidState,
    MalformedAction,
    MatchOver,
    NotYourTurn,
)
from .events import Event
from .state import ACTIVE, FINISHED, PHASE_CHANCELLOR, PHASE_PLAY, MatchState, RoundResult

TWO_PLAYER_SETUPS = ("three-up", "three-down-one-up")
#: ``tokens_to_win`` may be set from 1 to this (the ruleset's table is the default).
MAX_TOKENS_TO_WIN = 20

# Module constants are Final: the compiled build keeps them in C variables instead of looking
# each one up in the module's dict at every use.
_N_CARDS: Final = len(NAMES)
if _N_CARDS > 256:  # _legal packs two card ids into 8 bits each
    raise ImportError("more than 256 cards: widen the legal-actions key in rules._legal")

# Per card id, from the table (tuples indexed by id: the hot paths read them, not the specs).
_TARGET: Final[tuple[Target, ...]] = tuple(CARDS[c].target for c in Card)
_GUESSES: Final[tuple[bool, ...]] = tuple(CARDS[c].guesses for c in Card)
_FORCED_WITH: Final[tuple[frozenset[int], ...]] = tuple(
    frozenset(int(x) for x in CARDS[c].forced_with) for c in Card)
_FATAL: Final[tuple[bool, ...]] = tuple(CARDS[c].fatal for c in Card)
_EFFECT: Final = tuple(EFFECTS[int(c)] for c in Card)
_CARD_TYPES: Final = frozenset({int, Card})
_TARGET_TYPES: Final = frozenset({int, type(None)})
_GUESS_TYPES: Final = frozenset({int, Card, type(None)})
_BONUS: Final[tuple[int, ...]] = tuple(int(c) for c in Card if CARDS[c].bonus)
_NAMES: Final = NAMES
_RULESETS: Final = RULESETS
_ACTION: Final = Action
_ACTIVE: Final = ACTIVE
_PHASE_PLAY: Final = PHASE_PLAY
# The audience of a private event for one seat, shared: a tuple fewer per deal and per draw.
_SOLO: Final[tuple[tuple[int], ...]] = tuple((i,) for i in range(64))


# --------------------------------------------------------------------------- setup


# (i, i + 1, bit length of i + 1) for i from size - 1 down to 1: the steps of random.shuffle
_SHUFFLE_STEPS: Final[dict[int, tuple[tuple[int, int, int], ...]]] = {}


def seeded(seed: str) -> Random:
    """The generator ``Random(seed)`` starts from, seeded as ``Random.seed`` seeds from a string
    (version 2: the text and its SHA-512 as one integer), from that integer: an integer seed
    goes straight to the C generator, without the string's conversion in Python.

    >>> seeded("s:3").getrandbits(32) == Random("s:3").getrandbits(32)
    True
    """
    raw = seed.encode()
    return Random(int.from_bytes(raw + sha512(raw).digest(), "big"))


def randbelow(seed: str, n: int) -> int:
    """``Random(seed).randrange(n)`` (``n > 0``), the same draw; ``seq[randbelow(seed,
    len(seq))]`` is ``Random(seed).choice(seq)``.

    >>> all(randbelow(f"m:{i}", n) == Random(f"m:{i}").randrange(n)
    ...     == Random(f"m:{i}").choice(range(n)) for i in range(50) for n in (1, 2, 3, 4, 6))
    True
    """
    bits = seeded(seed).getrandbits
    k = n.bit_length()  # as random.Random._randbelow_with_getrandbits (Python 3.11)
    r = bits(k)
    while r >= n:
        r = bits(k)
    return r


def shuffled(deck: list[int], seed: str) -> list[int]:
    """``Random(seed).shuffle(deck)``, the same draws in the same order (so every stored seed
    replays identically), written out: the library's ``shuffle`` calls ``_randbelow`` once per
    card, and the calls cost a fifth of a short 2-player round. The generator is
    :func:`seeded`'s.

    >>> deck = list(range(21)); other = deck[:]; Random("s:3").shuffle(other)
    >>> shuffled(deck, "s:3") == other
    True
    >>> def library(seed, n):
    ...     d = list(range(n)); Random(seed).shuffle(d); return d
    >>> all(shuffled(list(range(n)), s) == library(s, n)
    ...     for s in ("x:1", "\u00e9t\u00e9:2", "", "9" * 300) for n in (2, 16, 21))
    True
    """
    steps = _SHUFFLE_STEPS.get(len(deck))
    if steps is None:
        steps = _SHUFFLE_STEPS[len(deck)] = tuple(
            (i, i + 1, (i + 1).bit_length()) for i in reversed(range(1, len(deck))))
    bits = seeded(seed).getrandbits
    for i, n, k in steps:
        j = bits(k)
        while j >= n:
            j = bits(k)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def start_round(s: MatchState) -> None:
    rs = _RULESETS[s.ruleset]
    rnd = s.round = s.round + 1
    if rnd == 1 and s.deck_order is not None:
        deck = s.deck_order[:]
    else:
        deck = shuffled(list(rs.base_deck), f"{s.seed}:{rnd}")
    n = s.players
    events = s.events
    seq = s.round_start_seq = len(events)
    names = _NAMES
    log = s.log
    if log:
        # The shuffled order, for the record only: nobody sees it while the match runs (R31).
        events.append(Event(seq, rnd, "deck", {"deck": [names[c] for c in deck]}, ()))
    s.aside = [deck[0]]
    if n == 2:
        if s.two_player_setup == "three-up":
            face_up = deck[1:4]
            del deck[:4]
        else:
            s.aside += deck[1:4]
            face_up = deck[4:5]
            del deck[:5]
    else:
        face_up = []
        del deck[0]
    s.face_up = face_up
    forfeited = s.forfeited
    hands: list[list[int]] = [[] for _ in range(n)]
    s.hands = hands
    s.discards = [[] for _ in range(n)]
    s.protected = [False] * n
    s.eliminated = forfeited[:]  # R27: forfeited players sit the round out
    first = s.round_first
    s.turn_no = 0
    s.phase = _PHASE_PLAY
    if log:
        events.append(Event(seq + 1, rnd, "round_start", {
            "first": first, "face_up": [names[c] for c in face_up],
            "deck_count": len(deck) - n + forfeited.count(True), "tokens": s.tokens[:]}, None))
    for i in range(n):
        seat = (first + i) % n
        if not forfeited[seat]:
            card = deck.pop(0)
            hands[seat] = [card]
            if log:
                events.append(Event(len(events), rnd, "dealt",
                                    {"seat": seat, "card": names[card]},
                                    _SOLO[seat] if seat < 64 else (seat,)))
    s.deck = deck
    _start_turn(s, first)


def _start_turn(s: MatchState, seat: int) -> None:
    s.turn = seat
    s.protected[seat] = False  # R9
    turn_no = s.turn_no = s.turn_no + 1
    deck = s.deck
    card = deck.pop(0)
    s.hands[seat].append(card)
    if not s.log:
        return
    events = s.events
    seq = len(events)
    rnd = s.round
    events += (
        Event(seq, rnd, "turn", {"seat": seat, "turn": turn_no, "deck_count": len(deck)},
              None),
        Event(seq + 1, rnd, "drew", {"seat": seat, "card": _NAMES[card]},
              _SOLO[seat] if seat < 64 else (seat,)))


# --------------------------------------------------------------------------- legal actions

# The legal actions of a turn: (actions, {action: the same action}, wire dicts, {card: its
# actions}). They depend only on the ruleset, the seat, the hand and the seats it may target
# (R9, R15, R20a), which repeat across states and matches: a cache hit skips building lists.
_Legal = tuple[tuple[Action, ...], dict[Action, Action], tuple[dict[str, Any], ...],
               dict[int, tuple[Action, ...]]]
# ruleset name -> {seat | low card << 8 | high card << 16 | targets bitmask << 24: legal}; an
# int key hashes for free, where a tuple of the same facts cost a tenth of a turn.
_PLAY_CACHE: Final[dict[str, dict[int, _Legal]]] = {}
_RETURN_CACHE: Final[dict[tuple[int, ...], _Legal]] = {}  # sorted hand -> chancellor returns
_CACHE_BOUND: Final = 100_000  # custom rulesets and many seats add up: start over past this


def _targets(s: MatchState, me: int) -> tuple[int, ...]:
    elim, prot = s.eliminated, s.protected
    return tuple([i for i in range(s.players) if i != me and not elim[i] and not prot[i]])


def _legal(s: MatchState) -> _Legal:
    version = len(s.events)
    me = s.turn
    hand = s.hands[me]
    # Current while no event was added and the hand is the same (a search that deals sampled
    # hands into a state in place, without events, still gets fresh answers).
    if s.memo_version == version and s.memo_hand == hand:
        return s.legal_memo  # type: ignore[no-any-return]
    hit: _Legal | None
    if s.phase == _PHASE_PLAY:
        lo, hi = hand
        if lo > hi:
            lo, hi = hi, lo
        elim, prot = s.eliminated, s.protected
        mask = 0
        for i in range(s.players):
            if i != me and not elim[i] and not prot[i]:
                mask |= 1 << i
        key = me | lo << 8 | hi << 16 | mask << 24 if me < 256 else -1
        cache = _PLAY_CACHE.get(s.ruleset)
        if cache is None or len(cache) > _CACHE_BOUND:
            cache = _PLAY_CACHE[s.ruleset] = {}
        hit = cache.get(key) if key >= 0 else None
        if hit is None:
            others = tuple([i for i in range(s.players) if mask >> i & 1])
            hit = _tables(_play_options(_RULESETS[s.ruleset], me, lo, hi, others))
            if key >= 0:
                cache[key] = hit
    else:
        held = tuple(sorted(hand))
        hit = _RETURN_CACHE.get(held)
        if hit is None:
            if len(_RETURN_CACHE) > _CACHE_BOUND:
                _RETURN_CACHE.clear()
            hit = _RETURN_CACHE[held] = _tables(_chancellor_options(held))
    s.memo_version = version
    s.memo_hand = hand[:]
    s.legal_memo = hit
    return hit


def _tables(acts: tuple[Action, ...]) -> _Legal:
    by_card: dict[int, list[Action]] = {}
    for act in acts:
        by_card.setdefault(act.card if act.card is not None else act.keep or 0, []).append(act)
    return (acts, {x: x for x in acts}, tuple(x.to_dict() for x in acts),
            {c: tuple(v) for c, v in by_card.items()})


def _play_options(rs: Ruleset, me: int, lo: int, hi: int,
                  others: tuple[int, ...]) -> tuple[Action, ...]:
    """The plays of a hand ``lo <= hi`` (card ids) that may target ``others``: each card of the
    hand in card order, then target seat, then guess (R10-R12, R20a)."""
    if hi in _FORCED_WITH[lo]:
        return (Action(PLAY, lo),)  # R11
    if lo in _FORCED_WITH[hi]:
        return (Action(PLAY, hi),)
    guesses = [int(c) for c in rs.guessable]
    out: list[Action] = []
    for card in sorted({lo, hi}):
        kind = _TARGET[card]
        if kind is Target.NONE:
            targets: tuple[int, ...] = ()
        elif kind is Target.ANY:
            targets = tuple(sorted(others + (me,)))
        else:
            targets = others
        if not targets:
            out.append(Action(PLAY, card))  # no target, or nobody to choose (R20a)
        elif _GUESSES[card]:
            out += [Action(PLAY, card, t, g) for t in targets for g in guesses if g != card]
        else:
            out += [Action(PLAY, card, t) for t in targets]
    return tuple(out)


def _chancellor_options(hand: tuple[int, ...]) -> tuple[Action, ...]:
    out: list[Action] = []
    for keep in sorted(set(hand)):
        rest = list(hand)
        rest.remove(keep)
        for order in sorted(set(permutations(rest))):
            out.append(Action(CHANCELLOR_RETURN, keep=keep, bottom=order))
    return tuple(out)


def legal_actions(state: MatchState) -> list[Action]:
    """Every legal action of the player to act, in canonical order; empty once the match is over.

    Order: by card (card order), then target seat, then guessed card; chancellor returns by the
    card kept, then the bottom order.
    """
    if state.status != _ACTIVE:
        return []
    return list(_legal(state)[0])


def legal_actions_by_card(state: MatchState) -> dict[int, tuple[Action, ...]]:
    """:func:`legal_actions` grouped by the card played (in the chancellor phase: by the card
    kept), each group in canonical order; empty once the match is over. Shared: don't mutate.

    The card-first random playout (a card uniformly from the hand, then one of its actions
    uniformly, which is a uniform target and then a uniform guess) reads it directly:

    >>> from .options import new_match
    >>> s = new_match("classic", 2, seed=7)
    >>> sorted(NAMES[c] for c in legal_actions_by_card(s)) == sorted(NAMES[c] for c in s.hands[s.turn])
    True
    """
    if state.status != _ACTIVE:
        return {}
    return _legal(state)[3]


def legal_action_dicts(state: MatchState) -> list[dict[str, Any]]:
    """:func:`legal_actions` in wire form (shared dicts: don't mutate them)."""
    if state.status != _ACTIVE:
        return []
    return list(_legal(state)[2])


def is_legal(state: MatchState, action: Action) -> bool:
    """Whether ``action`` is legal now for the player to act."""
    return state.status == _ACTIVE and _shape_error(action) is None \
        and action in _legal(state)[1]


def _is_card(c: object) -> bool:
    return (type(c) is int or type(c) is Card) and 0 <= c < _N_CARDS


def _shape_error(a: Action) -> str | None:
    """Why a directly built ``Action`` is malformed, else ``None``. ``Action.from_dict`` checks
    the wire form; this gives Python callers the same ``malformed_action`` instead of a crash
    (and keeps ``target=True``, equal to 1, out of the public log)."""
    # Read as plain objects: the compiled build would raise TypeError on reading a field of a
    # type other than its annotation, before any of these checks could say why.
    fields: tuple[object, ...] = a
    kind, card, target, guess, keep, bottom = fields
    if kind == PLAY:
        if not _is_card(card) or keep is not None or bottom is not None:
            return f"card: unknown card {card!r}" if keep is None and bottom is None \
                else "a play takes card, target and guess only"
        if target is not None and type(target) is not int:
            return "target must be an integer seat"
        if guess is not None and not _is_card(guess):
            return f"guess: unknown card {guess!r}"
        return None
    if kind == CHANCELLOR_RETURN:
        if card is not None or target is not None or guess is not None:
            return "a chancellor_return takes keep and bottom only"
        if not _is_card(keep):
            return f"keep: unknown card {keep!r}"
        if type(bottom) is not tuple or not all(_is_card(c) for c in bottom):
            return "bottom must be a tuple of cards"
        return None
    return f"type must be {PLAY!r} or {CHANCELLOR_RETURN!r}"


# --------------------------------------------------------------------------- applying


def apply(
    state: MatchState, action: Action | Mapping[str, Any], *, seat: object = None,
    timeout: bool = False,
) -> tuple[MatchState, list[Event]]:
    """Apply ``action`` for the player to act; return the new state and the new events.

    ``seat`` (optional) is who sends it: anyone else raises ``NotYourTurn``. ``timeout`` marks
    an action the server played for an absent player. The input state is not changed.
    """
    new = state.clone()
    return new, apply_inplace(new, action, seat=seat, timeout=timeout)


def apply_inplace(
    s: MatchState, action: Action | Mapping[str, Any], *, seat: object = None,
    timeout: bool = False,
) -> list[Event]:
    """Like :func:`apply` but changes ``s`` itself (faster; for simulations).

    ``seat`` is typed ``object`` because it is checked here: anything but a seat number of the
    match is ``InvalidSeat``, in the compiled build too (same for ``forfeit``)."""
    if s.status != _ACTIVE:
        raise MatchOver("the match is over")
    me = s.turn
    if seat is not None and seat != me:
        if type(seat) is not int or not 0 <= seat < s.players:
            raise InvalidSeat(f"no seat {seat!r} in this match")
        raise NotYourTurn(f"it is seat {me}'s turn, not seat {seat}'s")
    if not isinstance(action, _ACTION):
        action = Action.from_dict(action)
    events = s.events
    start = len(events)
    memo = s.legal_memo
    try:
        # This turn's legal actions, usually memoized by the caller's legal_actions: read
        # here rather than through _legal, a call fewer per action.
        if s.memo_version == start and memo is not None and s.memo_hand == s.hands[me]:
            # typed, so that the compiled build looks it up directly, not through a
            # method call on an object of unknown type
            canonical: dict[Action, Action] = memo[1]
            canon = canonical.get(action)
        else:
            canon = _legal(s)[1].get(action)
    except TypeError:  # unhashable fields (a list for bottom): malformed, reported below
        canon = None
    fields: tuple[object, ...] = action  # plain objects: see _shape_error
    if canon is not action and (  # not one of the engine's own action objects: its shape
            canon is None or canon.card is None or type(fields[1]) not in _CARD_TYPES
            or type(fields[2]) not in _TARGET_TYPES
            or type(fields[3]) not in _GUESS_TYPES):
        why = _shape_error(action)
        if why is not None:
            raise MalformedAction(why)
        if canon is None:
            raise IllegalAction(_explain(s, action))
    s.timeouts[me] = s.timeouts[me] + 1 if timeout else 0
    # Unpacked, not read by name: the compiled build reads a named field with a generic
    # attribute lookup, and an unpacking by index.
    # (canon is never None here: refused above)
    _kind, card, t, guess, _keep, _bottom = canon if canon is not None else action
    if card is not None:  # a play
        hand = s.hands[me]
        hand.remove(card)
        s.discards[me].append(card)
        data: dict[str, Any]
        if s.log:
            data = {"seat": me, "card": _NAMES[card]}
            if t is not None:
                data["target"] = t
            if timeout:
                data["timeout"] = True
        else:  # the effects add to it what a logged play event would show: nobody reads it
            data = {}
        if _EFFECT[card](s, me, t, guess, data):
            s.memo_version = -1
            return events[start:]  # the turn goes on (chancellor)
    else:
        _chancellor_return(s, me, canon if canon is not None else action, timeout)
    # _end_turn's usual case written here (a call fewer per action): the next seat's turn
    elim = s.eliminated
    if s.deck and elim.count(False) > 1:
        n = s.players
        seat = (me + 1) % n
        while elim[seat]:
            seat = (seat + 1) % n
        _start_turn(s, seat)
    else:
        _end_turn(s)
    # Without a log the version stays put: the memo of this turn's legal actions is dropped here
    s.memo_version = -1
    return events[start:]


def _chancellor_return(s: MatchState, me: int, action: Action, timeout: bool) -> None:
    keep, bottom = action.keep, action.bottom
    if keep is None or bottom is None:  # unreachable: legal returns have both
        raise MalformedAction("a chancellor_return needs keep and bottom")
    s.hands[me] = [keep]
    s.deck.extend(bottom)
    s.phase = _PHASE_PLAY
    if not s.log:
        return
    data: dict[str, Any] = {"seat": me, "count": len(bottom)}
    if timeout:
        data["timeout"] = True
    emit(s, "chancellor_return", data)
    emit(s, "chancellor_returned", {"seat": me, "keep": _NAMES[keep],
                                    "bottom": [_NAMES[c] for c in bottom],
                                    "turn": s.turn_no}, (me,))


def _end_turn(s: MatchState) -> None:
    elim = s.eliminated
    if elim.count(False) <= 1:
        _end_round(s, [i for i in range(s.players) if not elim[i]], "last_standing")
    elif not s.deck:
        _end_round(s, _showdown(s), "showdown")
    else:
        n = s.players
        seat = (s.turn + 1) % n
        while elim[seat]:
            seat = (seat + 1) % n
        _start_turn(s, seat)


def _showdown(s: MatchState) -> list[int]:
    rs = _RULESETS[s.ruleset]
    values = rs.values
    alive = [p for p in range(s.players) if not s.eliminated[p]]
    best = max(values[s.hands[p][0]] for p in alive)
    tied = [p for p in alive if values[s.hands[p][0]] == best]
    if len(tied) > 1 and rs.discard_tiebreak:  # R22
        sums = {p: sum(values[c] for c in s.discards[p]) for p in tied}
        top = max(sums.values())
        tied = [p for p in tied if sums[p] == top]
    return tied  # R23: remaining ties all win


def _end_round(s: MatchState, winners: list[int], reason: str) -> None:
    rs = _RULESETS[s.ruleset]
    n = s.players
    spy = None
    if rs.spy_bonus:  # R24
        spies = [p for p in range(n) if not s.eliminated[p]
                 and any(c in s.discards[p] for c in _BONUS)]
        if len(spies) == 1:
            spy = spies[0]
    tokens = s.tokens
    for p in winners:  # R25
        tokens[p] += 1
    if spy is not None:
        tokens[spy] += 1
    names = _NAMES
    result: RoundResult = {
        "round": s.round, "reason": reason, "winners": winners, "spy_bonus": spy,
        # a hand holds one card at a round's end but after a forfeit in a chancellor's turn
        "hands": [[names[h[0]]] if len(h) == 1 else [names[c] for c in h] for h in s.hands],
        "set_aside": [names[c] for c in s.aside], "tokens": tokens[:],
    }
    s.rounds.append(result)
    if s.log:
        events = s.events
        # the same dict as the round's entry in s.rounds (both read-only): no copy
        events.append(Event(len(events), s.round, "round_end", result, None))  # type: ignore[arg-type]
    s.turn = -1
    s.phase = _PHASE_PLAY
    target = s.tokens_to_win
    if max(tokens) >= target:  # R26
        _finish(s, [p for p in range(n) if tokens[p] >= target], "tokens")
        return
    # R8: the winner starts; several winners draw lots from the seed.
    forfeited = s.forfeited
    if len(winners) == 1 and not forfeited[winners[0]]:
        candidates = winners
    else:
        candidates = [p for p in winners if not forfeited[p]] or \
                     [p for p in range(n) if not forfeited[p]]
    if len(candidates) == 1:
        s.round_first = candidates[0]
    else:
        s.round_first = candidates[randbelow(f"{s.seed}:{s.round}:first", len(candidates))]
    start_round(s)


def _finish(s: MatchState, winners: list[int], reason: str) -> None:
    s.status = FINISHED
    s.winners = winners
    s.turn = -1
    emit(s, "match_end", {"winners": winners, "reason": reason, "tokens": s.tokens[:],
                          "placings": placings(s)})


def placings(state: MatchState) -> list[int]:
    """R28: each seat's place (1 = first). Winners share first; the rest by tokens; forfeited last.

    >>> from .options import new_match
    >>> s = new_match("classic", 3, seed=1)
    >>> s.tokens, s.winners, s.forfeited = [5, 2, 2], [0], [False, False, True]
    >>> placings(s)
    [1, 2, 3]
    """
    keys = [(p in state.winners, not state.forfeited[p], state.tokens[p])
            for p in range(state.players)]
    return [1 + sum(1 for other in keys if other > k) for k in keys]


# --------------------------------------------------------------------------- forfeits, timeouts


def forfeit(state: MatchState, seat: object, *, reason: str = "resigned") -> tuple[MatchState,
                                                                                 list[Event]]:
    """R27: ``seat`` leaves the match (resigned or timed out). Returns the new state and events."""
    new = state.clone()
    return new, forfeit_inplace(new, seat, reason=reason)


def forfeit_inplace(s: MatchState, seat: object, *, reason: str = "resigned") -> list[Event]:
    """Like :func:`forfeit` but changes ``s`` itself."""
    if s.status != _ACTIVE:
        raise MatchOver("the match is over")
    if type(seat) is not int or not 0 <= seat < s.players:
        raise InvalidSeat(f"no seat {seat!r} in this match")
    if s.forfeited[seat]:
        raise AlreadyForfeited(f"seat {seat} has already forfeited")
    start = len(s.events)
    s.forfeited[seat] = True
    emit(s, "forfeit", {"seat": seat, "reason": reason})
    was_turn = s.turn == seat
    if not s.eliminated[seat]:
        eliminate(s, seat, "forfeit")
    remaining = [p for p in range(s.players) if not s.forfeited[p]]
    if len(remaining) == 1:
        _finish(s, remaining, "forfeit")
    elif was_turn:
        s.phase = _PHASE_PLAY
        _end_turn(s)
    elif s.eliminated.count(False) == 1:
        _end_round(s, [p for p in range(s.players) if not s.eliminated[p]], "last_standing")
    s.memo_version = -1
    return s.events[start:]


def timeout_action(state: MatchState) -> Action:
    """The action the server plays for an absent player (``timeout_policy: auto``).

    It depends on the hand only through the card it plays, which the play makes public anyway:
    its target and guess come from public information and the match's seeded generator, so the
    log of an automatic move tells nobody what the absent player kept (R31, R32).

    The rule, documented for bot authors: never play or discard a card that knocks its holder
    out (the princess) when anything else is legal; among the rest, play the lowest-valued card;
    at a seat drawn at random among those it may target, its own player only when nobody else can
    be chosen; a guesser (the guard) names a card drawn at random, each kind weighted by its
    copies not yet seen face up (discards and face-up cards; the own hand is not consulted),
    uniformly if none are left. A chancellor keeps the highest card and returns the others
    lowest first (the return is private). The draws come from ``Random("<seed>:auto:<version>")``,
    so a state without an event log (whose version stays put) has no automatic move:
    ``InvalidState``.
    """
    if not state.log:
        raise InvalidState("automatic moves are drawn from the event log's length: "
                           "this state keeps no log")
    acts = legal_actions(state)
    if not acts:
        raise MatchOver("the match is over")
    rs = _RULESETS[state.ruleset]
    values = rs.values
    me = state.turn
    if acts[0].type == CHANCELLOR_RETURN:
        return max(acts, key=lambda a: (values[a.keep or 0],
                                        [-values[c] for c in a.bottom or ()]))
    hand = state.hands[me]
    holds_fatal = any(_FATAL[c] for c in hand)
    safe = [a for a in acts if not _FATAL[a.card or 0]
            and not (a.target == me and holds_fatal)]
    pool = safe or acts
    card = min((a.card or 0 for a in pool), key=lambda c: (values[c], c))
    pool = [a for a in pool if a.card == card]
    rng = Random(f"{state.seed}:auto:{state.version}")
    targets = sorted({a.target for a in pool if a.target is not None and a.target != me}) or \
        sorted({a.target for a in pool if a.target is not None})
    if not targets:
        return pool[0]
    target = rng.choice(targets)
    pool = [a for a in pool if a.target == target]
    if len(pool) == 1:
        return pool[0]
    # a guess: weighted by the copies nobody has seen yet, from public piles only
    seen = Counter(c for d in state.discards for c in d)
    seen.update(state.face_up)
    weights = [max(rs.copies[a.guess or 0] - seen[a.guess or 0], 0) for a in pool]
    if not any(weights):
        weights = [1] * len(pool)
    return rng.choices(pool, weights)[0]


def apply_timeout(
    state: MatchState, *, policy: str = "auto", max_timeouts: int = 3,
) -> tuple[MatchState, list[Event]]:
    """The player to act ran out of time. ``auto`` plays :func:`timeout_action` for them; after
    ``max_timeouts`` consecutive timeouts, or with ``forfeit``, they forfeit (R27)."""
    if state.status != _ACTIVE:
        raise MatchOver("the match is over")
    seat = state.turn
    if policy == "forfeit" or state.timeouts[seat] + 1 >= max_timeouts:
        new = state.clone()
        new.timeouts[seat] += 1
        return new, forfeit_inplace(new, seat, reason="timeout")
    return apply(state, timeout_action(state), timeout=True)


# --------------------------------------------------------------------------- explanations


def _explain(s: MatchState, a: Action) -> str:
    """A human reason why ``a`` is not legal now (only built on refusal)."""
    me = s.turn
    hand = s.hands[me]
    rs = _RULESETS[s.ruleset]
    if s.phase == PHASE_CHANCELLOR:
        if a.type != CHANCELLOR_RETURN:
            return "you played a chancellor: post a chancellor_return (keep one, bottom the rest)"
        return (f"keep + bottom must be exactly your hand {[_NAMES[c] for c in sorted(hand)]}, "
                f"each once")
    if a.type != PLAY or a.card is None:
        return "a chancellor_return is only legal right after playing a chancellor"
    card = a.card
    if rs.copies[card] == 0:
        return f"there is no {_NAMES[card]} in ruleset {rs.name}"
    if card not in hand:
        return f"you don't hold a {_NAMES[card]}; your hand is {[_NAMES[c] for c in hand]}"
    for forced in hand:
        partners = _FORCED_WITH[forced] & set(hand)
        if partners and card != forced:
            return (f"with the {_NAMES[forced]} and a "
                    f"{' or '.join(_NAMES[c] for c in sorted(_FORCED_WITH[forced], reverse=True))}"
                    f" in hand you must play the {_NAMES[forced]} (R11)")
    others = _targets(s, me)
    kind = _TARGET[card]
    if kind is not Target.NONE:
        valid = others + (me,) if kind is Target.ANY else others
        if a.target is None:
            if valid:
                return f"the {_NAMES[card]} needs a target: one of {list(valid)}"
        elif a.target not in valid:
            if not 0 <= a.target < s.players:
                return f"no seat {a.target} in this match"
            if a.target == me:
                return "you can't target yourself with that card"
            if s.eliminated[a.target]:
                return f"seat {a.target} is out of the round"
            if s.protected[a.target]:
                return f"seat {a.target} is protected by the handmaid (R15)"
        elif not valid and a.target is not None:
            return "every other player is protected or out: play it without a target (R20a)"
    elif a.target is not None:
        return f"the {_NAMES[card]} takes no target"
    if _GUESSES[card] and a.target is not None:
        if a.guess is None:
            return f"a {_NAMES[card]} needs a guess"
        if _GUESSES[a.guess]:
            return f"a {_NAMES[card]} can't name the {_NAMES[a.guess]} (R12)"
        if rs.copies[a.guess] == 0:
            return f"there is no {_NAMES[a.guess]} in ruleset {rs.name} to name"
    elif a.guess is not None:
        return f"only a {' or '.join(_NAMES[c] for c in Card if _GUESSES[c])} with a target " \
               f"takes a guess"
    return "that action is not legal now"
