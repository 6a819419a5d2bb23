"""One exception hierarchy for everything the SDK can raise.

Every API error body is ``{"status", "code", "message", "errors"?, "rule"?}``; the stable ``code`` picks
the class (the HTTP status only when the code is unknown to this SDK version)::

    LLSDKError
    ├── TransportError                  network failure after every retry
    └── APIError(status, code, message) any error answer of the API
        ├── InvalidRequest              invalid_request (422)
        │   ├── MalformedJSON           malformed_json (400)
        │   ├── MalformedAction         malformed_action (422)
        │   ├── PlayerNotFound          player_not_found (422): a challenge names nobody
        │   ├── ChallengeSelf           challenge_self (422)
        │   ├── DuplicateOpponent       duplicate_opponent (422)
        │   └── NameReserved            name_reserved (422)
        ├── Unauthorized                unauthorized (401)
        ├── Forbidden                   forbidden (403)
        │   ├── NotChallenged           not_challenged: answering your own challenge
        │   ├── NotChallenger           not_challenger: cancelling someone else's
        │   ├── LadderBotsOnly          ladder_bots_only: a human entering a bot ladder
        │   ├── Blocked                 blocked: the player you challenge blocked you
        │   ├── ChallengesOff           challenges_off: it takes no challenges
        │   └── PlayerBanned            player_banned: with ``reason`` and ``until``
        ├── NotFound                    not_found (404)
        │   └── ChallengeNotFound       challenge_not_found
        ├── MethodNotAllowed            method_not_allowed (405)
        ├── CursorExpired               cursor_expired (410), with ``oldest_cursor``
        ├── Conflict                    (409)
        │   ├── NotYourTurn             not_your_turn
        │   ├── VersionConflict         version_conflict (409, or 412 with If-Match)
        │   ├── MatchNotActive          match_not_active
        │   ├── MatchFull               match_full
        │   ├── AlreadyJoined           already_joined
        │   ├── AlreadyForfeited        already_forfeited
        │   ├── NameTaken               name_taken
        │   ├── ChallengeClosed         challenge_closed: accepted, declined or cancelled
        │   ├── ChallengeExpired        challenge_expired
        │   ├── AlreadyChallenged       already_challenged
        │   └── TooManyChallenges       too_many_challenges
        ├── PreconditionFailed          precondition_failed (412)
        ├── PayloadTooLarge             payload_too_large (413)
        ├── UnsupportedMediaType        unsupported_media_type (415)
        ├── IllegalAction               illegal_action (422)
        ├── IdempotencyKeyReused        idempotency_key_reused (422)
        ├── RateLimited                 rate_limited (429), with ``retry_after`` seconds
        └── ServerError                 (5xx)
            ├── InternalError           internal_error (500)
            ├── ServiceUnavailable      service_unavailable (503), with ``retry_after``
            └── ArchiveUnavailable      archive_unavailable (503)

>>> e = error_for(409, {"status": 409, "code": "not_your_turn", "message": "wait"})
>>> type(e).__name__, isinstance(e, Conflict), e.status, e.code
('NotYourTurn', True, 409, 'not_your_turn')
>>> type(error_for(418, {"code": "teapot", "message": "?"})).__name__
'APIError'
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any


class LLSDKError(Exception):
    """Base of every exception the SDK raises."""


class TransportError(LLSDKError):
    """The request could not be completed (connection refused or dropped, timeout, bad JSON)
    even after the client's retries. ``__cause__`` holds the last underlying exception."""


