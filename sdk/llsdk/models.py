"""Typed models of what the API sends and takes: views, actions, events, matches, players.

Every model has ``from_dict`` (tolerant: unknown fields are ignored, so a newer server does not
break an older SDK) and keeps the JSON it came from in ``raw`` where that is useful. The
dataclass models share one reader (``llsdk._wire``): a new field needs only its declaration.

>>> a = Action.play("guard", target=2, guess="priest")
>>> a.to_dict()
{'type': 'play', 'card': 'guard', 'target': 2, 'guess': 'priest'}
>>> Action.from_dict(a.to_dict()) == a
True
>>> Action.chancellor_return(keep="king", bottom=["guard", "spy"]).to_dict()
{'type': 'chancellor_return', 'keep': 'king', 'bottom': ['guard', 'spy']}
>>> str(Action.play("handmaid"))
'play handmaid'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._wire import REQUIRED, WireModel, read, wire
from .cards import ACTION_FIELDS, VALUES

PLAY = "play"
CHANCELLOR_RETURN = "chancellor_return"


# --------------------------------------------------------------------------- actions


@dataclass(frozen=True, slots=True)
class Action:
    """One decision, as posted to ``POST /v1/matches/{id}/actions``. Hashable: compare it with a
    view's ``legal_actions``."""

    type: str
    card: str | None = None
    target: int | None = None
    guess: str | None = None
    keep: str | None = None
    bottom: tuple[str, ...] | None = None

    @classmethod
    def play(cls, card: str, target: int | None = None, guess: str | None = None) -> Action:
        """Play ``card``, at seat ``target`` if it takes one, naming ``guess`` for a guard."""
        return _action(PLAY, card, target, guess, None, None)

    @classmethod
    def chancellor_return(cls, keep: str, bottom: Iterable[str]) -> Action:
        """After a chancellor: keep ``keep``; ``bottom`` goes under the deck, ``bottom[0]``
        above ``bottom[1]`` (the last one becomes the deck's last card)."""
        return _action(CHANCELLOR_RETURN, None, None, None, keep, tuple(bottom))

    def to_dict(self) -> dict[str, Any]:
        """The wire form (absent optional fields omitted), field by field as the API publishes
        each action type's (``cards.ACTION_FIELDS``, from ``rulesets.json``)."""
        d: dict[str, Any] = {"type": self.type}
        for name, kind, required in ACTION_FIELDS.get(self.type, ()):
            value = getattr(self, name)
            if value is None and not required:
                continue
            d[name] = list(value or ()) if kind == "cards" else value
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Action:
        bottom = d.get("bottom")
        key = (d.get("type"), d.get("card"), d.get("target"), d.get("guess"), d.get("keep"),
               None if bottom is None else tuple(bottom))
        hit = _ACTIONS.get(key)
        if hit is None:
            hit = _action(*key)
        return hit

    def __str__(self) -> str:
        if self.type == CHANCELLOR_RETURN:
            return f"chancellor_return keep={self.keep} bottom={','.join(self.bottom or ())}"
        out = f"play {self.card}"
        if self.target is not None:
            out += f" target={self.target}"
        if self.guess is not None:
            out += f" guess={self.guess}"
        return out


# Actions are immutable and few: intern them (parsing a view's legal actions is then cheap).
_ACTIONS: dict[tuple[Any, ...], Action] = {}


def _action(type: Any, card: Any, target: Any, guess: Any, keep: Any,
            bottom: tuple[str, ...] | None) -> Action:
    key = (type, card, target, guess, keep, bottom)
    hit = _ACTIONS.get(key)
    if hit is None:
        hit = Action(type, card, target, guess, keep, bottom)
        if len(_ACTIONS) < 100_000:
            _ACTIONS[key] = hit
    return hit


# --------------------------------------------------------------------------- views


@dataclass(slots=True)
class Turn(WireModel):
    """Whose turn it is: ``phase`` is ``play`` or ``chancellor`` (the chancellor's return)."""

    seat: int = field(metadata=REQUIRED)
    phase: str = PLAY
    deadline: str | None = None  # RFC 3339, online only
    seconds_left: float | None = None


@dataclass(slots=True)
class Seat(WireModel):
    """One seat as everyone sees it."""

    seat: int = field(metadata=REQUIRED)
    tokens: int = 0
    discards: list[str] = field(default_factory=list)  # played and discarded, oldest first
    hand_count: int = 0
    eliminated: bool = False
    protected: bool = False  # by a handmaid (R15)
    forfeited: bool = False
    player_id: str | None = None
    name: str | None = None


