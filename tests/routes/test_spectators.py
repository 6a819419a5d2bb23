"""Spectators over HTTP: while a match runs, its public summary and event log show public events
only (no private events, no hands); once it has ended, the full record with every event and its
audience (`to`)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.apiclient import NO_TIMEOUTS, Api, play_randomly
from tests.support.live import running_server
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer

HIDDEN_KEYS = {"hand", "hands", "known", "legal_actions"}
#: events that carry a hidden card: private (or secret) by construction
PRIVATE_TYPES = {"deck", "dealt", "drew", "priest_saw", "baron_compared", "king_swapped",
                 "prince_drew", "chancellor_drew", "chancellor_returned"}


@pytest.fixture(scope="module")
def api(redis_server: RedisProcess) -> Iterator[Api]:
    server: ApiServer
    with running_server(redis_server.url) as server:
        a = Api(server.url)
        yield a
        a.close()


def _public_only(evs: list[dict[str, Any]]) -> None:
    for e in evs:
        assert "private" not in e and "to" not in e, e
        assert e["type"] not in PRIVATE_TYPES, e


@pytest.mark.parametrize("ruleset,seats", [("classic", 2), ("2019", 4)])
def test_spectator_sees_public_events_then_the_full_record(api: Api, ruleset: str,
                                                           seats: int) -> None:
    mid, players, joins = api.new_match(seats, ruleset=ruleset, tokens_to_win=2, **NO_TIMEOUTS)
    outsider = api.register("watcher")
    seen_public: dict[int, dict[str, Any]] = {}
    checks = 0

    def watch(*_: Any) -> None:
        nonlocal checks
        s = api.summary(mid)
        if s["status"] != "active":
            return
        checks += 1
        assert s["seat"] is None
        assert not HIDDEN_KEYS & set(s), sorted(HIDDEN_KEYS & set(s))
        assert s["options"].get("seed") is None and s["options"].get("deck") is None
        _public_only(s["events"])
        # the event log, anonymously and with a token of someone not seated: the same
        for token in (None, outsider.token):
            log = api.events(mid, token=token)
            _public_only(log["events"])
            for e in log["events"]:
                assert seen_public.setdefault(e["seq"], e) == e
        # a seated player's log holds their private events as well, never others'
        seat = s["turn"]["seat"]
        mine = api.events(mid, token=players[seat].token)["events"]
        assert any(e.get("private") for e in mine)
        assert all("to" not in e for e in mine)
        assert {e["seq"] for e in mine} >= {e["seq"] for e in log["events"]}

    watch()
    play_randomly(api, mid, players, random.Random(5), joins[-1], on_action=watch)
    assert checks >= 2

    final = api.summary(mid)
    assert final["status"] == "finished"
    assert len(final["hands"]) == seats  # every hand is shown once the match has ended
    assert final["options"]["seed"]
    record = api.events(mid)
    evs = record["events"]
    assert [e["seq"] for e in evs] == list(range(len(evs)))  # every event, none missing
    assert record["last_seq"] == len(evs) - 1
    private = [e for e in evs if e.get("private")]
    assert private and all(isinstance(e["to"], list) for e in private)
    assert any(e["type"] == "deck" and e["to"] == [] for e in evs)  # the secret deck order
    assert all("to" not in e for e in evs if not e.get("private"))
    for seq, e in seen_public.items():  # what spectators saw is part of the record, unchanged
        assert evs[seq] == e
    # the same full record for everybody (anonymous, a player, an outsider)
    for token in (players[0].token, outsider.token):
        assert api.events(mid, token=token)["events"] == evs
    # and paging with `after` cuts it exactly
    half = len(evs) // 2
    assert api.events(mid, after=half)["events"] == evs[half + 1:]
