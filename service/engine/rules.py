"""The rules (R5-R28): match setup, legal actions, applying actions, rounds, forfeits.

Checking and applying are separate steps: :func:`legal_actions` lists what the player to act may
do, in a canonical order; :func:`apply` refuses anything not in that list and otherwise returns a
new state and the events it produced.

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

import secrets
from collections import Counter
from collections.abc import Mapping, Sequence
from random import Random
from typing import Any

from .actions import CHANCELLOR_RETURN, PLAY, Action
from .cards import BY_NAME, NAMES, RULESETS, Card, get_ruleset
from .errors import EngineError
from .events import Event
from .state import ACTIVE, FINISHED, PHASE_CHANCELLOR, PHASE_PLAY, MatchState

TWO_PLAYER_SETUPS = ("three-up", "three-down-one-up")

SPY, GUARD, PRIEST, BARON, HANDMAID, PRINCE, CHANCELLOR, KING, COUNTESS, PRINCESS = range(10)
_TARGETED = frozenset({GUARD, PRIEST, BARON, KING})


# --------------------------------------------------------------------------- setup


def new_match(
    ruleset: str = "classic",
    players: int = 2,
    *,
    seed: str | int | None = None,
    tokens_to_win: int | None = None,
    first_seat: int | None = None,
    deck: Sequence[str | int] | None = None,
    two_player_setup: str = "three-up",
) -> MatchState:
    """Create a match and deal its first round (R5-R8).

    ``deck`` fixes round 1's order, top card first (names or card ids); later rounds are shuffled
    from ``seed``. Bad options raise ``EngineError('invalid_options')``.
    """
    rs = get_ruleset(ruleset)
    if type(players) is not int or not rs.min_players <= players <= rs.max_players:
        raise EngineError(
            "invalid_options",
            f"{rs.name} is for {rs.min_players} to {rs.max_players} players, not {players!r}",
        )
    if tokens_to_win is None:
        tokens_to_win = rs.tokens_to_win(players)
    elif type(tokens_to_win) is not int or not 1 <= tokens_to_win <= 20:
        raise EngineError("invalid_options", "tokens_to_win must be an integer from 1 to 20")
    if first_seat is not None and (type(first_seat) is not int
                                   or not 0 <= first_seat < players):
        raise EngineError("invalid_options", f"first_seat must be a seat from 0 to {players - 1}")
    if two_player_setup not in TWO_PLAYER_SETUPS:
        raise EngineError("invalid_options", f"two_player_setup must be one of {TWO_PLAYER_SETUPS}")
    order = None if deck is None else _check_deck(rs.name, deck)
    if seed is None:
        seed = secrets.token_hex(8)
    if not isinstance(seed, (str, int)) or isinstance(seed, bool):
        raise EngineError("invalid_options", "seed must be a string or an integer")
    try:
        str(seed).encode()
    except UnicodeEncodeError as e:  # a lone surrogate can't seed random.Random
        raise EngineError("invalid_options", "seed must be valid Unicode text") from e
    s = MatchState(
        ruleset=rs.name, players=players, seed=str(seed), tokens_to_win=tokens_to_win,
        two_player_setup=two_player_setup, first_seat=first_seat, deck_order=order,
        tokens=[0] * players, forfeited=[False] * players, timeouts=[0] * players,
    )
    if first_seat is None:
        first_seat = Random(f"{s.seed}:first").randrange(players)
    s.round_first = first_seat
    _start_round(s)
    return s


def _check_deck(ruleset: str, deck: Sequence[str | int]) -> list[int]:
    rs = RULESETS[ruleset]
    if isinstance(deck, (str, bytes)) or not isinstance(deck, Sequence):
        raise EngineError("invalid_options", "deck must be a list of card names")
    order: list[int] = []
    for c in deck:
        if isinstance(c, str) and c in BY_NAME:
            order.append(int(BY_NAME[c]))
        elif type(c) is int and 0 <= c < len(NAMES) or isinstance(c, Card):
            order.append(int(c))
        else:
            raise EngineError("invalid_options", f"deck: unknown card {c!r}")
    want, got = Counter(rs.deck()), Counter(order)
    if want != got:
        diffs = []
        for c in sorted(set(want) | set(got)):
            if want[c] != got[c]:
                diffs.append(f"{got[c]} {NAMES[c]} (needs {want[c]})")
        raise EngineError(
            "invalid_options",
            f"deck must be exactly the {rs.deck_size} cards of {rs.name}; it has "
            + ", ".join(diffs),
        )
    return order


def _emit(s: MatchState, kind: str, data: dict[str, Any],
          to: tuple[int, ...] | None = None) -> None:
    s.events.append(Event(len(s.events), s.round, kind, data, to))


def _start_round(s: MatchState) -> None:
    rs = RULESETS[s.ruleset]
    s.round += 1
    if s.round == 1 and s.deck_order is not None:
        deck = s.deck_order[:]
    else:
        deck = rs.deck()
        Random(f"{s.seed}:{s.round}").shuffle(deck)
    n = s.players
    s.round_start_seq = len(s.events)
    # The shuffled order, for the record only: nobody sees it while the match runs (R31).
    _emit(s, "deck", {"deck": [NAMES[c] for c in deck]}, ())
    s.aside = [deck.pop(0)]
    s.face_up = []
    if n == 2:
        if s.two_player_setup == "three-up":
            s.face_up = deck[:3]
            del deck[:3]
        else:
            s.aside += deck[:3]
            s.face_up = deck[3:4]
            del deck[:4]
    s.hands = [[] for _ in range(n)]
    s.discards = [[] for _ in range(n)]
    s.protected = [False] * n
    s.eliminated = s.forfeited[:]  # R27: forfeited players sit the round out
    first = s.round_first
    dealt: list[int] = []
    for i in range(n):
        seat = (first + i) % n
        if not s.forfeited[seat]:
            s.hands[seat] = [deck.pop(0)]
            dealt.append(seat)
    s.deck = deck
    s.turn_no = 0
    s.phase = PHASE_PLAY
    _emit(s, "round_start", {"first": first, "face_up": [NAMES[c] for c in s.face_up],
                             "deck_count": len(deck), "tokens": s.tokens[:]})
    for seat in dealt:
        _emit(s, "dealt", {"seat": seat, "card": NAMES[s.hands[seat][0]]}, (seat,))
    _start_turn(s, first)


def _start_turn(s: MatchState, seat: int) -> None:
    s.turn = seat
    s.protected[seat] = False  # R9
    s.turn_no += 1
    card = s.deck.pop(0)
    s.hands[seat].append(card)
    events = s.events
    events.append(Event(len(events), s.round, "turn",
                        {"seat": seat, "turn": s.turn_no, "deck_count": len(s.deck)}))
    events.append(Event(len(events), s.round, "drew", {"seat": seat, "card": NAMES[card]},
                        (seat,)))


# --------------------------------------------------------------------------- legal actions

# (ruleset, seat, hand, targets) -> (actions, set of actions, wire dicts)
_Legal = tuple[tuple[Action, ...], frozenset[Action], tuple[dict[str, Any], ...]]
_LEGAL_CACHE: dict[tuple[Any, ...], _Legal] = {}


def _targets(s: MatchState, me: int) -> tuple[int, ...]:
    elim, prot = s.eliminated, s.protected
    return tuple(i for i in range(s.players) if i != me and not elim[i] and not prot[i])


def _legal(s: MatchState) -> _Legal:
    me = s.turn
    hand = s.hands[me]
    if s.phase == PHASE_CHANCELLOR:
        key: tuple[Any, ...] = (CHANCELLOR, tuple(sorted(hand)))
    else:
        a, b = hand
        key = (s.ruleset, me, a, b, _targets(s, me)) if a <= b else \
              (s.ruleset, me, b, a, _targets(s, me))
    hit = _LEGAL_CACHE.get(key)
    if hit is None:
        if s.phase == PHASE_CHANCELLOR:
            acts = _chancellor_options(key[1])
        else:
            acts = _play_options(key[0], me, key[2], key[3], key[4])
        hit = _LEGAL_CACHE[key] = (acts, frozenset(acts), tuple(a.to_dict() for a in acts))
    return hit


def _play_options(ruleset: str, me: int, lo: int, hi: int,
                  others: tuple[int, ...]) -> tuple[Action, ...]:
    if lo == COUNTESS and hi in (PRINCE, KING) or hi == COUNTESS and lo in (PRINCE, KING):
        return (Action(PLAY, COUNTESS),)  # R11
    guesses = [int(c) for c in RULESETS[ruleset].guessable]
    out: list[Action] = []
    for card in sorted({lo, hi}):
        if card == GUARD:
            if others:
                out += [Action(PLAY, GUARD, t, g) for t in others for g in guesses]
            else:
                out.append(Action(PLAY, GUARD))  # R20a
        elif card in _TARGETED:
            out += [Action(PLAY, card, t) for t in others] if others else [Action(PLAY, card)]
        elif card == PRINCE:
            out += [Action(PLAY, PRINCE, t) for t in sorted(others + (me,))]
        else:
            out.append(Action(PLAY, card))
    return tuple(out)


def _chancellor_options(hand: tuple[int, ...]) -> tuple[Action, ...]:
    from itertools import permutations

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
    if state.status != ACTIVE:
        return []
    return list(_legal(state)[0])


def legal_action_dicts(state: MatchState) -> list[dict[str, Any]]:
    """:func:`legal_actions` in wire form (shared dicts: don't mutate them)."""
    if state.status != ACTIVE:
        return []
    return list(_legal(state)[2])


def is_legal(state: MatchState, action: Action) -> bool:
    """Whether ``action`` is legal now for the player to act."""
    return state.status == ACTIVE and _shape_error(action) is None \
        and action in _legal(state)[1]


def _is_card(c: object) -> bool:
    return (type(c) is int or type(c) is Card) and 0 <= c < len(NAMES)


def _shape_error(a: Action) -> str | None:
    """Why a directly built ``Action`` is malformed, else ``None``. ``Action.from_dict`` checks
    the wire form; this gives Python callers the same ``malformed_action`` instead of a crash
    (and keeps ``target=True``, equal to 1, out of the public log)."""
    if a.type == PLAY:
        if not _is_card(a.card) or a.keep is not None or a.bottom is not None:
            return f"card: unknown card {a.card!r}" if a.keep is None and a.bottom is None \
                else "a play takes card, target and guess only"
        if a.target is not None and type(a.target) is not int:
            return "target must be an integer seat"
        if a.guess is not None and not _is_card(a.guess):
            return f"guess: unknown card {a.guess!r}"
        return None
    if a.type == CHANCELLOR_RETURN:
        if a.card is not None or a.target is not None or a.guess is not None:
            return "a chancellor_return takes keep and bottom only"
        if not _is_card(a.keep):
            return f"keep: unknown card {a.keep!r}"
        if type(a.bottom) is not tuple or not all(_is_card(c) for c in a.bottom):
            return "bottom must be a tuple of cards"
        return None
    return f"type must be {PLAY!r} or {CHANCELLOR_RETURN!r}"


# --------------------------------------------------------------------------- applying


def apply(
    state: MatchState, action: Action | Mapping[str, Any], *, seat: int | None = None,
    timeout: bool = False,
) -> tuple[MatchState, list[Event]]:
    """Apply ``action`` for the player to act; return the new state and the new events.

    ``seat`` (optional) is who sends it: anyone else raises ``not_your_turn``. ``timeout`` marks
    an action the server played for an absent player. The input state is not changed.
    """
    new = state.clone()
    return new, apply_inplace(new, action, seat=seat, timeout=timeout)


def apply_inplace(
    s: MatchState, action: Action | Mapping[str, Any], *, seat: int | None = None,
    timeout: bool = False,
) -> list[Event]:
    """Like :func:`apply` but changes ``s`` itself (faster; for simulations)."""
    if s.status != ACTIVE:
        raise EngineError("match_over", "the match is over")
    if seat is not None and seat != s.turn:
        if type(seat) is not int or not 0 <= seat < s.players:
            raise EngineError("invalid_seat", f"no seat {seat!r} in this match")
        raise EngineError("not_your_turn", f"it is seat {s.turn}'s turn, not seat {seat}'s")
    if not isinstance(action, Action):
        action = Action.from_dict(action)
    else:
        why = _shape_error(action)
        if why is not None:
            raise EngineError("malformed_action", why)
    if action not in _legal(s)[1]:
        raise EngineError("illegal_action", _explain(s, action))
    start = len(s.events)
    me = s.turn
    if timeout:
        s.timeouts[me] += 1
    else:
        s.timeouts[me] = 0
    if action.type == PLAY:
        _play(s, me, action, timeout)
    else:
        _chancellor_return(s, me, action, timeout)
    return s.events[start:]


def _play(s: MatchState, me: int, action: Action, timeout: bool) -> None:
    card, t = action.card, action.target
    assert card is not None
    hands = s.hands
    hand = hands[me]
    hand.remove(card)
    s.discards[me].append(card)
    data: dict[str, Any] = {"seat": me, "card": NAMES[card]}
    if t is not None:
        data["target"] = t
    if timeout:
        data["timeout"] = True
    events = s.events
    rnd = s.round
    if t is None:
        if card == HANDMAID:
            s.protected[me] = True
        elif card == CHANCELLOR:
            _emit(s, "play", data)
            n = min(2, len(s.deck))
            data["drew"] = n
            if n:
                drawn = s.deck[:n]
                del s.deck[:n]
                hand.extend(drawn)
                s.phase = PHASE_CHANCELLOR
                _emit(s, "chancellor_drew", {"seat": me, "turn": s.turn_no,
                                             "cards": [NAMES[c] for c in drawn]}, (me,))
                return
            _end_turn(s)
            return
        events.append(Event(len(events), rnd, "play", data))
        if card == PRINCESS:
            _eliminate(s, me, "princess")  # R20
        _end_turn(s)
        return
    if card == GUARD:
        guess = action.guess
        assert guess is not None
        data["guess"] = NAMES[guess]
        hit = hands[t][0] == guess
        data["hit"] = hit
        events.append(Event(len(events), rnd, "play", data))
        if hit:
            _eliminate(s, t, "guard")
    elif card == PRIEST:
        events.append(Event(len(events), rnd, "play", data))
        events.append(Event(len(events), rnd, "priest_saw",
                            {"seat": me, "target": t, "card": NAMES[hands[t][0]],
                             "turn": s.turn_no}, (me,)))
    elif card == BARON:
        mine, theirs = hand[0], hands[t][0]
        values = RULESETS[s.ruleset].values
        vm, vt = values[mine], values[theirs]
        loser = t if vm > vt else me if vt > vm else None
        data["loser"] = loser
        events.append(Event(len(events), rnd, "play", data))
        events.append(Event(len(events), rnd, "baron_compared",
                            {"seat": me, "target": t, "card": NAMES[mine],
                             "target_card": NAMES[theirs], "turn": s.turn_no}, (me, t)))
        if loser is not None:
            _eliminate(s, loser, "baron")
    elif card == KING:
        mine, theirs = hand[0], hands[t][0]
        hands[me], hands[t] = hands[t], hands[me]
        events.append(Event(len(events), rnd, "play", data))
        events.append(Event(len(events), rnd, "king_swapped",
                            {"seat": me, "target": t, "gave": NAMES[mine],
                             "received": NAMES[theirs], "turn": s.turn_no}, (me, t)))
    else:  # prince (R16)
        discarded = hands[t].pop()
        s.discards[t].append(discarded)
        data["discarded"] = NAMES[discarded]
        if discarded == PRINCESS:
            events.append(Event(len(events), rnd, "play", data))
            _eliminate(s, t, "princess")
        else:
            if s.deck:
                new = s.deck.pop(0)
                data["drew_from"] = "deck"
            else:
                new = s.aside.pop(0)  # the R5 card
                data["drew_from"] = "set_aside"
            hands[t].append(new)
            events.append(Event(len(events), rnd, "play", data))
            events.append(Event(len(events), rnd, "prince_drew",
                                {"seat": t, "by": me, "card": NAMES[new], "turn": s.turn_no},
                                (t,)))
    _end_turn(s)


def _chancellor_return(s: MatchState, me: int, action: Action, timeout: bool) -> None:
    keep, bottom = action.keep, action.bottom
    assert keep is not None and bottom is not None
    s.hands[me] = [keep]
    s.deck.extend(bottom)
    s.phase = PHASE_PLAY
    data: dict[str, Any] = {"seat": me, "count": len(bottom)}
    if timeout:
        data["timeout"] = True
    _emit(s, "chancellor_return", data)
    _emit(s, "chancellor_returned", {"seat": me, "keep": NAMES[keep],
                                     "bottom": [NAMES[c] for c in bottom],
                                     "turn": s.turn_no}, (me,))
    _end_turn(s)


def _eliminate(s: MatchState, seat: int, reason: str) -> None:
    cards = s.hands[seat]
    s.hands[seat] = []
    s.discards[seat].extend(cards)  # R21: revealed face up, counts as discarded
    s.eliminated[seat] = True
    s.protected[seat] = False
    _emit(s, "eliminated", {"seat": seat, "reason": reason, "revealed": [NAMES[c] for c in cards]})


def _end_turn(s: MatchState) -> None:
    elim = s.eliminated
    alive = [i for i in range(s.players) if not elim[i]]
    if len(alive) <= 1:
        _end_round(s, alive, "last_standing")
    elif not s.deck:
        _end_round(s, _showdown(s, alive), "showdown")
    else:
        n = s.players
        seat = (s.turn + 1) % n
        while elim[seat]:
            seat = (seat + 1) % n
        _start_turn(s, seat)


def _showdown(s: MatchState, alive: list[int]) -> list[int]:
    rs = RULESETS[s.ruleset]
    values = rs.values
    best = max(values[s.hands[p][0]] for p in alive)
    tied = [p for p in alive if values[s.hands[p][0]] == best]
    if len(tied) > 1 and rs.discard_tiebreak:  # R22
        sums = {p: sum(values[c] for c in s.discards[p]) for p in tied}
        top = max(sums.values())
        tied = [p for p in tied if sums[p] == top]
    return tied  # R23: remaining ties all win


def _end_round(s: MatchState, winners: list[int], reason: str) -> None:
    rs = RULESETS[s.ruleset]
    n = s.players
    alive = [p for p in range(n) if not s.eliminated[p]]
    spy = None
    if rs.spy_bonus:  # R24
        spies = [p for p in alive if SPY in s.discards[p]]
        if len(spies) == 1:
            spy = spies[0]
    for p in winners:  # R25
        s.tokens[p] += 1
    if spy is not None:
        s.tokens[spy] += 1
    result = {
        "round": s.round, "reason": reason, "winners": winners, "spy_bonus": spy,
        "hands": [[NAMES[c] for c in s.hands[p]] for p in range(n)],
        "set_aside": [NAMES[c] for c in s.aside], "tokens": s.tokens[:],
    }
    s.rounds.append(result)
    _emit(s, "round_end", dict(result))
    s.turn = -1
    s.phase = PHASE_PLAY
    reached = [p for p in range(n) if s.tokens[p] >= s.tokens_to_win]
    if reached:  # R26
        _finish(s, reached, "tokens")
        return
    # R8: the winner starts; several winners draw lots from the seed.
    candidates = [p for p in winners if not s.forfeited[p]] or \
                 [p for p in range(n) if not s.forfeited[p]]
    if len(candidates) == 1:
        s.round_first = candidates[0]
    else:
        s.round_first = Random(f"{s.seed}:{s.round}:first").choice(candidates)
    _start_round(s)


def _finish(s: MatchState, winners: list[int], reason: str) -> None:
    s.status = FINISHED
    s.winners = winners
    s.turn = -1
    _emit(s, "match_end", {"winners": winners, "reason": reason, "tokens": s.tokens[:],
                           "placings": placings(s)})


def placings(state: MatchState) -> list[int]:
    """R28: each seat's place (1 = first). Winners share first; the rest by tokens; forfeited last.

    >>> s = new_match("classic", 3, seed=1)
    >>> s.tokens, s.winners, s.forfeited = [5, 2, 2], [0], [False, False, True]
    >>> placings(s)
    [1, 2, 3]
    """
    keys = [(p in state.winners, not state.forfeited[p], state.tokens[p])
            for p in range(state.players)]
    return [1 + sum(1 for other in keys if other > k) for k in keys]


# --------------------------------------------------------------------------- forfeits, timeouts


def forfeit(state: MatchState, seat: int, *, reason: str = "resigned") -> tuple[MatchState,
                                                                                 list[Event]]:
    """R27: ``seat`` leaves the match (resigned or timed out). Returns the new state and events."""
    new = state.clone()
    return new, forfeit_inplace(new, seat, reason=reason)


def forfeit_inplace(s: MatchState, seat: int, *, reason: str = "resigned") -> list[Event]:
    """Like :func:`forfeit` but changes ``s`` itself."""
    if s.status != ACTIVE:
        raise EngineError("match_over", "the match is over")
    if type(seat) is not int or not 0 <= seat < s.players:
        raise EngineError("invalid_seat", f"no seat {seat!r} in this match")
    if s.forfeited[seat]:
        raise EngineError("already_forfeited", f"seat {seat} has already forfeited")
    start = len(s.events)
    s.forfeited[seat] = True
    _emit(s, "forfeit", {"seat": seat, "reason": reason})
    was_turn = s.turn == seat
    if not s.eliminated[seat]:
        _eliminate(s, seat, "forfeit")
    remaining = [p for p in range(s.players) if not s.forfeited[p]]
    if len(remaining) == 1:
        _finish(s, remaining, "forfeit")
    elif was_turn:
        s.phase = PHASE_PLAY
        _end_turn(s)
    elif sum(1 for e in s.eliminated if not e) == 1:
        _end_round(s, [p for p in range(s.players) if not s.eliminated[p]], "last_standing")
    return s.events[start:]


def timeout_action(state: MatchState) -> Action:
    """The action the server plays for an absent player (``timeout_policy: auto``).

    The rule, documented for bot authors: never play or discard the Princess when anything else
    is legal (no Princess play, no Prince at oneself while holding her); among the rest, play the
    lowest-valued card; at the lowest seat it can target (the actor last); a Guard names the
    highest-valued card not yet visible. A chancellor keeps the highest card and returns the
    others lowest first.
    """
    acts = legal_actions(state)
    if not acts:
        raise EngineError("match_over", "the match is over")
    values = RULESETS[state.ruleset].values
    me = state.turn
    if acts[0].type == CHANCELLOR_RETURN:
        return max(acts, key=lambda a: (values[a.keep or 0],
                                        [-values[c] for c in a.bottom or ()]))
    hand = state.hands[me]
    safe = [a for a in acts if a.card != PRINCESS
            and not (a.card == PRINCE and a.target == me and PRINCESS in hand)]
    pool = safe or acts
    low = min(values[a.card or 0] for a in pool)
    pool = [a for a in pool if values[a.card or 0] == low]
    pool.sort(key=lambda a: (a.target == me, a.target if a.target is not None else -1))
    first = pool[0]
    if first.card == GUARD and first.target is not None:
        seen = Counter(c for d in state.discards for c in d)
        seen.update(state.face_up)
        seen.update(hand)
        copies = RULESETS[state.ruleset].copies
        options = [a for a in pool if a.target == first.target]
        unseen = [a for a in options if copies[a.guess or 0] - seen[a.guess or 0] > 0]
        first = max(unseen or options, key=lambda a: values[a.guess or 0])
    return first


def apply_timeout(
    state: MatchState, *, policy: str = "auto", max_timeouts: int = 3,
) -> tuple[MatchState, list[Event]]:
    """The player to act ran out of time. ``auto`` plays :func:`timeout_action` for them; after
    ``max_timeouts`` consecutive timeouts, or with ``forfeit``, they forfeit (R27)."""
    if state.status != ACTIVE:
        raise EngineError("match_over", "the match is over")
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
    rs = RULESETS[s.ruleset]
    if s.phase == PHASE_CHANCELLOR:
        if a.type != CHANCELLOR_RETURN:
            return "you played a chancellor: post a chancellor_return (keep one, bottom the rest)"
        return (f"keep + bottom must be exactly your hand {[NAMES[c] for c in sorted(hand)]}, "
                f"each once")
    if a.type != PLAY:
        return "a chancellor_return is only legal right after playing a chancellor"
    card = a.card
    assert card is not None
    if rs.copies[card] == 0:
        return f"there is no {NAMES[card]} in ruleset {rs.name}"
    if card not in hand:
        return f"you don't hold a {NAMES[card]}; your hand is {[NAMES[c] for c in hand]}"
    if COUNTESS in hand and (KING in hand or PRINCE in hand) and card != COUNTESS:
        return "with the countess and a king or prince in hand you must play the countess (R11)"
    others = _targets(s, me)
    if card in _TARGETED or card == PRINCE:
        valid = others + (me,) if card == PRINCE else others
        if a.target is None:
            if valid:
                return f"the {NAMES[card]} needs a target: one of {list(valid)}"
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
        return f"the {NAMES[card]} takes no target"
    if card == GUARD and a.target is not None:
        if a.guess is None:
            return "a guard needs a guess"
        if a.guess == GUARD:
            return "a guard can't name the guard (R12)"
        if rs.copies[a.guess] == 0:
            return f"there is no {NAMES[a.guess]} in ruleset {rs.name} to name"
    elif a.guess is not None:
        return "only a guard with a target takes a guess"
    return "that action is not legal now"
