"""GET /v1/rulesets serves the engine's card table and rulesets, and the API's option bounds are
the engine's: the SDK's tables, the web pages and the schemas read one source."""

from __future__ import annotations

from collections.abc import Iterator

import llsdk.cards
import pytest
from flask.testing import FlaskClient

from service.config import Config
from service.engine import RULESETS, Card, new_match
from service.engine.catalog import OPTION_BOUNDS, describe_rulesets
from service.http.app import create_app
from tests.support.redis_proc import RedisProcess


@pytest.fixture(scope="module")
def client(redis_server: RedisProcess) -> Iterator[FlaskClient]:
    app = create_app(Config(redis_url=redis_server.url, rate_limits_enabled=False))
    with app.test_client() as c:
        yield c


def test_rulesets_are_the_engines_with_no_token(client: FlaskClient) -> None:
    resp = client.get("/v1/rulesets")
    assert resp.status_code == 200 and resp.mimetype == "application/json"
    assert "max-age" in resp.headers["Cache-Control"]
    doc = resp.get_json()
    assert doc == describe_rulesets() == llsdk.cards.CATALOG
    by_name = {r["name"]: r for r in doc["rulesets"]}
    assert set(by_name) == set(RULESETS)
    classic = {c["name"]: c for c in by_name["classic"]["cards"]}
    assert (classic["king"]["value"], classic["guard"]["copies"]) == (6, 5)
    assert classic["guard"]["target"] == "other" and classic["guard"]["guesses"] is True
    assert classic["prince"]["target"] == "any" and "chancellor" not in classic
    assert by_name["2019"]["tokens_to_win"] == {"2": 6, "3": 5, "4": 4, "5": 3, "6": 3}
    assert doc["bounds"]["players"] == {"min": 2, "max": 6}
    assert doc["defaults"]["two_player_setup"] == "three-up"
    # every ruleset's default tokens match what a new match uses
    for name, r in by_name.items():
        for n, t in r["tokens_to_win"].items():
            assert new_match(name, int(n), seed=1).tokens_to_win == t


def test_option_bounds_come_from_the_engine(client: FlaskClient) -> None:
    """The schemas' bounds and defaults (as the OpenAPI document shows them) are the engine's."""
    schema = client.application.extensions["flask-smorest"]["apis"][""]["ext_obj"].spec.to_dict()
    create = schema["components"]["schemas"]["Create"]["properties"]
    lo, hi = OPTION_BOUNDS["players"]
    assert (create["seats"]["minimum"], create["seats"]["maximum"]) == (lo, hi)
    assert create["first_seat"]["maximum"] == hi - 1
    assert create["tokens_to_win"]["maximum"] == OPTION_BOUNDS["tokens_to_win"][1]
    assert create["deck"]["maxItems"] == max(rs.deck_size for rs in RULESETS.values())
    assert create["two_player_setup"]["default"] == "three-up"
    action = schema["components"]["schemas"]["Action"]["properties"]
    assert action["target"]["maximum"] == hi - 1
    assert action["bottom"]["maxItems"] == 2  # the chancellor's draws (R17)
    assert len(Card) == len(action["card"]["enum"])