class APIError(LLSDKError):
    """The API answered with an error: ``status`` (HTTP), ``code`` (stable snake_case),
    ``message`` (for humans), ``errors`` (per-field validation errors, if any)."""

    def __init__(self, status: int, code: str, message: str, *, errors: Any = None,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.errors = errors
        self.headers: dict[str, str] = dict(headers or {})
        #: set by the client when this answer came to a retried request
        self.retried = False


class InvalidRequest(APIError):
    """``invalid_request``: the body or parameters do not match the schema (see ``errors``)."""


class MalformedJSON(InvalidRequest):
    """``malformed_json``: the body is not JSON."""


class MalformedAction(InvalidRequest):
    """``malformed_action``: the action is not a well-formed action object."""


class PlayerNotFound(InvalidRequest):
    """``player_not_found``: a challenge names a player that does not exist."""


class ChallengeSelf(InvalidRequest):
    """``challenge_self``: a challenge names its challenger."""


class DuplicateOpponent(InvalidRequest):
    """``duplicate_opponent``: a challenge names the same player twice."""


class Unauthorized(APIError):
    """``unauthorized``: no token, or an unknown one."""


class Forbidden(APIError):
    """``forbidden``: not allowed for this player (e.g. a match you don't sit in)."""


class NotChallenged(Forbidden):
    """``not_challenged``: only the players a challenge names accept or decline it."""


class NotChallenger(Forbidden):
    """``not_challenger``: only the challenger cancels a challenge."""


class LadderBotsOnly(Forbidden):
    """``ladder_bots_only``: a player registered as human entering a ladder for bots."""


class Blocked(Forbidden):
    """``blocked``: a player you challenge blocked you."""


class ChallengesOff(Forbidden):
    """``challenges_off``: a player you challenge turned challenges off."""


class CursorExpired(APIError):
    """``cursor_expired`` (410): notices after your cursor were dropped. Resynchronise from
    your match list (``client.me.all_matches(status="active")``) and go on from
    ``oldest_cursor`` (``Bot.run`` does)."""

    def __init__(self, status: int, code: str, message: str, *, errors: Any = None,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status, code, message, errors=errors, headers=headers)
        self.oldest_cursor: str | None = None


class PlayerBanned(Forbidden):
    """``player_banned``: an operator banned this player; ``reason`` says why, ``until`` when
    it ends (RFC 3339, None: until lifted). Every call with its token answers this."""

    reason: str | None = None
    until: str | None = None


class NotFound(APIError):
    """``not_found``: no such match, player, ladder or path."""


class ChallengeNotFound(NotFound):
    """``challenge_not_found``: no such challenge, or you are not in it."""


class MethodNotAllowed(APIError):
    """``method_not_allowed``."""


class Conflict(APIError):
    """A 409: the request conflicts with the current state of the resource."""


class NotYourTurn(Conflict):
    """``not_your_turn``: another seat is to act."""


class VersionConflict(Conflict):
    """``version_conflict``: the match moved since the version you acted on (409, or 412 when
    sent with If-Match). Read the view again."""


class MatchNotActive(Conflict):
    """``match_not_active``: the match is waiting for players or already finished."""


class MatchFull(Conflict):
    """``match_full``: every seat is taken."""


class AlreadyJoined(Conflict):
    """``already_joined``: you already sit in this match."""


class AlreadyForfeited(Conflict):
    """``already_forfeited``: you already resigned this match."""


class NameTaken(Conflict):
    """``name_taken``: a player with this name exists."""


class ChallengeClosed(Conflict):
    """``challenge_closed``: the challenge was accepted, declined or cancelled."""


class ChallengeExpired(Conflict):
    """``challenge_expired``: nobody answered it in time."""


class AlreadyChallenged(Conflict):
    """``already_challenged``: your earlier challenge to that player is still open."""


class TooManyChallenges(Conflict):
    """``too_many_challenges``: wait for answers to your open challenges or cancel one."""


class NameReserved(InvalidRequest):
    """``name_reserved``: the name is in the house bots' namespace (``house-...``)."""


class PreconditionFailed(APIError):
    """``precondition_failed``: a malformed If-Match."""


class PayloadTooLarge(APIError):
    """``payload_too_large``."""


class UnsupportedMediaType(APIError):
    """``unsupported_media_type``."""


class IllegalAction(APIError):
    """``illegal_action``: well formed but not legal now; post one of the view's
    ``legal_actions``."""


class IdempotencyKeyReused(APIError):
    """``idempotency_key_reused``: this Idempotency-Key was used with another body."""


class RateLimited(APIError):
    """``rate_limited``: slow down; ``retry_after`` is how many seconds to wait (or None)."""

    def __init__(self, status: int, code: str, message: str, *, errors: Any = None,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status, code, message, errors=errors, headers=headers)
        self.retry_after = parse_retry_after(self.headers.get("Retry-After"))


class ServerError(APIError):
    """A 5xx answer."""


class InternalError(ServerError):
    """``internal_error``: a bug on the server (it was logged there)."""


class ServiceUnavailable(ServerError):
    """``service_unavailable``: the service (or its Redis) is briefly down; nothing was changed.
    ``retry_after`` is how many seconds the server suggests waiting (or None). Turn clocks stand
    still while the service is down."""

    def __init__(self, status: int, code: str, message: str, *, errors: Any = None,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status, code, message, errors=errors, headers=headers)
        self.retry_after = parse_retry_after(self.headers.get("Retry-After"))


class ArchiveUnavailable(ServerError):
    """``archive_unavailable``: a finished match moved to the server's archive whose file the
    server can't read (missing or corrupt): an operator's problem, not one a retry solves soon.
    Lists of matches leave such a match out instead."""


#: every error code of the API v1 -> its exception class
CODE_CLASSES: dict[str, type[APIError]] = {
    "malformed_json": MalformedJSON,
    "invalid_request": InvalidRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "method_not_allowed": MethodNotAllowed,
    "not_your_turn": NotYourTurn,
    "version_conflict": VersionConflict,
    "match_not_active": MatchNotActive,
    "match_full": MatchFull,
    "already_joined": AlreadyJoined,
    "already_forfeited": AlreadyForfeited,
    "name_taken": NameTaken,
    "name_reserved": NameReserved,
    "precondition_failed": PreconditionFailed,
    "payload_too_large": PayloadTooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    "malformed_action": MalformedAction,
    "illegal_action": IllegalAction,
    "idempotency_key_reused": IdempotencyKeyReused,
    "rate_limited": RateLimited,
    "internal_error": InternalError,
    "service_unavailable": ServiceUnavailable,
    "unavailable": ServiceUnavailable,  # the code of GET /readyz on earlier servers
    "archive_unavailable": ArchiveUnavailable,
    "player_not_found": PlayerNotFound,
    "challenge_self": ChallengeSelf,
    "duplicate_opponent": DuplicateOpponent,
    "not_challenged": NotChallenged,
    "not_challenger": NotChallenger,
    "ladder_bots_only": LadderBotsOnly,
    "player_banned": PlayerBanned,
    "challenge_not_found": ChallengeNotFound,
    "challenge_closed": ChallengeClosed,
    "challenge_expired": ChallengeExpired,
    "already_challenged": AlreadyChallenged,
    "too_many_challenges": TooManyChallenges,
    "blocked": Blocked,
    "challenges_off": ChallengesOff,
    "cursor_expired": CursorExpired,
}

#: fallback by HTTP status for codes this SDK version does not know
STATUS_CLASSES: dict[int, type[APIError]] = {
    400: InvalidRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound,
    405: MethodNotAllowed, 409: Conflict, 412: PreconditionFailed, 413: PayloadTooLarge,
    415: UnsupportedMediaType, 422: InvalidRequest, 429: RateLimited, 500: InternalError,
    503: ServiceUnavailable,
}


def error_for(status: int, body: Any, headers: Mapping[str, str] | None = None) -> APIError:
    """The exception for an error answer (``body`` is its parsed JSON, or anything else)."""
    data = body if isinstance(body, Mapping) else {}
    code = data.get("code")
    message = data.get("message")
    if not isinstance(message, str) or not message:
        message = f"HTTP {status}"
    if isinstance(code, str) and code in CODE_CLASSES:
        cls = CODE_CLASSES[code]
    else:
        cls = STATUS_CLASSES.get(status) or (ServerError if status >= 500 else APIError)
        if not isinstance(code, str) or not code:
            code = f"http_{status}"
    err = cls(status, code, message, errors=data.get("errors"), headers=headers)
    if isinstance(err, CursorExpired) and isinstance(data.get("oldest_cursor"), str):
        err.oldest_cursor = data["oldest_cursor"]
    if isinstance(err, PlayerBanned):
        reason, until = data.get("reason"), data.get("until")
        err.reason = reason if isinstance(reason, str) else None
        err.until = until if isinstance(until, str) else None
    return err


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds from now: delta-seconds or an HTTP date.

    >>> parse_retry_after("3"), parse_retry_after(None), parse_retry_after("soon")
    (3.0, None, None)
    """
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


__all__ = [
    "CODE_CLASSES", "STATUS_CLASSES", "APIError", "ArchiveUnavailable", "AlreadyChallenged", "AlreadyForfeited",
    "AlreadyJoined", "Blocked", "ChallengeClosed", "ChallengesOff", "CursorExpired", "ChallengeExpired", "ChallengeNotFound",
    "ChallengeSelf", "DuplicateOpponent", "LadderBotsOnly", "NotChallenged", "NotChallenger",
    "PlayerBanned", "PlayerNotFound", "TooManyChallenges",
    "Conflict", "Forbidden", "IdempotencyKeyReused", "IllegalAction", "InternalError",
    "InvalidRequest", "LLSDKError", "MalformedAction", "MalformedJSON", "MatchFull",
    "MatchNotActive", "MethodNotAllowed", "NameReserved", "NameTaken", "NotFound", "NotYourTurn",
    "PayloadTooLarge", "PreconditionFailed", "RateLimited", "ServerError", "ServiceUnavailable",
    "TransportError", "Unauthorized", "UnsupportedMediaType", "VersionConflict", "error_for",
    "parse_retry_after",
]