@dataclass(slots=True)
class Known(WireModel):
    """A private fact of this round (R30). ``type`` is one of ``priest`` (``seat`` holds
    ``card``), ``baron`` (``seat`` showed ``card`` against your ``mine``), ``king`` (you traded
    ``gave`` for ``received`` with ``seat``), ``prince`` (``seat``'s prince made you draw
    ``card``), ``chancellor_drew`` (``cards``), ``chancellor_returned`` (``keep``, ``bottom``)."""

    type: str = field(metadata=REQUIRED)
    seq: int = field(metadata=REQUIRED)
    round: int = field(metadata=REQUIRED)
    turn: int = field(metadata=REQUIRED)
    seat: int | None = None
    card: str | None = None
    mine: str | None = None
    gave: str | None = None
    received: str | None = None
    cards: list[str] | None = None
    keep: str | None = None
    bottom: list[str] | None = None


@dataclass(slots=True)
class Event(WireModel):
    """One entry of a match's log. ``data`` holds every field of the event (``seat``, ``card``,
    ``target``, ``guess``, ``hit``, ...); ``private`` events were seen only by some seats.

    Types: ``round_start``, ``dealt``, ``turn``, ``drew``, ``play``, ``priest_saw``,
    ``baron_compared``, ``king_swapped``, ``prince_drew``, ``chancellor_drew``,
    ``chancellor_return``, ``chancellor_returned``, ``eliminated``, ``forfeit``, ``round_end``,
    ``match_end`` (and ``deck`` in the full record of a finished match)."""

    seq: int = field(metadata=REQUIRED)
    round: int = field(metadata=REQUIRED)
    type: str = field(metadata=REQUIRED)
    data: dict[str, Any] = field(repr=False)
    private: bool = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Event:
        return read(cls, d, data=d)

    @property
    def seat(self) -> int | None:
        return self.data.get("seat")

    @property
    def card(self) -> str | None:
        return self.data.get("card")

    @property
    def target(self) -> int | None:
        return self.data.get("target")

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


@dataclass(slots=True)
class Result(WireModel):
    """How a finished match ended: ``winners`` (seats), ``placings`` (1 = first, per seat)."""

    winners: list[int]
    placings: list[int]
    tokens: list[int] = field(default_factory=list)
    rounds: int = 0


@dataclass(slots=True)
class RoundResult(WireModel):
    """How a round ended: ``reason`` is ``last_standing`` or ``showdown``; every hand and the
    set-aside cards are public then (R25)."""

    round: int = field(metadata=REQUIRED)
    reason: str
    winners: list[int]
    spy_bonus: int | None = None
    hands: list[list[str]] = field(default_factory=list)
    set_aside: list[str] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)


@dataclass(slots=True)
class View(WireModel):
    """What one seat may see of a match (``GET /v1/matches/{id}/view``), or a spectator's
    summary (``seat`` None). ``events`` are this round's, oldest first; ``legal_actions`` is
    non-empty exactly when it is this seat's turn: posting any of them is always legal."""

    match_id: str
    version: int
    status: str = field(metadata=wire(missing="active"))  # waiting, active, finished
    ruleset: str
    seat: int | None
    round: int
    turn: Turn | None
    hand: list[str]
    players: list[Seat]
    deck_count: int
    face_up: list[str]
    known: list[Known]
    legal_actions: list[Action]
    events: list[Event]
    result: Result | None
    last_round: RoundResult | None
    tokens_to_win: int | None = None
    players_count: int = 0
    set_aside_count: int = 0
    two_player_setup: str | None = None
    rated: bool = False
    ladder: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *,
                  event_memo: dict[int, Event] | None = None) -> View:
        """The typed view. ``event_memo`` (seq -> Event, for one running match) reuses the
        events already built for an earlier view of the same match (the offline arena)."""
        if event_memo is None:
            v = read(cls, d)
        else:
            v = read(cls, d, events=[
                event_memo.get(e["seq"]) or event_memo.setdefault(e["seq"], Event.from_dict(e))
                for e in d.get("events", ())])
        if not v.players_count:
            v.players_count = len(v.players)
        return v

    # ------------------------------------------------------------------ conveniences

    @property
    def aborted(self) -> dict[str, Any] | None:
        """Set when a rated match was aborted (a seat made no move of its own before its
        first turn timed out): ``reason``, ``seat``, ``player_id``, ``message``. The match is
        ``finished``, with no ``result``, and rated for nobody."""
        aborted: dict[str, Any] | None = self.raw.get("aborted")
        return aborted

    @property
    def my_turn(self) -> bool:
        """Whether this seat must act now (``legal_actions`` is then non-empty)."""
        return bool(self.legal_actions) and self.turn is not None and self.turn.seat == self.seat

    @property
    def phase(self) -> str | None:
        return None if self.turn is None else self.turn.phase

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    @property
    def me(self) -> Seat:
        """This seat's public record (tokens, discards, ...)."""
        assert self.seat is not None, "a spectator has no seat"
        return self.players[self.seat]

    @property
    def opponents(self) -> list[Seat]:
        """The other seats still in this round."""
        return [p for p in self.players if p.seat != self.seat and not p.eliminated]

    @property
    def targets(self) -> list[int]:
        """Seats a guard, priest, baron or king may choose now: in the round, not you, not
        protected (R12-R18)."""
        return [p.seat for p in self.players
                if p.seat != self.seat and not p.eliminated and not p.protected]

    @property
    def values(self) -> dict[str, int]:
        """Card values under this match's ruleset."""
        return VALUES[self.ruleset]

    @property
    def won(self) -> bool:
        """Whether this seat is among the winners of the finished match."""
        return self.result is not None and self.seat in self.result.winners

    def playable_cards(self) -> list[str]:
        """The distinct cards the legal actions play, in card order (empty in the chancellor
        phase)."""
        seen: list[str] = []
        for a in self.legal_actions:
            if a.card is not None and a.card not in seen:
                seen.append(a.card)
        return seen


