"""The llsdk client against the real server (gunicorn on a private Redis), and its retry rules
against a scripted local HTTP server."""

from __future__ import annotations

import http.server
import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from llsdk import Action, Ladder, Match, Notice, View, errors

from tests.support.sdkclient import Client
from tests.support.server import ApiServer

NO_TIMEOUTS: dict[str, Any] = {"turn_timeout_s": 86400}


@pytest.fixture(scope="module")
def anon(api_server: ApiServer) -> Iterator[Client]:
    with Client(api_server.url) as c:
        yield c


def player(anon: Client) -> Client:
    p = anon.players.register(f"c-{secrets.token_hex(5)}")
    assert p.token and p.id.startswith("p_")
    return anon.with_token(p.token)


def test_a_match_through_the_client(anon: Client) -> None:
    a, b = player(anon), player(anon)
    v = a.matches.create("classic", 2, seed="client", first_seat=0, **NO_TIMEOUTS)
    assert isinstance(v, View) and v.status == "waiting" and v.seat is None
    mid = v.match_id
    assert a.matches.join(mid).status == "waiting"
    va = a.matches.view(mid)
    vb = b.matches.join(mid)
    assert vb.status == "active" and vb.seat == 1 and not vb.my_turn
    va = a.matches.view(mid)
    assert va.my_turn and va.seat == 0 and len(va.hand) == 2 and va.turn is not None
    assert va.turn.deadline is not None and va.players[1].name == b.me.get().name

    mine = a.me.matches(status="active").matches
    assert [m.match_id for m in mine] == [mid] and isinstance(mine[0], Match)
    assert mine[0].your_turn and mine[0].seat == 0
    assert not b.me.matches(status="active").matches[0].your_turn
    assert any(m.match_id == mid for m in anon.matches.list(status="active").matches)
    assert [m.match_id for m in a.me.all_matches()] == [mid]

    # long-poll: at once when the caller is behind, held when it is up to date
    t0 = time.monotonic()
    assert b.matches.wait_view(mid, after=vb.version - 1, wait=5).version == vb.version
    assert time.monotonic() - t0 < 2
    t0 = time.monotonic()
    same = b.matches.wait_view(mid, after=vb.version, wait=0.6)
    assert same.version == vb.version and time.monotonic() - t0 >= 0.5

    # a move wakes the other seat's long-poll
    got: list[View] = []
    waiter = threading.Thread(target=lambda: got.append(
        b.matches.wait_view(mid, after=vb.version, wait=20)))
    waiter.start()
    time.sleep(0.3)
    after = a.matches.act(mid, va.legal_actions[0], expected_version=va.version)
    waiter.join(10)
    assert got and got[0].version == after.version

    log = b.matches.events(mid)
    assert log.match_id == mid and log.events and log.last_seq == log.events[-1].seq
    assert all(not e.private or e.seat == 1 or e.type in ("baron_compared", "king_swapped")
               for e in log.events if e.private)
    summary = anon.matches.get(mid)
    assert summary.seat is None and summary.hand == []
    a.matches.resign(mid)
    assert b.matches.view(mid).finished and b.matches.view(mid).won


def test_notices_and_cursor(anon: Client) -> None:
    a, b = player(anon), player(anon)
    assert a.me.head() == "0-0" and a.me.events().events == []
    v = a.matches.create("2019", 2, **NO_TIMEOUTS)
    a.matches.join(v.match_id)
    b.matches.join(v.match_id)
    first = a.me.events(wait=5)
    assert first.events and all(isinstance(n, Notice) for n in first.events)
    assert first.events[0].type == "match_started" and first.events[0].match_id == v.match_id
    assert first.cursor == first.events[-1].cursor == a.me.head()
    # nothing new: a long-poll with the cursor waits, then answers empty with the same cursor
    t0 = time.monotonic()
    empty = a.me.events(after=first.cursor, wait=0.5)
    assert empty.events == [] and empty.cursor == first.cursor
    assert time.monotonic() - t0 >= 0.4
    watching = b.matches.watch(v.match_id, wait=0.2)
    assert next(watching).match_id == v.match_id


