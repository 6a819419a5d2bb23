"""The engine's one exception type.

Every refusal carries a stable machine-readable ``code`` and a human ``message``:

>>> try:
...     raise EngineError("illegal_action", "the countess must be played")
... except EngineError as e:
...     (e.code, e.message)
('illegal_action', 'the countess must be played')
"""

from __future__ import annotations

#: Every code the engine raises. Callers map them (the HTTP layer to 4xx statuses).
CODES = frozenset({
    "invalid_options",   # bad match options: ruleset, player count, deck, tokens, seat
    "malformed_action",  # not an action at all: wrong shape, types or card names
    "illegal_action",    # a well-formed action the rules don't allow now
    "not_your_turn",     # the action comes from a seat that is not to act
    "match_over",        # the match has ended
    "invalid_seat",      # a seat number outside the match
    "already_forfeited", # forfeiting twice
    "unknown_card",      # a card that the ruleset does not have
    "invalid_state",     # a serialized state that doesn't parse
})


class EngineError(Exception):
    """Raised for anything the engine refuses. ``code`` is one of :data:`CODES`."""

    def __init__(self, code: str, message: str) -> None:
        assert code in CODES, code
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
