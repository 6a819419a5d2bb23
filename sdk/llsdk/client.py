"""The HTTP client: one ``requests.Session``, one private request path, namespaced calls.

    from llsdk import Client, Action

    client = Client("http://127.0.0.1:8000", token="llt_...")
    me = client.me.get()
    for m in client.me.matches(status="active").matches:
        view = client.matches.view(m.match_id)
        if view.my_turn:
            client.matches.act(m.match_id, view.legal_actions[0])

Retries: network errors, 5xx and 429 are retried with exponential backoff and jitter (429 and
503 wait what ``Retry-After`` says). A request is only retried when a repeat cannot do anything twice:
reads, DELETEs, actions (each carries an ``Idempotency-Key``, the same on every retry), and any
request that never reached the server (connection refused). After the last retry the client
raises :class:`~llsdk.errors.TransportError` or the API's error as an
:class:`~llsdk.errors.APIError` subclass.

Interrupting: :meth:`Client.interrupt` (from any thread) cuts every request in flight at once,
a long-poll included (their sockets are shut down), and they raise ``TransportError`` without
retrying; requests made afterwards work as usual. ``Bot.run`` uses it to stop within a moment.
"""

from __future__ import annotations

import json as _json
import logging
import random
import socket
import threading
import uuid
import weakref
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import HTTPConnectionPool

from . import __version__
from .errors import AlreadyJoined, APIError, RateLimited, ServerError, TransportError, error_for
from .models import (
    Action,
    Challenge,
    Challenges,
    EventLog,
    Ladder,
    LadderEntry,
    Match,
    MatchPage,
    Notices,
    OnlinePlayer,
    Player,
    View,
)

log = logging.getLogger("llsdk")

DEFAULT_URL = "http://127.0.0.1:8000"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


