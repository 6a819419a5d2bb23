"""A thin HTTP client for the API tests (plain ``requests``, no SDK) and engine-side helpers.

Everything here talks to the real server over HTTP; the engine is used only to replay a match
locally and compute what the server should have answered.
"""

from __future__ import annotations

import json
import random
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from service import engine
from service.engine import MatchState

#: keys the service adds around the engine's projection (service/http/views.py::_decorate)
SERVICE_KEYS = frozenset({"match_id", "version", "options", "rated", "ladder", "created_at",
                          "aborted"})
SERVICE_TURN_KEYS = frozenset({"deadline", "seconds_left"})
SERVICE_PLAYER_KEYS = frozenset({"player_id", "name"})

#: options that make a match never time out during a test
NO_TIMEOUTS = {"turn_timeout_s": 86400, "timeout_policy": "auto"}


@dataclass(frozen=True)
class Player:
    id: str
    name: str
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


class ApiError(AssertionError):
    pass


class Api:
    """Requests against one server; ``session`` defaults to a new ``requests.Session``."""

    def __init__(self, base_url: str, session: requests.Session | None = None,
                 timeout: float = 30.0) -> None:
        self.base = base_url.rstrip("/")
        self.s = session or requests.Session()
        self.s.trust_env = False  # no proxies from the environment for 127.0.0.1
        self.timeout = timeout

    def close(self) -> None:
        self.s.close()

    # ------------------------------------------------------------------ raw

    def request(self, method: str, path: str, *, token: str | None = None,
                headers: dict[str, str] | None = None, **kw: Any) -> requests.Response:
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = f"Bearer {token}"
        kw.setdefault("timeout", self.timeout)
        return self.s.request(method, self.base + path, headers=h, **kw)

    def ok(self, resp: requests.Response, status: int = 200) -> dict[str, Any]:
        if resp.status_code != status:
            raise ApiError(f"{resp.request.method} {resp.url} -> {resp.status_code} "
                           f"(wanted {status}): {resp.text[:1000]}")
        body = resp.json()
        assert isinstance(body, dict), body
        return body

    # ------------------------------------------------------------------ resources

    def register(self, prefix: str = "bot") -> Player:
        name = f"{prefix[:18]}-{secrets.token_hex(5)}"
        d = self.ok(self.request("POST", "/v1/players", json={"name": name}), 201)
        assert d["name"] == name and d["token"] and d["id"], d
        return Player(d["id"], d["name"], d["token"])

    def create(self, creator: Player, **options: Any) -> dict[str, Any]:
        return self.ok(self.request("POST", "/v1/matches", token=creator.token, json=options),
                       201)

    def join(self, player: Player, mid: str) -> dict[str, Any]:
        return self.ok(self.request("POST", f"/v1/matches/{mid}/join", token=player.token))

    def view(self, player: Player, mid: str) -> dict[str, Any]:
        return self.ok(self.request("GET", f"/v1/matches/{mid}/view", token=player.token))

    def summary(self, mid: str, token: str | None = None) -> dict[str, Any]:
        return self.ok(self.request("GET", f"/v1/matches/{mid}", token=token))

    def events(self, mid: str, token: str | None = None, after: int = -1) -> dict[str, Any]:
        return self.ok(self.request("GET", f"/v1/matches/{mid}/events", token=token,
                                    params={"after": after}))

    def post_action(self, player: Player, mid: str, action: Any,
                    headers: dict[str, str] | None = None) -> requests.Response:
        return self.request("POST", f"/v1/matches/{mid}/actions", token=player.token,
                            json=action, headers=headers)

    def act(self, player: Player, mid: str, action: dict[str, Any]) -> dict[str, Any]:
        return self.ok(self.post_action(player, mid, action))

    # ------------------------------------------------------------------ whole matches

    def new_match(self, seats: int, *, prefix: str = "bot",
                  **options: Any) -> tuple[str, list[Player], list[dict[str, Any]]]:
        """Register ``seats`` players, create the match with the first, join them all in seat
        order. Returns the match id, the players by seat, and every join's answer."""
        players = [self.register(f"{prefix}{i}") for i in range(seats)]
        created = self.create(players[0], seats=seats, **options)
        mid = created["match_id"]
        assert created["status"] == "waiting", created
        joins = []
        for i, p in enumerate(players):
            v = self.join(p, mid)
            assert v["seat"] == i, (i, v["seat"])
            joins.append(v)
        assert joins[-1]["status"] == "active", joins[-1]
        return mid, players, joins


