"""Restart: the API process is killed mid-match (SIGKILL: master and workers, no graceful
shutdown) and started again on the same Redis; the match continues from Redis to its end."""

from __future__ import annotations

import random

import pytest
import requests

from service import engine
from tests.support.apiclient import NO_TIMEOUTS, Api, actions_from_record, play_randomly, replay
from tests.support.server import ApiServer


def test_killed_server_restarts_and_the_match_continues_from_redis(
        api_server: ApiServer) -> None:
    api = Api(api_server.url)
    rng = random.Random("restart")
    options = {"ruleset": "2019", "seed": "restart", "tokens_to_win": 2, **NO_TIMEOUTS}
    mid, players, joins = api.new_match(4, prefix="rst", **options)

    # play a few moves, then kill the server between two moves
    v = joins[-1]
    actions = []
    for _ in range(5):
        seat = v["turn"]["seat"]
        mine = api.view(players[seat], mid)
        action = rng.choice(mine["legal_actions"])
        v = api.act(players[seat], mid, action)
        actions.append(action)
    assert v["status"] == "active"
    before = {seat: api.view(p, mid) for seat, p in enumerate(players)}
    summary_before = api.summary(mid)
    old_pid = api_server.pid

    api_server.kill()
    api.close()
    with pytest.raises(requests.ConnectionError):
        requests.get(api_server.url + "/healthz", timeout=2)

    api_server.start()  # a new process, same port, same Redis
    assert api_server.pid != old_pid
    api = Api(api_server.url)
    try:
        # everything is as it was: the players' tokens, views and the public summary
        for seat, p in enumerate(players):
            after = api.view(p, mid)
            for k in ("version", "hand", "known", "legal_actions", "events", "players",
                      "deck_count", "round"):
                assert after[k] == before[seat][k], (seat, k)
        assert api.summary(mid)["version"] == summary_before["version"]

        # and the match goes on to its end
        rest = play_randomly(api, mid, players, rng, summary_before)
        final = api.summary(mid)
        assert final["status"] == "finished"
        state = replay({**options, "seats": 4}, actions + rest)
        assert state.status == engine.FINISHED
        assert final["result"]["winners"] == state.winners
        assert final["result"]["tokens"] == state.tokens
        assert actions_from_record(api.events(mid)["events"]) == actions + rest
        for p in players:
            assert api.view(p, mid)["result"] == final["result"]
    finally:
        api.close()


def test_graceful_restart_keeps_serving_the_same_data(api_server: ApiServer) -> None:
    api = Api(api_server.url)
    mid, players, joins = api.new_match(2, prefix="rsg", ruleset="classic", seed="graceful",
                                        **NO_TIMEOUTS)
    api.close()
    api_server.restart()  # SIGTERM, then start again
    api = Api(api_server.url)
    try:
        seat = joins[-1]["turn"]["seat"]
        v = api.view(players[seat], mid)
        assert v["version"] == joins[-1]["version"]
        assert api.act(players[seat], mid, v["legal_actions"][0])["version"] == v["version"] + 1
    finally:
        api.close()