# --------------------------------------------------------------------------- matches, players


@dataclass(slots=True)
class SeatInfo(WireModel):
    """Who sits where."""

    seat: int = field(metadata=REQUIRED)
    player_id: str | None = None
    name: str | None = None


@dataclass(slots=True)
class Match(WireModel):
    """One line of a match list (``GET /v1/matches``, ``GET /v1/me/matches``). ``seat`` and
    ``your_turn`` are set in your own list."""

    match_id: str = field(metadata=REQUIRED)
    status: str = field(metadata=REQUIRED)
    ruleset: str = field(metadata=REQUIRED)
    seats: int = field(metadata=REQUIRED)
    players: list[SeatInfo]
    version: int
    round: int = 0
    turn_seat: int | None = None
    winners: list[int] | None = None
    seat: int | None = None
    your_turn: bool = False
    rated: bool = False
    ladder: str | None = None
    created_at: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def aborted(self) -> dict[str, Any] | None:
        """Set when this rated match was aborted (see :attr:`View.aborted`)."""
        aborted: dict[str, Any] | None = self.raw.get("aborted")
        return aborted


@dataclass(slots=True)
class MatchPage(WireModel):
    """A page of matches; pass ``next_cursor`` as ``cursor`` for the next (None: last page)."""

    matches: list[Match]
    next_cursor: int | None


@dataclass(slots=True)
class EventLog(WireModel):
    """``GET /v1/matches/{id}/events``: the events you may see after a ``seq``."""

    match_id: str = field(metadata=REQUIRED)
    version: int
    events: list[Event]
    last_seq: int | None


@dataclass(slots=True)
class Notice(WireModel):
    """One notice of ``GET /v1/me/events``: ``match_started``, ``your_turn`` or
    ``match_finished``, about ``match_id`` at ``version``; or ``challenge`` (you are challenged)
    and ``challenge_update`` (a challenge you are in changed), with ``challenge`` (and
    ``match_id`` once its match exists, else None). ``cursor`` resumes after it. ``view``: your
    view of the match as it was when the notice was read, on the newest match notice of each
    match when asked for (``client.me.events(views=True)``), else None."""

    type: str = field(metadata=REQUIRED)
    match_id: str | None
    version: int
    seat: int | None = None
    cursor: str | None = None
    winners: list[int] | None = None
    deadline: float | None = None
    challenge: Challenge | None = None
    view: View | None = field(default=None, repr=False)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)



@dataclass(slots=True)
class Notices(WireModel):
    """A batch of notices and the cursor to pass as ``after`` next time."""

    events: list[Notice]
    cursor: str = field(metadata=wire(missing="0-0"))


@dataclass(slots=True)
class Player(WireModel):
    """A player. ``token`` is set only in the answer to registering (it is shown once);
    ``accepts_challenges`` only in your own (``client.me.get()``)."""

    id: str = field(metadata=REQUIRED)
    name: str = field(metadata=REQUIRED)
    created_at: float | None = None
    token: str | None = field(default=None, repr=False)
    recent_matches: list[Match] = field(default_factory=list)
    ratings: dict[str, Any] = field(default_factory=dict)
    kind: str = "bot"  # or "human": what the player said it is when it registered
    accepts_challenges: bool | None = None  # your own setting (GET /v1/me only)
    bench: dict[str, Any] | None = None  # benched from the ladders for repeated aborts
    aborts_24h: int = 0  # rated matches aborted by its absence in the last 24 h