class _InterruptibleAdapter(HTTPAdapter):
    """An HTTPAdapter that remembers its open connections, so that :meth:`interrupt` can shut
    their sockets down: a blocked read (a long-poll) returns at once instead of waiting its
    time out. (urllib3 offers no way to cancel a request in flight from another thread.)"""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._conns: weakref.WeakSet[Any] = weakref.WeakSet()
        super().__init__(*args, **kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        conns = self._conns

        def tracked(pool_cls: type[HTTPConnectionPool]) -> type[HTTPConnectionPool]:
            base = pool_cls.ConnectionCls

            def connect(conn: Any) -> None:
                base.connect(conn)
                conns.add(conn)

            conn_cls = type(base.__name__, (base,), {"connect": connect})
            return type(pool_cls.__name__, (pool_cls,), {"ConnectionCls": conn_cls})

        pm = self.poolmanager
        pm.pool_classes_by_scheme = {k: tracked(v) for k, v in pm.pool_classes_by_scheme.items()}

    def interrupt(self) -> None:
        for conn in list(self._conns):
            sock = getattr(conn, "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def _seconds(wait: float) -> str:
    """A wait as the API reads it: plain decimals, never an exponent (``str(5e-05)`` is
    ``'5e-05'``, which the server refuses), never negative."""
    return f"{max(0.0, wait):.3f}".rstrip("0").rstrip(".")


class Client:
    """A client of one Love Letter Arena server.

    ``token`` authenticates as a player (``Authorization: Bearer``); ``timeout`` is the per-request
    timeout in seconds (long-polls add their wait to it); ``max_retries`` retries after the
    first attempt (0: none); ``backoff`` is the first retry's delay, doubled each time up to
    ``max_backoff``. ``session`` lets you bring your own ``requests.Session``.
    """

    def __init__(self, base_url: str = DEFAULT_URL, token: str | None = None, *,
                 timeout: float = 30.0, max_retries: int = 5, backoff: float = 0.2,
                 max_backoff: float = 2.0, session: requests.Session | None = None,
                 user_agent: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.session = session or requests.Session()
        self._adapters: list[_InterruptibleAdapter] = []
        self._epoch = 0  # bumped by interrupt(): requests begun before it give up
        self._interrupted = threading.Condition()
        if session is None:
            # room for a bot's long-poll plus its moves from several threads
            adapter = _InterruptibleAdapter(pool_connections=4, pool_maxsize=32)
            self.session.mount("http://", adapter)
            self.session.mount("https://", adapter)
            self._adapters.append(adapter)
        self.session.headers["User-Agent"] = user_agent or f"llsdk/{__version__}"
        self.session.headers["Accept"] = "application/json"
        self._rng = random.Random()
        self._rng_lock = threading.Lock()
        self.players = Players(self)
        self.matches = Matches(self)
        self.me = Me(self)
        self.ladder = Ladders(self)
        self.challenges = ChallengesAPI(self)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self.session.close()

    def interrupt(self) -> None:
        """Cut every request of this client in flight now (from any thread): each raises
        :class:`~llsdk.errors.TransportError` at once, without retrying. Later requests work
        as usual. (With a ``session`` of your own, only requests waiting to retry are cut.)"""
        with self._interrupted:
            self._epoch += 1
            self._interrupted.notify_all()
        for adapter in self._adapters:
            adapter.interrupt()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.base_url!r}, token={'***' if self.token else None})"

    def with_token(self, token: str) -> Client:
        """A new client of the same server and settings acting as another player (of the same
        class, so a subclass's own settings carry over)."""
        return type(self)(self.base_url, token, timeout=self.timeout, max_retries=self.max_retries,
                      backoff=self.backoff, max_backoff=self.max_backoff)

    # ------------------------------------------------------------------ account

    def rotate_token(self) -> str:
        """Get a new token for this client's player and use it from now on; the old one is
        refused (401) from the server's next request on, on every process. Returns the new
        token: store it (it is shown only this once). Sent once, never repeated: a repeat
        would carry the revoked token. If the answer is lost (a :class:`TransportError`),
        the old token may already be revoked."""
        data = self._json(self._request("POST", "/v1/me/token"))
        self.token = str(data["token"])
        return self.token

    def delete_account(self) -> None:
        """Delete this client's player for good: its token, ladder entries, ratings and
        profile go, its running matches end as resignations, and it shows as "deleted player"
        wherever it appeared."""
        self._request("DELETE", "/v1/me")
        self.token = None

    # ------------------------------------------------------------------ health

    def health(self) -> dict[str, Any]:
        """``GET /healthz``: the process answers."""
        data: dict[str, Any] = self._json(self._request("GET", "/healthz"))
        return data

    def ready(self) -> dict[str, Any]:
        """``GET /readyz``: the service and its Redis answer (else ``ServiceUnavailable``)."""
        data: dict[str, Any] = self._json(self._request("GET", "/readyz"))
        return data

    # ------------------------------------------------------------------ the one request path

    def _delay(self, attempt: int) -> float:
        base = min(self.max_backoff, self.backoff * 2.0 ** attempt)
        with self._rng_lock:
            return base * (0.5 + self._rng.random() / 2)  # jitter: spread retrying bots

    def _request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                 json: Any = None, data: bytes | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float | None = None,
                 retry: bool | None = None, auth: bool = True) -> requests.Response:
        """Send one request, retrying as the module docstring says; returns the successful
        response (2xx or 304) or raises. ``retry`` forces (or forbids) retrying after a lost
        response; by default only safe methods and requests with an Idempotency-Key retry."""
        url = self.base_url + path
        hdrs: dict[str, str] = dict(headers or {})
        if auth and self.token:
            hdrs["Authorization"] = f"Bearer {self.token}"
        if retry is None:
            retry = method.upper() in _SAFE_METHODS or "Idempotency-Key" in hdrs
        # (connect, read): the read timeout covers a long-poll's wait
        to = (min(10.0, self.timeout), timeout if timeout is not None else self.timeout)
        attempt = 0
        epoch = self._epoch
        while True:
            delay: float | None = None
            try:
                resp = self.session.request(method, url, params=params, json=json, data=data,
                                            headers=hdrs, timeout=to)
            except (requests.ConnectionError, requests.Timeout) as e:
                if self._epoch != epoch:
                    raise TransportError(f"{method} {path}: interrupted") from e
                never_sent = _never_sent(e)
                if attempt >= self.max_retries or not (retry or never_sent):
                    raise TransportError(f"{method} {path}: {e}") from e
                log.info("%s %s failed (%s); retry %d", method, path, type(e).__name__,
                         attempt + 1)
            except requests.RequestException as e:
                raise TransportError(f"{method} {path}: {e}") from e
            else:
                if resp.status_code < 400:
                    return resp
                err = self._error(resp)
                err.retried = attempt > 0
                retryable = isinstance(err, RateLimited) or (
                    isinstance(err, ServerError) and retry)
                if attempt >= self.max_retries or not retryable:
                    raise err
                retry_after = getattr(err, "retry_after", None)
                if retry_after is not None:  # 429, 503
                    delay = min(retry_after + 0.05, 60.0)
                log.info("%s %s answered %s; retry %d", method, path, err.status, attempt + 1)
            with self._interrupted:
                if self._interrupted.wait_for(lambda: self._epoch != epoch,
                                              self._delay(attempt) if delay is None else delay):
                    raise TransportError(f"{method} {path}: interrupted")
            attempt += 1

    @staticmethod
    def _error(resp: requests.Response) -> APIError:
        try:
            body = resp.json()
        except ValueError:
            body = {"message": resp.text[:200] or resp.reason}
        return error_for(resp.status_code, body, resp.headers)

    @staticmethod
    def _json(resp: requests.Response) -> Any:
        try:
            return resp.json()
        except ValueError as e:
            raise TransportError(f"{resp.request.method} {resp.url}: the answer is not JSON "
                                 f"({resp.status_code} {resp.text[:100]!r})") from e


