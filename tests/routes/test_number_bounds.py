"""Every number is bounded (issue 11, item 6), over HTTP against the real app under gunicorn.

Integers in bodies, queries and headers are parsed with explicit bounds and ASCII digits only;
anything else is a 4xx with a stable code and changes nothing (the whole private Redis is
compared before and after). The issue's cases: a JSON integer of 5,000 digits in any body field
(Python converts at most 4,300 digits: it was a 500), ``If-Match: "²"`` (``"²".isdigit()`` is
true but ``int("²")`` raises: a 500), ``If-None-Match`` with non-ASCII digits or 4,400 digits.

Where gunicorn answers by itself (a request line or a header line too long, too many headers)
the app never sees the request: the client gets gunicorn's own HTML answer. Those answers are
pinned here, as the README describes them."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis
import requests

from tests.support.apiclient import NO_TIMEOUTS, Api, Player, error_of
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer
from tests.support.snapshot import redis_state

HUGE = "9" * 5000  # beyond Python's 4,300-digit int conversion limit
AT_LIMIT = "9" * 4300
DIGITS_4400 = "1" * 4400
LONG_Q = "9" * 4000  # in a query: a request line over 4,094 bytes is gunicorn's 414
SUPERSCRIPT_2 = "\u00b2"  # "²": str.isdigit() is true, int() refuses it
ARABIC_12 = "\u0661\u0662"  # "١٢": decimal digits that int() and float() accept
FULLWIDTH_1 = "\uff11"  # "１": likewise

# Classic, 2 players, seat 0 first, holding guard + handmaid: HIT is legal (and ends round 1),
# so a header that slipped through would change the match.
DECK = ["princess", "guard", "guard", "guard", "guard", "priest", "handmaid",
        "baron", "prince", "priest", "baron", "handmaid", "prince", "king", "countess", "guard"]
HIT = '{"type": "play", "card": "guard", "target": 1, "guess": "priest"}'


@dataclass
class Game:
    api: Api
    mid: str
    players: list[Player]


@pytest.fixture(scope="module")
def game(api: Api) -> Game:
    mid, seated, _ = api.new_match(2, prefix="num", ruleset="classic", seed="numbers",
                                   first_seat=0, deck=DECK, **NO_TIMEOUTS)
    return Game(api, mid, seated)


@pytest.fixture
def r(redis_server: RedisProcess) -> Iterator[redis.Redis]:
    client = redis_server.client()
    yield client
    client.close()


def post_raw(api: Api, path: str, body: str, token: str | None,
             headers: dict[str, str] | None = None) -> requests.Response:
    h = {"Content-Type": "application/json", **(headers or {})}
    return api.request("POST", path, token=token, data=body.encode(), headers=h)


# --------------------------------------------------------------------------- bodies

NUMBERS = {"<HUGE>": HUGE, "<AT_LIMIT>": AT_LIMIT, "<FORTY>": "9" * 40,
           "<LONG_FLOAT>": "1" + "0" * 5000 + ".5"}

BODY_CASES = [
    # (path, body); {mid} is the game's match, <NAME> a number of NUMBERS
    ("/v1/matches/{mid}/actions",
     '{"type": "play", "card": "guard", "target": <HUGE>, "guess": "priest"}'),
    ("/v1/matches/{mid}/actions",
     '{"type": "play", "card": "guard", "target": -<HUGE>, "guess": "priest"}'),
    ("/v1/matches/{mid}/actions",
     '{"type": "play", "card": "guard", "target": <AT_LIMIT>, "guess": "priest"}'),
    ("/v1/matches/{mid}/actions",
     '{"type": "play", "card": "guard", "target": 1, "guess": "priest", '
     '"expected_version": <HUGE>}'),
    ("/v1/matches/{mid}/actions",
     '{"type": "play", "card": "guard", "target": 1, "guess": "priest", '
     '"expected_version": <FORTY>}'),
    ("/v1/matches/{mid}/actions",
     '{"type": "play", "card": "guard", "target": 1, "guess": "priest", '
     '"expected_version": -1}'),
    ("/v1/matches/{mid}/actions", '{"type": "play", "card": "handmaid", "x": [<HUGE>]}'),
    ("/v1/matches/{mid}/actions", '{"type": <HUGE>}'),
    ("/v1/matches/{mid}/actions",
     '{"type": "play", "card": "guard", "target": <LONG_FLOAT>, "guess": "priest"}'),
    ("/v1/matches/{mid}/actions",
     '{"type": "play", "card": "guard", "target": 1e5000, "guess": "priest"}'),
    ("/v1/matches", '{"ruleset": "classic", "seats": <HUGE>}'),
    ("/v1/matches", '{"ruleset": "classic", "seats": 2, "turn_timeout_s": <HUGE>}'),
    ("/v1/matches", '{"ruleset": "classic", "seats": 2, "deck": [<HUGE>]}'),
    ("/v1/matches", '{"ruleset": "classic", "seats": 2, "seed": <HUGE>}'),
    ("/v1/matches", '{"ruleset": "classic", "seats": 2, "tokens_to_win": <HUGE>}'),
    ("/v1/players", '{"name": <HUGE>}'),
    ("/v1/players", '{"name": "num-huge", "n": <HUGE>}'),
]


@pytest.mark.parametrize(("path", "body"), BODY_CASES,
                         ids=[f"{i}:{p.rsplit('/', 1)[-1]}" for i, (p, _) in
                              enumerate(BODY_CASES)])
def test_huge_integers_in_bodies_are_422(game: Game, r: redis.Redis, path: str,
                                         body: str) -> None:
    before = redis_state(r)
    token = None if path == "/v1/players" else game.players[0].token
    for name, digits in NUMBERS.items():
        body = body.replace(name, digits)
    resp = post_raw(game.api, path.format(mid=game.mid), body, token)
    assert resp.status_code == 422, (resp.status_code, resp.text[:300])
    assert error_of(resp)["code"] == "invalid_request"
    assert redis_state(r) == before


# --------------------------------------------------------------------------- headers


@pytest.mark.parametrize("tag", [
    SUPERSCRIPT_2, f'"{SUPERSCRIPT_2}"', f'W/"{SUPERSCRIPT_2}"', ARABIC_12, f'"{ARABIC_12}"',
    FULLWIDTH_1, HUGE, f'"{HUGE}"', f'"{DIGITS_4400}"', AT_LIMIT, "9" * 20, '"-1"', '""',
    '"1" "2"', "1.0", "0x1",
])
def test_if_match_that_is_not_a_bounded_version_is_412(game: Game, r: redis.Redis,
                                                       tag: str) -> None:
    before = redis_state(r)
    resp = post_raw(game.api, f"/v1/matches/{game.mid}/actions", HIT, game.players[0].token,
                    {"If-Match": tag.encode().decode("latin-1")})
    assert resp.status_code == 412, (tag[:20], resp.status_code, resp.text[:300])
    assert error_of(resp)["code"] == "precondition_failed"
    assert redis_state(r) == before


@pytest.mark.parametrize("tag", [
    SUPERSCRIPT_2, f'"{SUPERSCRIPT_2}"', ARABIC_12, f'"{ARABIC_12}"', f'W/"{FULLWIDTH_1}"',
    DIGITS_4400, f'"{DIGITS_4400}"', HUGE, "9" * 20, '"-1"', '""', '"1", "x"', "1.0",
])
def test_if_none_match_that_is_not_a_bounded_version_is_422(game: Game, r: redis.Redis,
                                                            tag: str) -> None:
    before = redis_state(r)
    resp = game.api.request("GET", f"/v1/matches/{game.mid}/view",
                            token=game.players[0].token,
                            headers={"If-None-Match": tag.encode().decode("latin-1")})
    assert resp.status_code == 422, (tag[:20], resp.status_code, resp.text[:300])
    assert error_of(resp)["code"] == "invalid_request"
    assert redis_state(r) == before


def test_if_none_match_with_versions_still_works(game: Game) -> None:
    path = f"/v1/matches/{game.mid}/view"
    token = game.players[0].token
    version = game.api.ok(game.api.request("GET", path, token=token))["version"]
    for tag in (f'"{version}"', f'W/"{version}"', f'"{version - 1}", "{version}"', "*",
                f'"{version}" ,"0"'):
        resp = game.api.request("GET", path, token=token, headers={"If-None-Match": tag})
        assert resp.status_code == 304, (tag, resp.status_code, resp.text)
    resp = game.api.request("GET", path, token=token, headers={"If-None-Match": '"0"'})
    assert resp.status_code == 200 and resp.json()["version"] == version


# --------------------------------------------------------------------------- queries

QUERY_CASES = [
    ("/v1/matches/{mid}/view", {"after": SUPERSCRIPT_2}),
    ("/v1/matches/{mid}/view", {"after": ARABIC_12}),
    ("/v1/matches/{mid}/view", {"after": LONG_Q}),
    ("/v1/matches/{mid}/view", {"after": "9" * 20}),
    ("/v1/matches/{mid}/view", {"after": "-" + LONG_Q}),
    ("/v1/matches/{mid}/view", {"wait": FULLWIDTH_1}),
    ("/v1/matches/{mid}/view", {"wait": ARABIC_12}),
    ("/v1/matches/{mid}/view", {"wait": "1" + "0" * 3900}),
    ("/v1/matches/{mid}/events", {"after": ARABIC_12}),
    ("/v1/matches/{mid}/events", {"after": LONG_Q}),
    ("/v1/matches/{mid}/events", {"after": "9" * 20}),
    ("/v1/matches", {"limit": ARABIC_12}),
    ("/v1/matches", {"cursor": FULLWIDTH_1}),
    ("/v1/matches", {"cursor": LONG_Q}),
    ("/v1/me/matches", {"limit": "\u0661\u0660"}),
    ("/v1/me/matches", {"cursor": ARABIC_12}),
    ("/v1/me/events", {"after": f"{ARABIC_12}-0"}),
    ("/v1/me/events", {"after": f"0-{ARABIC_12}"}),
    ("/v1/me/events", {"after": f"{SUPERSCRIPT_2}-0"}),
    ("/v1/me/events", {"after": f"{LONG_Q}-0"}),
    ("/v1/me/events", {"after": "1-1\n"}),
    ("/v1/me/events", {"after": "18446744073709551616-0"}),
    ("/v1/me/events", {"wait": ARABIC_12}),
]


@pytest.mark.parametrize(("path", "query"), QUERY_CASES,
                         ids=[f"{i}:{p.rsplit('/', 1)[-1]}:{next(iter(q))}"
                              for i, (p, q) in enumerate(QUERY_CASES)])
def test_numbers_in_queries_are_ascii_and_bounded(game: Game, r: redis.Redis, path: str,
                                                  query: dict[str, str]) -> None:
    before = redis_state(r)
    resp = game.api.request("GET", path.format(mid=game.mid), token=game.players[0].token,
                            params={k: v.encode() for k, v in query.items()})
    assert resp.status_code == 422, (resp.status_code, resp.text[:300])
    assert error_of(resp)["code"] == "invalid_request"
    assert redis_state(r) == before


# --------------------------------------------------------------------------- gunicorn's own


def raw_http(server: ApiServer, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``data`` as is; the answer's status, headers (lower-cased) and body."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except ConnectionResetError:  # gunicorn closes once it has answered
            if not out:
                raise
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict((k.strip().lower(), v.strip()) for k, _, v in
                   (line.partition(":") for line in lines[1:]))
    return int(lines[0].split()[1]), headers, body


def get_with(path: str, headers: bytes = b"") -> bytes:
    return (b"GET " + path.encode() + b" HTTP/1.1\r\nHost: t\r\n" + headers +
            b"Connection: close\r\n\r\n")


def test_what_gunicorn_answers_by_itself(api_server: ApiServer) -> None:
    """The README's "Limits" section: a request line over 4,094 bytes is 414, a header line
    over 8,190 bytes or more than 100 header fields is 431; HTML from gunicorn, no JSON, no
    X-Request-ID, and the connection is closed."""
    line_ok = "/v1/matches?x=" + "a" * (4094 - len("GET /v1/matches?x= HTTP/1.1"))
    status, headers, body = raw_http(api_server, get_with(line_ok))
    assert status == 200 and headers["content-type"] == "application/json", body[:200]

    for data, want in [
        (get_with(line_ok + "a"), 414),
        # (so numbers of 4,300 digits and more never reach the app in a query)
        (get_with("/v1/matches?after=" + HUGE[:4400]), 414),
        (get_with("/v1/matches", b"X-Pad: " + b"a" * 9000 + b"\r\n"), 431),
        (get_with("/v1/matches", b"".join(b"X-H%d: 1\r\n" % i for i in range(101))), 431),
    ]:
        status, headers, body = raw_http(api_server, data)
        assert status == want, (status, body[:300])
        assert headers["content-type"] == "text/html"
        assert headers["connection"] == "close"
        assert "x-request-id" not in headers
    # just under the limits the app answers as usual
    status, headers, _ = raw_http(api_server, get_with(
        "/v1/matches", b"".join(b"X-H%d: 1\r\n" % i for i in range(98))))
    assert status == 200 and headers.get("x-request-id")
