"""Presence over HTTP: a bot whose notices long-poll is open is online; once it hangs up (a
stopped bot's process closes its connections) it leaves ``GET /v1/players/online``, and its
profile says ``away``. The window is ``ONLINE_WINDOW_S`` (5 s by default); this waits for the
drop event-driven, with a generous limit, and checks the profile's state, not the time."""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

from tests.support.apiclient import Api
from tests.support.server import ApiServer


def _online(api: Api) -> set[str]:
    rows = api.ok(api.request("GET", "/v1/players/online", params={"limit": 500}))["players"]
    return {row["id"] for row in rows}


def test_a_bot_that_hangs_up_leaves_the_online_list(api: Api, api_server: ApiServer) -> None:
    bot = api.register("hangup")
    url = urlsplit(api_server.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    conn.request("GET", "/v1/me/events?challenges=true&wait=30",
                 headers={"Authorization": f"Bearer {bot.token}"})
    # held: the long-poll keeps it online (refreshed every 2 s while it waits)
    deadline = time.monotonic() + 30
    while bot.id not in _online(api):
        assert time.monotonic() < deadline, "the polling bot never showed online"
        time.sleep(0.2)
    profile = api.ok(api.request("GET", f"/v1/players/{bot.id}"))
    assert profile["presence"]["state"] == "online" and profile["presence"]["window_s"] == 5
    conn.close()  # the bot stops: its connection closes
    deadline = time.monotonic() + 30
    while bot.id in _online(api):
        assert time.monotonic() < deadline, "a bot that hung up stayed online"
        time.sleep(0.2)
    profile = api.ok(api.request("GET", f"/v1/players/{bot.id}"))
    assert profile["presence"]["state"] == "away" and profile["presence"]["last_seen"]


def test_a_profile_shows_each_ladder_with_presence_and_benching(api: Api) -> None:
    bot = api.register("prof")
    lad = api.ok(api.request("GET", "/v1/ladders"))["ladders"][0]["name"]
    assert api.ok(api.request("GET", f"/v1/players/{bot.id}"))["ladders"] == {}
    api.ok(api.request("POST", f"/v1/ladders/{lad}/entries", token=bot.token))
    try:
        api.ok(api.request("GET", "/v1/me/events", token=bot.token))  # a poll: present
        got = api.ok(api.request("GET", f"/v1/players/{bot.id}"))["ladders"][lad]
        assert got["entered"] is True and got["benched"] is False
        assert got["benched_reason"] is None
    finally:
        api.ok(api.request("DELETE", f"/v1/ladders/{lad}/entries", token=bot.token))
    assert api.ok(api.request("GET", f"/v1/players/{bot.id}"))["ladders"] == {}
