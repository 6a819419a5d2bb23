"""Small helpers for tests (and benchmarks) that run the real app under gunicorn.

``running_server`` starts an :class:`~tests.support.server.ApiServer` and, when the block ends
without an error, checks that the server logged no traceback. ``safe_deck`` builds a round-1
deck whose first two turns are harmless plays, for tests that must know what a move does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from service.engine import NAMES, RULESETS
from tests.support.server import ApiServer


@contextmanager
def running_server(redis_url: str, *, workers: int = 1,
                   env: dict[str, str] | None = None) -> Iterator[ApiServer]:
    server = ApiServer(redis_url, workers=workers, env=env)
    server.start()
    try:
        yield server
        log = server.log_text()
        assert "Traceback" not in log, f"the server logged an unhandled error:\n{log[-8000:]}"
    finally:
        server.close()


def round_one_deck(dealt: list[str], ruleset: str = "classic") -> list[str]:
    """Round 1's deck for two players (three-up) in which ``dealt`` are dealt first: the first
    seat's card, the other seat's card, the first seat's first draw, the other's first draw (the
    set-aside and face-up cards, and the rest of the deck, are the ruleset's other cards)."""
    rest = [NAMES[c] for c in RULESETS[ruleset].deck()]
    for c in dealt:
        rest.remove(c)
    # 0: set aside, 1-3: face up, 4: first seat, 5: other seat, 6: first draws, 7: other draws
    return rest[:4] + dealt + rest[4:]


def safe_deck(ruleset: str = "classic") -> list[str]:
    """Round 1's deck for two players (three-up, first_seat=0) such that seat 0 holds
    handmaid + priest on its first turn and seat 1 holds handmaid + priest on its first turn:
    neither card ends the round, and the turn always passes to the other seat."""
    return round_one_deck(["handmaid", "handmaid", "priest", "priest"], ruleset)


#: a ladder match's deal (``ladders.form_matches(deal=...)``, tests only) by :func:`safe_deck`:
#: whoever moves first, round 1 goes on to the other seat's first turn (where an absent bot's
#: timeout is an abort)
SAFE_DEAL: dict[str, Any] = {"deck": safe_deck("classic"), "first_seat": 0, "seed": "safe-deal"}


def absent_first(pid: str) -> dict[str, Any]:
    """:data:`SAFE_DEAL` with ``pid`` moving first: an absent bot's first timeout comes before
    anyone else must move (so a partner slowed down by a loaded machine can't time out first)."""
    deal = {k: v for k, v in SAFE_DEAL.items() if k != "first_seat"}
    return {**deal, "first_player": pid}


#: options for a two-player match dealt by :func:`safe_deck`, with no turn timeouts
SAFE_MATCH: dict[str, Any] = {"ruleset": "classic", "deck": safe_deck("classic"), "first_seat": 0,
              "two_player_setup": "three-up", "turn_timeout_s": 86400}

HANDMAID = {"type": "play", "card": "handmaid"}