def _never_sent(e: BaseException) -> bool:
    """Whether a connection error happened before the request could reach the server (so a
    retry cannot apply anything twice)."""
    if isinstance(e, requests.ConnectTimeout):
        return True
    text = repr(e)
    return any(s in text for s in ("NewConnectionError", "Connection refused",
                                   "Failed to establish", "NameResolutionError"))


class _Namespace:
    def __init__(self, client: Client) -> None:
        self._c = client

    def _get(self, path: str, params: Mapping[str, Any] | None = None,
             timeout: float | None = None) -> Any:
        return self._c._json(self._c._request("GET", path, params=params, timeout=timeout))


class Players(_Namespace):
    """``/v1/players``: registration and public profiles."""

    def register(self, name: str, kind: str | None = None) -> Player:
        """Register a player (``kind``: "bot", the default, or "human"). The answer's
        ``token`` is shown only this once: keep it."""
        body: dict[str, Any] = {"name": name}
        if kind is not None:
            body["kind"] = kind
        resp = self._c._request("POST", "/v1/players", json=body, auth=False)
        return Player.from_dict(self._c._json(resp))

    def get(self, player_id: str) -> Player:
        """A public profile with recent matches."""
        return Player.from_dict(self._get(f"/v1/players/{player_id}"))

    def online(self, limit: int = 100) -> list[OnlinePlayer]:
        """Who is online: present on a ladder, or listening for challenges (by name)."""
        data = self._get("/v1/players/online", {"limit": limit})
        return [OnlinePlayer.from_dict(d) for d in data.get("players", [])]


