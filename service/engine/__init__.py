"""Love Letter rules engine: pure Python, standard library only, no I/O.

Rules are numbered in docs/rules.md (R1-R32, anchors ``docs/rules.md#R16``). A match is plain data (:class:`MatchState`); the player
to act picks one of :func:`legal_actions`; :func:`apply` returns the next state and the events;
:func:`view` projects the state for one seat, :func:`public_view` for spectators. What each card
does is a row of the card table :data:`CARDS` plus one effect function; a ruleset is a
:class:`Ruleset` entry in :data:`RULESETS` (``docs/extending.md``).

>>> import random
>>> s = new_match("2019", 4, seed="demo")
>>> rng = random.Random(0)
>>> while s.status == "active":
...     s, _ = apply(s, rng.choice(legal_actions(s)))
>>> s.status, max(s.tokens) >= s.tokens_to_win
(<Status.FINISHED: 'finished'>, True)
"""

# First: picks the compiled or the pure modules before any of them is imported.
from ._build import BUILD
from .actions import CHANCELLOR_RETURN, PLAY, Action
from .cards import CARDS, NAMES, RULESETS, Card, CardSpec, Ruleset, Target, get_ruleset
from .errors import (
    CODES,
    AlreadyForfeited,
    EngineError,
    IllegalAction,
    InvalidOptions,
    InvalidSeat,
    InvalidState,
    MalformedAction,
    MatchOver,
    NotYourTurn,
    UnknownCard,
)
from .events import Event
from .options import new_match
from .rules import (
    MAX_TOKENS_TO_WIN,
    TWO_PLAYER_SETUPS,
    apply,
    apply_inplace,
    apply_timeout,
    forfeit,
    forfeit_inplace,
    is_legal,
    legal_action_dicts,
    legal_actions,
    legal_actions_by_card,
    placings,
    timeout_action,
)
from .state import (
    ACTIVE,
    FINISHED,
    PHASE_CHANCELLOR,
    PHASE_PLAY,
    MatchState,
    Phase,
    RoundResult,
    Status,
)
from .views import full_record, known_facts, public_view, view

__all__ = [
    "ACTIVE", "BUILD", "CARDS", "CHANCELLOR_RETURN", "CODES", "FINISHED", "MAX_TOKENS_TO_WIN", "NAMES",
    "PHASE_CHANCELLOR", "PHASE_PLAY", "PLAY", "RULESETS", "TWO_PLAYER_SETUPS", "Action",
    "AlreadyForfeited", "Card", "CardSpec", "EngineError", "Event", "IllegalAction",
    "InvalidOptions", "InvalidSeat", "InvalidState", "MalformedAction", "MatchOver",
    "MatchState", "NotYourTurn", "Phase", "RoundResult", "Ruleset", "Status", "Target",
    "UnknownCard", "apply", "apply_inplace", "apply_timeout", "forfeit", "forfeit_inplace",
    "full_record", "get_ruleset", "is_legal", "known_facts", "legal_action_dicts",
    "legal_actions", "legal_actions_by_card", "new_match", "placings", "public_view", "timeout_action", "view",
]
