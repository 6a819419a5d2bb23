"""Who is online (store/presence.py), on an explicit clock: online means a poll within the
online window (5 s by default), whatever else the player did before; answering challenges is
remembered for a minute, so a challenge-answering bot busy in a match (its match's long-poll
refreshes its presence) stays listed as answering challenges."""

from __future__ import annotations

import redis

from service.store import ladders, players, presence
from service.store.ladder_config import LadderConfig

NOW = 1_800_000_000.0
LAD = LadderConfig("duel", "classic", 2, presence_window_s=5)


def _ids(rows: list[dict[str, object]]) -> set[object]:
    return {row["id"] for row in rows}


def test_a_player_silent_longer_than_the_window_is_not_online(redis_db: redis.Redis) -> None:
    fresh, stale = (players.register(redis_db, f"p{i}")["id"] for i in range(2))
    for pid, ago in ((fresh, 4.0), (stale, 6.0)):
        presence.listen(redis_db, pid, now=NOW - ago)
        presence.touch(redis_db, pid, now=NOW - ago)
    rows = presence.online(redis_db, [LAD], window_s=5, now=NOW)
    assert _ids(rows) == {fresh}
    assert rows[0]["accepts_challenges"] is True and rows[0]["last_seen"] == NOW - 4.0


def test_a_challenge_answering_bot_in_a_match_stays_online(redis_db: redis.Redis) -> None:
    busy = players.register(redis_db, "busy")["id"]
    presence.listen(redis_db, busy, now=NOW - 40)  # its last notices poll, 40 s ago
    presence.touch(redis_db, busy, now=NOW - 1)  # its match's long-poll, a second ago
    rows = presence.online(redis_db, [LAD], window_s=5, now=NOW)
    assert _ids(rows) == {busy} and rows[0]["accepts_challenges"] is True
    # a minute and more after its last notices poll it no longer says it answers challenges
    assert presence.online(redis_db, [LAD], window_s=5, now=NOW + 61 - 1) == []


def test_a_stopped_ladder_bot_leaves_the_list(redis_db: redis.Redis) -> None:
    bot = players.register(redis_db, "lad")["id"]
    ladders.enter(redis_db, LAD, bot, now=NOW - 100)
    presence.touch(redis_db, bot, now=NOW - 2)
    rows = presence.online(redis_db, [LAD], window_s=5, now=NOW)
    assert rows[0]["ladders"] == ["duel"] and rows[0]["accepts_challenges"] is False
    assert presence.online(redis_db, [LAD], window_s=5, now=NOW + 4) == []


def test_state_online_or_away() -> None:
    assert presence.state(NOW - 4.9, NOW, 5) == "online"
    assert presence.state(NOW - 5.1, NOW, 5) == "away"
    assert presence.state(None, NOW, 5) == "away"
