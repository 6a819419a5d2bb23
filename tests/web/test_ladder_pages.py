"""The leaderboard, player and index pages in headless Chromium.

The test fills a ladder the way production does: bots enter it and poll, the scheduling pass
(``ladders.form_matches``) forms rated matches, the bots play them over HTTP, and each finished
match is rated (``ladders.rate``). The pages must then show every bot with its rating history."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from service.config import ladders_from_env
from service.store import aborts, keys, ladders, matches, presence
from tests.support.apiclient import Api, Player, play_randomly
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer
from tests.support.web import expect, screenshot

LADDER = "duel"
BOTS = 4
PASSES = 3


@pytest.fixture(scope="module")
def filled(api_server: ApiServer, redis_server: RedisProcess) -> Iterator[dict[str, Any]]:
    """A ladder with BOTS bots that each played PASSES rated matches."""
    api = Api(api_server.url)
    r: redis.Redis = redis_server.client()
    # a day's turn clock: play_randomly starved by a loaded machine must not time a seat out (a
    # first timeout in round 1 would abort the match, rated for nobody)
    lad = dataclasses.replace(ladders_from_env()[LADDER], turn_timeout_s=86400)
    # The Redis is shared by the whole session: bots of earlier modules (README snippets, house
    # bots) may still be entered and present here. This ladder is these BOTS bots' alone.
    for stale in r.zrange(keys.ladder_entries(LADDER), 0, -1):
        ladders.leave(r, lad, stale.decode())
    players = {p.id: p for p in (api.register(f"lb{i}") for i in range(BOTS))}
    for pid in players:
        ladders.enter(r, lad, pid)
    rng = random.Random(11)
    played: list[str] = []
    for k in range(PASSES):
        for pid in players:
            presence.touch(r, pid)  # as a polling bot would
        created = ladders.form_matches(r, lad, rng=random.Random(k))
        assert len(created) == BOTS // lad.seats, created
        for mid in created:
            doc = matches.load(r, mid)
            seated: list[Player] = [players[pid] for pid in doc.seats]
            play_randomly(api, mid, seated, rng, api.summary(mid))
            assert ladders.rate(r, mid, ladders_from_env())
            played.append(mid)
    board = api.ok(api.request("GET", f"/v1/ladders/{LADDER}"))["leaderboard"]
    assert len(board) == BOTS and all(row["games"] == PASSES for row in board)
    yield {"api": api, "players": players, "board": board, "matches": played,
           "base": api_server.url}
    api.close()
    r.close()


def _rows(page: Any) -> list[dict[str, Any]]:
    return page.eval_on_selector_all("#leaderboard tbody tr", """rows => rows.map(tr => ({
        player: tr.dataset.player,
        cells: [...tr.children].map(td => td.textContent.trim()),
        points: (tr.querySelector('svg.spark polyline')?.getAttribute('points') || '')
                  .split(' ').filter(Boolean).length,
    }))""")


def test_leaderboard_shows_the_ladder_bots(page: Any, filled: dict[str, Any]) -> None:
    base, board = filled["base"], filled["board"]
    page.goto(f"{base}/ladders/{LADDER}")
    page.wait_for_selector("body[data-loaded='1']")
    expect(page.locator("#leaderboard svg.spark")).to_have_count(BOTS, timeout=15000)
    rows = _rows(page)
    # Every bot of the ladder, in the API's order (best conservative rating first).
    assert [row["player"] for row in rows] == [b["player_id"] for b in board]
    for row, b in zip(rows, board, strict=True):
        cells = row["cells"]
        assert cells[0] == str(b["rank"])
        assert cells[1] == b["name"]
        assert cells[2] == f"{b['rating']:.2f}"
        assert cells[5] == str(PASSES)
        assert cells[6] == str(b["wins"])
        # presence first (these bots stopped: away), then provisional: fewer games than
        # PROVISIONAL_GAMES
        assert cells[9] in ("online provisional", "away provisional"), cells[9]
        assert row["points"] == PASSES, "one point of the rating history per rated game"
    names = {p.name for p in filled["players"].values()}
    assert names <= set(page.inner_text("#leaderboard").split())
    screenshot(page, "web-ladder")

    # Sortable: by name (A-Z, then Z-A), by wins, back by rank.
    page.click("th[data-key='name']")
    assert [r["cells"][1] for r in _rows(page)] == sorted(b["name"] for b in board)
    page.click("th[data-key='name']")
    assert [r["cells"][1] for r in _rows(page)] == sorted((b["name"] for b in board),
                                                          reverse=True)
    page.click("th[data-key='wins']")
    wins = [int(r["cells"][6]) for r in _rows(page)]
    assert wins == sorted(wins, reverse=True)
    assert page.get_attribute("th[data-key='wins']", "class") == "num sorted-desc"
    page.click("th[data-key='rank']")
    assert [r["player"] for r in _rows(page)] == [b["player_id"] for b in board]
    # The sparklines survive re-sorting.
    assert all(r["points"] == PASSES for r in _rows(page))


def test_player_page(page: Any, filled: dict[str, Any]) -> None:
    base = filled["base"]
    best = filled["board"][0]
    page.goto(f"{base}/players/{best['player_id']}")
    page.wait_for_selector("body[data-loaded='1']")
    assert page.inner_text("#player-name") == best["name"]
    card = page.locator(f"#ratings [data-ladder='{LADDER}']")
    assert f"{best['rating']:.2f}" in card.inner_text()
    assert card.locator("svg.chart polyline").count() == 1
    links = page.eval_on_selector_all("#matches a[href^='/matches/']",
                                      "as => as.map(a => a.textContent)")
    mine = [m for m in filled["matches"]
            if any(p["player_id"] == best["player_id"]
                   for p in filled["api"].summary(m)["players"])]
    assert set(mine) <= set(links) and len(mine) == PASSES
    screenshot(page, "web-player")
    # Unknown player: a clear message, no script error.
    page.goto(f"{base}/players/p_nobody")
    expect(page.locator("#ratings")).to_contain_text("no such", timeout=15000)


def test_player_page_shows_an_abort_bench(page: Any, filled: dict[str, Any],
                                          redis_server: RedisProcess) -> None:
    """Benched for repeated aborts (issue 23): the page says until when and why."""
    base, pid = filled["base"], filled["board"][-1]["player_id"]
    r: redis.Redis = redis_server.client()
    try:
        bench = aborts.record(r, pid, "m_000000000abc", aborts.AbortPolicy(bench_after=1))
        assert bench is not None
        page.goto(f"{base}/players/{pid}")
        page.wait_for_selector("body[data-loaded='1']")
        text = page.inner_text("#bench")
        assert text.startswith("Benched until ") and bench["reason"] in text
        screenshot(page, "web-player-benched")
    finally:
        r.hdel(keys.ABORT_BENCH, pid)
        r.delete(keys.player_aborts(pid), keys.player_benches(pid))
        r.close()
    page.goto(f"{base}/players/{pid}")
    page.wait_for_selector("body[data-loaded='1']")
    assert page.inner_text("#bench") == ""


def test_index_lists_ladders_and_matches(page: Any, filled: dict[str, Any]) -> None:
    page.goto(filled["base"] + "/")
    page.wait_for_selector(f"#ladders a[href='/ladders/{LADDER}']")
    page.wait_for_selector(f"#finished a[href='/matches/{filled['matches'][-1]}']")
    page.click(f"#ladders a[href='/ladders/{LADDER}']")
    page.wait_for_selector("body[data-loaded='1']")
    assert page.url.endswith(f"/ladders/{LADDER}")
    page.goto(filled["base"] + "/")
    page.wait_for_selector(f"#finished a[href='/matches/{filled['matches'][-1]}']")
    screenshot(page, "web-index")


def test_leaderboard_rows_and_player_pages_show_presence(
        page: Any, filled: dict[str, Any], redis_server: RedisProcess) -> None:
    """online / away / benched with the reason, on the leaderboard and on the player page."""
    board = filled["board"]
    online, benched = board[0]["player_id"], board[1]["player_id"]
    r: redis.Redis = redis_server.client()
    lad = ladders_from_env()[LADDER]
    reason = "timed out or forfeited in 3 ladder matches in a row"
    try:
        # polled "now" for as long as this test may take (a poll stamped ahead of the clock)
        presence.touch(r, online, now=time.time() + 600)
        rec = ladders.record(r, lad, benched)
        assert rec is not None
        presence.touch(r, benched, now=time.time() - 60)
        rec.benched_at, rec.benched_reason = time.time(), reason
        r.hset(keys.ladder(LADDER, "players"), benched, rec.to_json())
        page.goto(f"{filled['base']}/ladders/{LADDER}?refresh=0")
        page.wait_for_selector("body[data-loaded='1']")
        states = page.eval_on_selector_all("#leaderboard tbody tr", """rows => Object.fromEntries(
            rows.map(tr => [tr.dataset.player, tr.querySelector('td.state').textContent.trim()]))""")
        assert states[online].startswith("online")
        assert states[benched].startswith(f"benched {reason}")
        assert all(s.startswith("away") for p, s in states.items() if p not in (online, benched))
        page.goto(f"{filled['base']}/players/{benched}")
        page.wait_for_selector("body[data-loaded='1']")
        assert page.get_attribute("#presence-state", "data-state") == "away"
        row = page.locator(f"#presence li[data-ladder='{LADDER}']")
        assert row.get_attribute("data-state") == "benched" and reason in row.inner_text()
        page.goto(f"{filled['base']}/players/{online}")
        page.wait_for_selector("body[data-loaded='1']")
        assert page.get_attribute("#presence-state", "data-state") == "online"
        screenshot(page, "web-player-presence")
    finally:
        presence.touch(r, online, now=time.time() - 60)
        r.close()