def error_of(resp: requests.Response) -> dict[str, Any]:
    """The JSON error body, checked for shape: ``{status, code, message, errors?, rule?}``
    (``rule``, a link to the rule a refusal applies, exactly when the message cites one)."""
    assert resp.headers.get("Content-Type", "").startswith("application/json"), (
        resp.status_code, resp.headers.get("Content-Type"), resp.text[:300])
    body = resp.json()
    assert isinstance(body, dict), body
    assert body.get("status") == resp.status_code, (resp.status_code, body)
    assert isinstance(body.get("code"), str) and body["code"], body
    assert isinstance(body.get("message"), str) and body["message"], body
    # (reason and until: a ban's, on player_banned)
    assert set(body) <= {"status", "code", "message", "errors", "rule", "reason", "until"}, body
    cited = re.search(r"\((R\d{1,2}[a-z]?)\)", body["message"])
    assert body.get("rule") == (f"/rules#{cited.group(1)}" if cited else None), body
    return body


# --------------------------------------------------------------------------- engine side


def engine_match(options: dict[str, Any]) -> MatchState:
    """The engine's match for the creation ``options`` (as posted, or as shown once finished)."""
    return engine.new_match(
        options["ruleset"], options["seats"], seed=options["seed"],
        tokens_to_win=options.get("tokens_to_win"), first_seat=options.get("first_seat"),
        deck=options.get("deck"), two_player_setup=options.get("two_player_setup", "three-up"))


def engine_part(v: dict[str, Any]) -> dict[str, Any]:
    """An HTTP view or public summary without the service's own fields, i.e. what
    ``engine.view`` / ``engine.public_view`` should have produced."""
    out = {k: val for k, val in v.items() if k not in SERVICE_KEYS}
    if out.get("turn") is not None:
        out["turn"] = {k: val for k, val in out["turn"].items() if k not in SERVICE_TURN_KEYS}
    out["players"] = [{k: val for k, val in p.items() if k not in SERVICE_PLAYER_KEYS}
                      for p in out["players"]]
    return out


def expected_view(state: MatchState, seat: int | None) -> dict[str, Any]:
    """What the API must show ``seat`` (None: a spectator), per service/http/views.py."""
    if seat is None:
        return engine.public_view(state, since=state.round_start_seq)
    return engine.view(state, seat, since=state.round_start_seq)


def norm(obj: Any) -> Any:
    """Through JSON and back, as on the wire (tuples become lists)."""
    return json.loads(json.dumps(obj))


norm_events = norm


def canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)


def actions_from_record(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The actions a match's full event record (``GET .../events`` once finished) was made of,
    in wire form: each ``play`` event, and each chancellor's private ``chancellor_returned``."""
    out: list[dict[str, Any]] = []
    for e in events:
        if e["type"] == "play":
            a: dict[str, Any] = {"type": "play", "card": e["card"]}
            if "target" in e:
                a["target"] = e["target"]
            if "guess" in e:
                a["guess"] = e["guess"]
            out.append(a)
        elif e["type"] == "chancellor_returned":
            out.append({"type": "chancellor_return", "keep": e["keep"],
                        "bottom": list(e["bottom"])})
    return out


def replay(options: dict[str, Any], actions: list[dict[str, Any]]) -> MatchState:
    s = engine_match(options)
    for a in actions:
        engine.apply_inplace(s, a)
    return s


def play_randomly(api: Api, mid: str, players: list[Player], rng: random.Random,
                  first_view: dict[str, Any], *, max_steps: int = 5000,
                  on_action: Callable[[int, dict[str, Any], dict[str, Any]], None] | None = None,
                  ) -> list[dict[str, Any]]:
    """Play the match to its end: each time, the player to act reads their view and posts one of
    its ``legal_actions`` verbatim. ``first_view`` is any answer that shows whose turn it is.
    Returns the actions, in order. ``on_action(seat, action, answer)`` sees each answer."""
    done: list[dict[str, Any]] = []
    v = first_view
    for _ in range(max_steps):
        if v["status"] == "finished":
            return done
        seat = v["turn"]["seat"]
        mine = api.view(players[seat], mid)
        assert mine["seat"] == seat and mine["legal_actions"], mine
        action = rng.choice(mine["legal_actions"])
        v = api.act(players[seat], mid, action)
        done.append(action)
        if on_action is not None:
            on_action(seat, action, v)
    raise AssertionError(f"match {mid} did not end within {max_steps} actions")
