"""llsdk: the Python SDK of Love Letter Arena.

    from llsdk import Action, Bot, Client, View

    class MyBot(Bot):
        def choose(self, view: View) -> Action:
            return view.legal_actions[0]

    MyBot().run(Client("http://127.0.0.1:8000", token="llt_..."))

``Client`` talks to the HTTP API (``client.players``, ``client.matches``, ``client.me``,
``client.ladder``, ``client.challenges``), the models are typed dataclasses, every error is an ``LLSDKError``, and
``llsdk.arena`` plays bots against each other offline on the service's own rules engine.
"""

__version__ = "0.1.0"

from .bot import Bot, RunStats  # noqa: E402
from .client import Client  # noqa: E402
from .errors import (  # noqa: E402
    AlreadyChallenged,
    AlreadyForfeited,
    AlreadyJoined,
    APIError,
    ArchiveUnavailable,
    Blocked,
    ChallengeClosed,
    ChallengeExpired,
    ChallengeNotFound,
    ChallengeSelf,
    ChallengesOff,
    Conflict,
    CursorExpired,
    DuplicateOpponent,
    Forbidden,
    IdempotencyKeyReused,
    IllegalAction,
    InternalError,
    InvalidRequest,
    LadderBotsOnly,
    LLSDKError,
    MalformedAction,
    MalformedJSON,
    MatchFull,
    MatchNotActive,
    MethodNotAllowed,
    NameReserved,
    NameTaken,
    NotChallenged,
    NotChallenger,
    NotFound,
    NotYourTurn,
    PayloadTooLarge,
    PlayerBanned,
    PlayerNotFound,
    PreconditionFailed,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    TooManyChallenges,
    TransportError,
    Unauthorized,
    UnsupportedMediaType,
    VersionConflict,
)
from .models import (  # noqa: E402
    Action,
    Challenge,
    ChallengePlayer,
    Challenges,
    Event,
    EventLog,
    Known,
    Ladder,
    LadderEntry,
    LeaderboardRow,
    Match,
    MatchPage,
    Notice,
    Notices,
    OnlinePlayer,
    Player,
    Result,
    RoundResult,
    Seat,
    SeatInfo,
    Turn,
    View,
)

__all__ = [
    "Blocked", "ChallengesOff", "CursorExpired",
    "APIError", "Action", "AlreadyChallenged", "AlreadyForfeited", "AlreadyJoined", "Bot",
    "Challenge", "ChallengeClosed", "ChallengeExpired", "ChallengeNotFound", "ChallengePlayer",
    "ChallengeSelf", "Challenges", "Client", "Conflict", "DuplicateOpponent", "LadderBotsOnly",
    "NotChallenged", "NotChallenger", "OnlinePlayer", "PlayerBanned", "PlayerNotFound", "TooManyChallenges",
    "Event", "EventLog", "Forbidden", "IdempotencyKeyReused", "IllegalAction", "InternalError",
    "InvalidRequest", "Known", "LLSDKError", "Ladder", "LadderEntry", "LeaderboardRow",
    "MalformedAction", "MalformedJSON", "Match", "MatchFull", "MatchNotActive", "MatchPage",
    "MethodNotAllowed", "NameReserved", "NameTaken", "NotFound", "NotYourTurn", "Notice", "Notices",
    "PayloadTooLarge", "Player", "PreconditionFailed", "RateLimited", "Result", "RoundResult",
    "RunStats", "Seat", "SeatInfo", "ServerError", "ServiceUnavailable", "ArchiveUnavailable", "TransportError", "Turn",
    "Unauthorized", "UnsupportedMediaType", "VersionConflict", "View", "__version__",
]