class Matches(_Namespace):
    """``/v1/matches``: create, join, view, act, resign, events."""

    def create(self, ruleset: str = "classic", seats: int = 2, *,
               turn_timeout_s: int | None = None, timeout_policy: str | None = None,
               max_timeouts: int | None = None, tokens_to_win: int | None = None,
               seed: str | None = None, deck: list[str] | None = None,
               first_seat: int | None = None, two_player_setup: str | None = None) -> View:
        """Create an (unrated) match; you do not sit in it until you :meth:`join`."""
        body: dict[str, Any] = {"ruleset": ruleset, "seats": seats}
        for k, v in (("turn_timeout_s", turn_timeout_s), ("timeout_policy", timeout_policy),
                     ("max_timeouts", max_timeouts), ("tokens_to_win", tokens_to_win),
                     ("seed", seed), ("deck", deck), ("first_seat", first_seat),
                     ("two_player_setup", two_player_setup)):
            if v is not None:
                body[k] = v
        return View.from_dict(self._c._json(self._c._request("POST", "/v1/matches", json=body)))

    def list(self, *, status: str | None = None, player: str | None = None, limit: int = 20,
             cursor: int = 0) -> MatchPage:
        """Matches, newest first (``next_cursor`` pages on)."""
        params: dict[str, Any] = {"limit": limit, "cursor": cursor}
        if status:
            params["status"] = status
        if player:
            params["player"] = player
        return MatchPage.from_dict(self._get("/v1/matches", params))

    def get(self, match_id: str) -> View:
        """The public summary (what a spectator may see)."""
        return View.from_dict(self._get(f"/v1/matches/{match_id}"))

    def join(self, match_id: str) -> View:
        """Take the next free seat; the last seat starts the match. Retried after a lost
        answer: when the retry finds you seated (the first attempt went through), you get your
        view; a first attempt that finds you seated raises ``AlreadyJoined``."""
        try:
            resp = self._c._request("POST", f"/v1/matches/{match_id}/join", retry=True)
        except AlreadyJoined as e:
            if not e.retried:
                raise
            return self.view(match_id)  # an earlier attempt went through
        return View.from_dict(self._c._json(resp))

    def view(self, match_id: str) -> View:
        """Your view of the match now."""
        return View.from_dict(self._get(f"/v1/matches/{match_id}/view"))

    def wait_view(self, match_id: str, after: int, wait: float = 30.0) -> View:
        """Long-poll: your view once the match is past version ``after``, or the unchanged
        view after ``wait`` seconds (the server caps it at 60)."""
        return View.from_dict(self._get(f"/v1/matches/{match_id}/view",
                                        {"after": after, "wait": _seconds(wait)},
                                        timeout=self._c.timeout + wait))

    def watch(self, match_id: str, wait: float = 30.0) -> Iterator[View]:
        """Your view now and at every change until the match finishes."""
        v = self.view(match_id)
        yield v
        while v.status != "finished":
            nxt = self.wait_view(match_id, after=v.version, wait=wait)
            if nxt.version != v.version:
                yield nxt
            v = nxt

    def act(self, match_id: str, action: Action | Mapping[str, Any], *,
            expected_version: int | None = None, idempotency_key: str | None = None) -> View:
        """Post an action; answers with your new view. A fresh ``Idempotency-Key`` (uuid4) is
        sent unless you give one; it is the same on every retry, so the move is applied once.
        ``expected_version`` refuses it with ``VersionConflict`` if the match has moved."""
        body = action.to_dict() if isinstance(action, Action) else dict(action)
        if expected_version is not None:
            body["expected_version"] = expected_version
        key = idempotency_key or str(uuid.uuid4())
        resp = self._c._request("POST", f"/v1/matches/{match_id}/actions", json=body,
                                headers={"Idempotency-Key": key})
        return View.from_dict(self._c._json(resp))

    def resign(self, match_id: str) -> View:
        """Forfeit the match (R27)."""
        resp = self._c._request("POST", f"/v1/matches/{match_id}/resign")
        return View.from_dict(self._c._json(resp))

    def events(self, match_id: str, after: int = -1) -> EventLog:
        """The events you may see with ``seq > after`` (all of them once the match ended)."""
        return EventLog.from_dict(self._get(f"/v1/matches/{match_id}/events", {"after": after}))