@dataclass(slots=True)
class OnlinePlayer(WireModel):
    """One row of ``GET /v1/players/online``."""

    id: str = field(metadata=REQUIRED)
    name: str
    kind: str = "bot"
    ladders: list[str] = field(default_factory=list)  # present on these
    accepts_challenges: bool = False
    last_seen: float | None = None


@dataclass(slots=True)
class ChallengePlayer(WireModel):
    """The challenger, or one opponent with its ``answer``: pending, accepted or declined."""

    id: str = field(metadata=REQUIRED)
    name: str
    kind: str = "bot"
    answer: str | None = None  # None for the challenger


@dataclass(slots=True)
class Challenge(WireModel):
    """A challenge: ``status`` open, accepted (``match_id`` is the match), declined, cancelled
    or expired; ``options`` are the match's (``ruleset``, ``seats``, ``turn_timeout_s``...)."""

    id: str = field(metadata=wire(key="challenge_id", required=True))
    status: str = field(metadata=wire(missing="open"))
    challenger: ChallengePlayer = field(metadata=REQUIRED)
    opponents: list[ChallengePlayer]
    options: dict[str, Any] = field(default_factory=dict)
    rated: bool = False
    match_id: str | None = None
    seat_order: list[str] | None = None
    created_at: float | None = None
    expires_at: float | None = None
    seconds_left: float | None = None
    closed_at: float | None = None
    closed_by: str | None = None
    reason: str | None = None  # why it was declined, as the player who declined said
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ruleset(self) -> str | None:
        return self.options.get("ruleset")

    @property
    def open(self) -> bool:
        return self.status == "open"

    def answer_of(self, player_id: str) -> str | None:
        """``player_id``'s answer (pending, accepted, declined), None if not an opponent."""
        return next((o.answer for o in self.opponents if o.id == player_id), None)


@dataclass(slots=True)
class Challenges(WireModel):
    """``GET /v1/me/challenges``: open ones and those closed lately, newest first."""

    incoming: list[Challenge] = field(default_factory=list)
    outgoing: list[Challenge] = field(default_factory=list)


@dataclass(slots=True)
class LeaderboardRow(WireModel):
    """One line of a ladder's leaderboard (ranked by ``rating`` = mu - 3 sigma)."""

    player_id: str
    name: str | None = None
    rank: int | None = None
    rating: float | None = None
    mu: float | None = None
    sigma: float | None = None
    games: int = 0
    wins: int = 0
    win_rate: float | None = None
    timeouts: int = 0
    seat_balance: list[int] = field(default_factory=list)  # games played in each seat
    provisional: bool = False
    benched: bool = False
    benched_reason: str | None = None
    kind: str = "bot"
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LeaderboardRow:
        return read(cls, d, player_id=d.get("player_id") or d.get("id") or "")


@dataclass(slots=True)
class Ladder(WireModel):
    """A configured ladder; ``leaderboard`` is filled by ``client.ladder.get(name)``."""

    name: str = field(metadata=REQUIRED)
    ruleset: str | None = None
    seats: int | None = None
    turn_timeout_s: float | None = None
    interval_s: float | None = None
    max_concurrent: int | None = None
    description: str | None = None
    entries: int | None = None  # how many players are entered
    leaderboard: list[LeaderboardRow] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Ladder:
        entries = d.get("entries")  # a count (older servers sent other shapes: ignored)
        return read(cls, d, entries=entries if isinstance(entries, int) else None)


@dataclass(slots=True)
class LadderEntry(WireModel):
    """Your standing in a ladder, as entering or leaving answers it."""

    ladder: str
    player_id: str | None = None
    entered: bool = False
    present: bool | None = None  # polled recently enough to be scheduled
    benched: bool = False
    benched_reason: str | None = None
    active_matches: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], ladder: str = "") -> LadderEntry:
        """``ladder``: the ladder's name, for an answer that does not say it."""
        return read(cls, d, ladder=d.get("ladder") or ladder)


__all__ = [
    "CHANCELLOR_RETURN", "PLAY", "Action", "Challenge", "ChallengePlayer", "Challenges", "Event",
    "EventLog", "Known", "Ladder", "LadderEntry", "LeaderboardRow", "Match", "MatchPage",
    "Notice", "Notices", "OnlinePlayer", "Player", "Result", "RoundResult", "Seat", "SeatInfo",
    "Turn", "View",
]
