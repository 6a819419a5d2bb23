"""Love Letter rules engine: pure Python, standard library only, no I/O.

Rules are numbered in docs/rules.md (R1-R32, anchors ``docs/rules.md#R16``). A match is plain data (:class:`MatchState`); the player
to act picks one of :func:`legal_actions`; :func:`apply` returns the next state and the events;
:func:`view` projects the state for one seat, :func:`public_view` for spectators.

>>> import random
>>> s = new_match("2019", 4, seed="demo")
>>> rng = random.Random(0)
>>> while s.status == "active":
...     s, _ = apply(s, rng.choice(legal_actions(s)))
>>> s.status, max(s.tokens) >= s.tokens_to_win
('finished', True)
"""

from .actions import CHANCELLOR_RETURN, PLAY, Action
from .cards import NAMES, RULESETS, Card, Ruleset, get_ruleset
from .errors import CODES, EngineError
from .events import Event
from .rules import (
    TWO_PLAYER_SETUPS,
    apply,
    apply_inplace,
    apply_timeout,
    forfeit,
    forfeit_inplace,
    is_legal,
    legal_action_dicts,
    legal_actions,
    new_match,
    placings,
    timeout_action,
)
from .state import ACTIVE, FINISHED, PHASE_CHANCELLOR, PHASE_PLAY, MatchState
from .views import full_record, known_facts, public_view, view

__all__ = [
    "ACTIVE", "CHANCELLOR_RETURN", "CODES", "FINISHED", "NAMES", "PHASE_CHANCELLOR", "PHASE_PLAY",
    "PLAY", "RULESETS", "TWO_PLAYER_SETUPS", "Action", "Card", "EngineError", "Event",
    "MatchState", "Ruleset", "apply", "apply_inplace", "apply_timeout", "forfeit",
    "forfeit_inplace", "full_record", "get_ruleset", "is_legal", "known_facts",
    "legal_action_dicts", "legal_actions", "new_match", "placings", "public_view",
    "timeout_action", "view",
]