class Me(_Namespace):
    """``/v1/me``: the token's player, its matches and its notices."""

    def get(self) -> Player:
        return Player.from_dict(self._get("/v1/me"))

    def matches(self, *, status: str | None = None, limit: int = 20,
                cursor: int = 0) -> MatchPage:
        """Your matches, newest first, each with ``seat`` and ``your_turn``."""
        params: dict[str, Any] = {"limit": limit, "cursor": cursor}
        if status:
            params["status"] = status
        return MatchPage.from_dict(self._get("/v1/me/matches", params))

    def all_matches(self, status: str | None = None) -> Iterator[Match]:
        """Every match of yours (all pages)."""
        cursor: int | None = 0
        while cursor is not None:
            page = self.matches(status=status, limit=100, cursor=cursor)
            yield from page.matches
            cursor = page.next_cursor

    def events(self, after: str | None = None, wait: float = 0.0, *,
               challenges: bool = False, views: bool = False) -> Notices:
        """Your notices after the cursor ``after`` (None: from the oldest kept); with ``wait``
        the server holds the request up to that many seconds until one arrives. With
        ``challenges`` you say you answer challenges (you are listed as accepting them in
        ``players.online()`` while you poll). With ``views`` the newest match notice of each
        match carries your current view of it (``Notice.view``): act on it without reading
        the view (``Bot.run`` does)."""
        params: dict[str, Any] = {"wait": _seconds(wait)}
        if after is not None:
            params["after"] = after
        if challenges:
            params["challenges"] = "true"
        if views:
            params["views"] = "true"
        return Notices.from_dict(self._get("/v1/me/events", params,
                                           timeout=self._c.timeout + wait))

    def wait_events(self, after: str | None, wait: float = 30.0) -> Notices:
        """Long-poll alias of :meth:`events`."""
        return self.events(after=after, wait=wait)

    def settings(self, *, accepts_challenges: bool) -> Player:
        """Change your settings: ``accepts_challenges=False`` refuses every challenge to you
        (the challenger gets ``ChallengesOff``)."""
        resp = self._c._request("PATCH", "/v1/me", json={"accepts_challenges": accepts_challenges},
                                retry=True)
        return Player.from_dict(self._c._json(resp))

    def blocks(self) -> list[dict[str, Any]]:
        """The players you block (id, name, kind, blocked_at), newest first."""
        data = self._get("/v1/me/blocks")
        return list(data.get("blocks", [])) if isinstance(data, dict) else []

    def block(self, player: str) -> dict[str, Any]:
        """Block a player (a name or an id): its challenges to you are refused (``Blocked``)."""
        resp = self._c._request("POST", "/v1/me/blocks", json={"player": player}, retry=True)
        return dict(self._c._json(resp))

    def unblock(self, player_id: str) -> None:
        self._c._request("DELETE", f"/v1/me/blocks/{player_id}")

    def head(self) -> str:
        """The cursor of your newest notice: follow from here to see only what comes next."""
        cursor: str | None = None
        while True:
            page = self.events(after=cursor)
            if not page.events:
                return page.cursor if cursor is None else cursor
            cursor = page.cursor


