"""The engine's exceptions: one class per stable code, all under :class:`EngineError`.

Every refusal carries a machine-readable ``code`` (stable: the HTTP layer maps it to a status and
clients switch on it) and a human ``message``. Catch ``EngineError`` for any refusal, or a
subclass for one kind:

>>> try:
...     raise IllegalAction("the countess must be played")
... except EngineError as e:
...     (type(e).__name__, e.code, e.message)
('IllegalAction', 'illegal_action', 'the countess must be played')

The two-argument form picks the subclass from the code, so older callers keep working:

>>> e = EngineError("not_your_turn", "it is seat 1's turn")
>>> isinstance(e, NotYourTurn), str(e)
(True, "not_your_turn: it is seat 1's turn")
"""

from __future__ import annotations

from typing import Any, ClassVar


class EngineError(Exception):
    """Raised for anything the engine refuses. ``code`` is one of :data:`CODES`."""

    code: ClassVar[str] = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> EngineError:
        if cls is EngineError:  # EngineError(code, message): the subclass for that code
            code = args[0] if args else kwargs.get("code")
            sub = BY_CODE.get(code) if isinstance(code, str) else None
            if sub is None:
                raise ValueError(f"unknown engine error code {code!r}")
            cls = sub
        return super().__new__(cls)

    def __init__(self, *args: str) -> None:
        # (message) on a subclass; (code, message) on any class (the code must match).
        if len(args) == 2:
            code, message = args
            if code != self.code:
                raise ValueError(f"{type(self).__name__} has code {self.code!r}, not {code!r}")
        elif len(args) == 1:
            (message,) = args
        else:
            raise TypeError("EngineError takes (message) or (code, message)")
        super().__init__(self.code, message)  # args: so pickling rebuilds the same error
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InvalidOptions(EngineError):
    """Bad match options: ruleset, player count, deck, tokens, seat, setup or seed."""

    code = "invalid_options"


class MalformedAction(EngineError):
    """Not an action at all: wrong shape, types or card names."""

    code = "malformed_action"


class IllegalAction(EngineError):
    """A well-formed action the rules don't allow now."""

    code = "illegal_action"


class NotYourTurn(EngineError):
    """The action comes from a seat that is not to act."""

    code = "not_your_turn"


class MatchOver(EngineError):
    """The match has ended."""

    code = "match_over"


class InvalidSeat(EngineError):
    """A seat number outside the match."""

    code = "invalid_seat"


class AlreadyForfeited(EngineError):
    """Forfeiting twice."""

    code = "already_forfeited"


class UnknownCard(EngineError):
    """A card that the ruleset does not have."""

    code = "unknown_card"


class InvalidState(EngineError):
    """A serialized state that doesn't parse."""

    code = "invalid_state"


BY_CODE: dict[str, type[EngineError]] = {
    c.code: c for c in (InvalidOptions, MalformedAction, IllegalAction, NotYourTurn, MatchOver,
                        InvalidSeat, AlreadyForfeited, UnknownCard, InvalidState)
}

#: Every code the engine raises. Callers map them (the HTTP layer to 4xx statuses).
CODES = frozenset(BY_CODE)

__all__ = ["BY_CODE", "CODES", "AlreadyForfeited", "EngineError", "IllegalAction", "InvalidOptions",
           "InvalidSeat", "InvalidState", "MalformedAction", "MatchOver", "NotYourTurn",
           "UnknownCard"]
