"""Match options: checking them and dealing a new match's first round (R4-R8).

Kept apart from ``rules`` because this module stays pure Python in the mypyc build
(tools/build_engine.py): its arguments come from callers and are checked here one by one, so a
string for ``players`` is an ``InvalidOptions`` refusal, where a compiled function would raise
``TypeError`` at the call before any check ran. It runs once per match, off the hot path.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Sequence

from .cards import BY_NAME, NAMES, Card, Ruleset, get_ruleset
from .errors import InvalidOptions
from .rules import MAX_TOKENS_TO_WIN, TWO_PLAYER_SETUPS, randbelow, start_round
from .state import MatchState

_N_CARDS = len(NAMES)


def new_match(
    ruleset: str = "classic",
    players: int = 2,
    *,
    seed: str | int | None = None,
    tokens_to_win: int | None = None,
    first_seat: int | None = None,
    deck: Sequence[str | int] | None = None,
    two_player_setup: str = TWO_PLAYER_SETUPS[0],
    log: bool = True,
) -> MatchState:
    """Create a match and deal its first round (R5-R8).

    ``deck`` fixes round 1's order, top card first (names or card ids); later rounds are shuffled
    from ``seed``. Bad options raise ``InvalidOptions`` (code ``invalid_options``).
    ``log=False`` keeps no event log (:attr:`MatchState.log`): for simulations that read the
    state only, not the events or views.
    """
    rs = get_ruleset(ruleset)
    if type(players) is not int or not rs.min_players <= players <= rs.max_players:
        raise InvalidOptions(
            f"{rs.name} is for {rs.min_players} to {rs.max_players} players, not {players!r}")
    if tokens_to_win is None:
        tokens_to_win = rs.tokens_to_win(players)
    elif type(tokens_to_win) is not int or not 1 <= tokens_to_win <= MAX_TOKENS_TO_WIN:
        raise InvalidOptions(f"tokens_to_win must be an integer from 1 to {MAX_TOKENS_TO_WIN}")
    if first_seat is not None and (type(first_seat) is not int
                                   or not 0 <= first_seat < players):
        raise InvalidOptions(f"first_seat must be a seat from 0 to {players - 1}")
    if two_player_setup not in TWO_PLAYER_SETUPS:
        raise InvalidOptions(f"two_player_setup must be one of {TWO_PLAYER_SETUPS}")
    if type(log) is not bool:
        raise InvalidOptions("log must be true or false")
    order = None if deck is None else _check_deck(rs, deck)
    if seed is None:
        seed = secrets.token_hex(8)
    if not isinstance(seed, (str, int)) or isinstance(seed, bool):
        raise InvalidOptions("seed must be a string or an integer")
    try:
        str(seed).encode()
    except UnicodeEncodeError as e:  # a lone surrogate can't seed random.Random
        raise InvalidOptions("seed must be valid Unicode text") from e
    s = MatchState(
        ruleset=rs.name, players=players, seed=str(seed), tokens_to_win=tokens_to_win,
        two_player_setup=two_player_setup, first_seat=first_seat, deck_order=order,
        tokens=[0] * players, forfeited=[False] * players, timeouts=[0] * players, log=log,
    )
    if first_seat is None:
        first_seat = randbelow(f"{s.seed}:first", players)  # Random(...).randrange(players)
    s.round_first = first_seat
    start_round(s)
    return s


def _check_deck(rs: Ruleset, deck: Sequence[str | int]) -> list[int]:
    if isinstance(deck, (str, bytes)) or not isinstance(deck, Sequence):
        raise InvalidOptions("deck must be a list of card names")
    order: list[int] = []
    for c in deck:
        if isinstance(c, str) and c in BY_NAME:
            order.append(int(BY_NAME[c]))
        elif type(c) is int and 0 <= c < _N_CARDS or isinstance(c, Card):
            order.append(int(c))
        else:
            raise InvalidOptions(f"deck: unknown card {c!r}")
    want, got = Counter(rs.base_deck), Counter(order)
    if want != got:
        diffs = []
        for c in sorted(set(want) | set(got)):
            if want[c] != got[c]:
                diffs.append(f"{got[c]} {NAMES[c]} (needs {want[c]})")
        raise InvalidOptions(
            f"deck must be exactly the {rs.deck_size} cards of {rs.name}; it has "
            + ", ".join(diffs))
    return order