class Ladders(_Namespace):
    """``/v1/ladders``: the configured ladders, leaderboards, entering and leaving."""

    def list(self) -> list[Ladder]:
        data = self._get("/v1/ladders")
        items = data.get("ladders", []) if isinstance(data, dict) else data
        return [Ladder.from_dict(d) for d in items]

    def get(self, name: str) -> Ladder:
        """The ladder and its leaderboard."""
        return Ladder.from_dict(self._get(f"/v1/ladders/{name}"))

    def enter(self, name: str) -> LadderEntry:
        """Enter your bot in the ladder: it is scheduled while it keeps polling (a running
        :meth:`Bot.run <llsdk.Bot.run>` does). Entering twice is harmless."""
        resp = self._c._request("POST", f"/v1/ladders/{name}/entries", retry=True)
        return LadderEntry.from_dict(_body(resp), name)

    def leave(self, name: str, *, timeout: float | None = None) -> LadderEntry:
        """Leave the ladder: no new match is formed for you there (running matches are
        played out). ``timeout`` bounds each try, in seconds."""
        resp = self._c._request("DELETE", f"/v1/ladders/{name}/entries", timeout=timeout)
        return LadderEntry.from_dict(_body(resp), name)


class ChallengesAPI(_Namespace):
    """``/v1/challenges``: challenge players by name or id to an unrated match, and answer."""

    def create(self, opponents: str | list[str], ruleset: str = "classic", *,
               turn_timeout_s: int | None = None, tokens_to_win: int | None = None,
               timeout_policy: str | None = None, max_timeouts: int | None = None,
               seed: str | None = None, deck: list[str] | None = None,
               first_seat: int | None = None, two_player_setup: str | None = None,
               seat_order: list[str] | None = None,
               expires_in_s: int | None = None) -> Challenge:
        """Challenge ``opponents`` (a name or id, or a list of 1 to 5); each gets a
        ``challenge`` notice. The match starts when all accept (``match_id``). Not retried
        after a lost answer (look in :meth:`list`): a repeat is refused with
        ``AlreadyChallenged`` while the first is open."""
        names = [opponents] if isinstance(opponents, str) else list(opponents)
        body: dict[str, Any] = {"opponents": names, "ruleset": ruleset}
        for k, v in (("turn_timeout_s", turn_timeout_s), ("tokens_to_win", tokens_to_win),
                     ("timeout_policy", timeout_policy), ("max_timeouts", max_timeouts),
                     ("seed", seed), ("deck", deck), ("first_seat", first_seat),
                     ("two_player_setup", two_player_setup), ("seat_order", seat_order),
                     ("expires_in_s", expires_in_s)):
            if v is not None:
                body[k] = v
        resp = self._c._request("POST", "/v1/challenges", json=body)
        return Challenge.from_dict(self._c._json(resp))

    def get(self, challenge_id: str) -> Challenge:
        return Challenge.from_dict(self._get(f"/v1/challenges/{challenge_id}"))

    def _answer(self, challenge_id: str, what: str) -> Challenge:
        # a repeated answer answers the same and changes nothing: safe to retry
        resp = self._c._request("POST", f"/v1/challenges/{challenge_id}/{what}", retry=True)
        return Challenge.from_dict(self._c._json(resp))

    def accept(self, challenge_id: str) -> Challenge:
        """Accept; the last accept starts the match (``match_id``)."""
        return self._answer(challenge_id, "accept")

    def decline(self, challenge_id: str, reason: str | None = None) -> Challenge:
        """Decline; ``reason`` (up to 200 characters) is shown to the challenger."""
        if reason is None:
            return self._answer(challenge_id, "decline")
        resp = self._c._request("POST", f"/v1/challenges/{challenge_id}/decline",
                                json={"reason": reason[:200]}, retry=True)
        return Challenge.from_dict(self._c._json(resp))

    def cancel(self, challenge_id: str) -> Challenge:
        """Withdraw a challenge you made."""
        return self._answer(challenge_id, "cancel")

    def list(self) -> Challenges:
        """Yours, incoming and outgoing: the open ones and those closed lately."""
        return Challenges.from_dict(self._get("/v1/me/challenges"))


def _body(resp: requests.Response) -> dict[str, Any]:
    if not resp.content:
        return {}
    try:
        data = _json.loads(resp.content)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {"data": data}


__all__ = ["DEFAULT_URL", "ChallengesAPI", "Client", "Ladders", "Matches", "Me", "Players"]
