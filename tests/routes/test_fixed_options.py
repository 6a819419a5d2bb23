"""No hidden rigging (issue 11, item 7): a match whose creator chose its ``seed``, ``deck`` or
``first_seat`` says so in every view of it (public summary, players' views, match lists, player
profiles) from the moment it is created, before anyone joins; a chosen seed lets its creator
predict every hand. Rated matches never take them."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
import redis

from service.store import matches
from service.store.errors import StoreError
from tests.support.apiclient import NO_TIMEOUTS, Api, Player, error_of
from tests.support.live import safe_deck
from tests.support.redis_proc import RedisProcess
from tests.support.snapshot import redis_state


def every_view(api: Api, mid: str, creator: Player, *others: Player) -> list[dict[str, Any]]:
    """The options of every view of match ``mid`` anyone can read."""
    seen = [api.summary(mid)["options"], api.summary(mid, token=creator.token)["options"]]
    for p in (creator, *others):
        seen.append(api.view(p, mid)["options"])
    listing = api.ok(api.request("GET", "/v1/matches", params={"limit": 100}))["matches"]
    seen += [m["options"] for m in listing if m["match_id"] == mid]
    mine = api.ok(api.request("GET", "/v1/me/matches", token=creator.token))["matches"]
    seen += [m["options"] for m in mine if m["match_id"] == mid]
    profile = api.ok(api.request("GET", f"/v1/players/{creator.id}"))
    seen += [m["options"] for m in profile["recent_matches"] if m["match_id"] == mid]
    assert len(seen) == 5 + 1 + len(others), seen  # found in each list
    return seen


@pytest.mark.parametrize(("chosen", "fixed"), [
    ({"seed": "creator-knows"}, ["seed"]),
    ({"deck": safe_deck()}, ["deck"]),
    ({"first_seat": 1}, ["first_seat"]),
    ({"seed": "x", "deck": safe_deck(), "first_seat": 0}, ["deck", "first_seat", "seed"]),
    ({}, []),
])
def test_a_creators_choice_is_shown_before_anyone_joins(api: Api, chosen: dict[str, Any],
                                                        fixed: list[str]) -> None:
    creator, joiner = api.register("rig"), api.register("mark")
    created = api.create(creator, ruleset="classic", seats=2, **NO_TIMEOUTS, **chosen)
    mid = created["match_id"]
    assert created["options"]["fixed_by_creator"] is bool(fixed)
    assert created["options"]["fixed_options"] == fixed
    # waiting, before anyone joins: the public summary and the match list already say it
    summary = api.summary(mid)
    assert summary["status"] == "waiting"
    assert summary["options"]["fixed_by_creator"] is bool(fixed)
    assert summary["options"]["fixed_options"] == fixed
    listing = api.ok(api.request("GET", "/v1/matches", params={"status": "waiting",
                                                               "limit": 100}))
    (line,) = [m for m in listing["matches"] if m["match_id"] == mid]
    assert line["options"] == {"fixed_by_creator": bool(fixed), "fixed_options": fixed}
    # and so does every view once seated (the values themselves stay hidden until the end)
    api.join(creator, mid)
    api.join(joiner, mid)
    for options in every_view(api, mid, creator, joiner):
        assert options["fixed_by_creator"] is bool(fixed), options
        assert options["fixed_options"] == fixed, options
        assert "seed" not in options and "deck" not in options


def test_a_match_with_the_servers_seed_is_not_marked(api: Api) -> None:
    mid, seated, _ = api.new_match(2, prefix="fair", ruleset="classic", **NO_TIMEOUTS)
    for options in every_view(api, mid, seated[0], seated[1]):
        assert options["fixed_by_creator"] is False and options["fixed_options"] == []


def test_rated_matches_never_take_a_chosen_seed_deck_or_first_seat(
        redis_server: RedisProcess, api: Api) -> None:
    r: redis.Redis = redis_server.client()
    before = redis_state(r)
    for chosen in ({"seed": "s"}, {"deck": safe_deck()}, {"first_seat": 0}):
        with pytest.raises(StoreError) as e:
            matches.create(r, "p_000000000000", {"ruleset": "classic", "seats": 2, **chosen},
                           rated=True, ladder="duel")
        assert e.value.code == "invalid_request"
    assert redis_state(r) == before
    # over HTTP a match can't be made rated at all
    creator = api.register("rated")
    before = redis_state(r)
    resp = api.request("POST", "/v1/matches", token=creator.token,
                       json={"ruleset": "classic", "seats": 2, "rated": True,
                             "seed": secrets.token_hex(4)})
    assert resp.status_code == 422 and error_of(resp)["code"] == "invalid_request"
    assert redis_state(r) == before
    r.close()