def test_ladders(anon: Client) -> None:
    a = player(anon)
    with pytest.raises(errors.NotFound):
        a.ladder.enter(f"nope-{secrets.token_hex(3)}")
    with pytest.raises(errors.NotFound):
        anon.ladder.get("nope")
    ladders = anon.ladder.list()
    assert all(isinstance(x, Ladder) for x in ladders)
    if ladders:  # the ladder service is there: enter, see it, leave
        name = ladders[0].name
        entry = a.ladder.enter(name)
        assert entry.entered and entry.ladder == name
        board = anon.ladder.get(name)
        assert board.name == name and board.ruleset and board.seats
        assert not a.ladder.leave(name).entered


def test_join_retried_after_a_lost_answer_returns_the_view(anon: Client) -> None:
    a, b = player(anon), player(anon)
    v = a.matches.create("classic", 2, **NO_TIMEOUTS)
    a.matches.join(v.match_id)
    with pytest.raises(errors.AlreadyJoined):  # a first attempt is told
        a.matches.join(v.match_id)
    b.matches.join(v.match_id)


# --------------------------------------------------------------------------- retry rules


class Scripted(http.server.ThreadingHTTPServer):
    """A local server answering from a script of (status, headers, body); it records every
    request (method, path, headers, body)."""

    def __init__(self, script: list[tuple[int, dict[str, str], Any]]) -> None:
        self.script = list(script)
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    server: Scripted

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        self.server.seen.append((self.command, self.path, dict(self.headers), body))
        status, headers, data = self.server.script.pop(0) if self.server.script else (
            200, {}, {})
        if status == 0:  # drop the connection without answering
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_DELETE = _answer


VIEW = {"match_id": "m_1", "version": 3, "status": "active", "ruleset": "classic", "seat": 0,
        "round": 1, "turn": None, "players": [], "events": [], "result": None}


def err(status: int, code: str) -> dict[str, Any]:
    return {"status": status, "code": code, "message": code}


def test_429_waits_retry_after_then_succeeds() -> None:
    srv = Scripted([(429, {"Retry-After": "1"}, err(429, "rate_limited")), (200, {}, VIEW)])
    c = Client(srv.url, token="t", backoff=0.01)
    t0 = time.monotonic()
    assert c.matches.view("m_1").version == 3
    assert time.monotonic() - t0 >= 0.95
    assert len(srv.seen) == 2
    srv.script = [(429, {"Retry-After": "0"}, err(429, "rate_limited"))] * 3
    with pytest.raises(errors.RateLimited):
        Client(srv.url, max_retries=2, backoff=0.01).matches.view("m_1")
    srv.shutdown()


def test_an_action_keeps_its_idempotency_key_across_retries() -> None:
    srv = Scripted([(0, {}, None), (503, {}, err(503, "unavailable")),
                    (502, {}, "bad gateway"), (200, {}, VIEW)])
    c = Client(srv.url, token="t", backoff=0.01)
    assert c.matches.act("m_1", Action.play("handmaid"), expected_version=2).version == 3
    posts = [s for s in srv.seen if s[0] == "POST"]
    assert len(posts) == 4
    keys = {h.get("Idempotency-Key") for _, _, h, _ in posts}
    assert len(keys) == 1 and None not in keys
    assert {json.loads(b)["expected_version"] for _, _, _, b in posts} == {2}
    # the next action gets a fresh key
    c.matches.act("m_1", Action.play("handmaid"))
    assert srv.seen[-1][2]["Idempotency-Key"] not in keys
    srv.shutdown()


def test_posts_without_a_key_are_not_repeated_after_a_lost_answer() -> None:
    srv = Scripted([(0, {}, None), (200, {}, {"id": "p", "name": "n", "token": "t"})])
    c = Client(srv.url, backoff=0.01)
    with pytest.raises(errors.TransportError):
        c.players.register("n")
    assert len(srv.seen) == 1
    srv.script = [(500, {}, err(500, "internal_error"))]
    with pytest.raises(errors.InternalError):
        c.players.register("n")
    srv.script = [(503, {}, err(503, "unavailable")), (200, {}, {"status": "ok"})]
    assert c.ready() == {"status": "ok"}  # reads are retried
    srv.shutdown()


def test_refused_connections_are_retried_then_reported() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = Client(f"http://127.0.0.1:{port}", max_retries=2, backoff=0.01)
    t0 = time.monotonic()
    with pytest.raises(errors.TransportError) as info:
        c.players.register("n")
    assert info.value.__cause__ is not None and time.monotonic() - t0 < 5
