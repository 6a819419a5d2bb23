"""The play page (/play/{id}) in headless Chromium: a person plays a match by clicking.

- The page never shows another seat's hidden card: at each of the person's turns (and at the
  end of each round), every card the page names (card faces and chips by their data-card, the
  log, what-you-know and result texts) is one the person's own view names, and no card held
  right now by another seat, lying in the deck or set aside is named unless that view names it.
  The page only ever calls the player's own endpoints with the player's own token.
- The move is built from legal_actions only: every enabled card of the hand has a legal action,
  and every target and guess offered is one of them.
"""

from __future__ import annotations

import functools
import json
import random
import re
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis

from service.engine import NAMES
from service.store import matches
from tests.support.apiclient import Api
from tests.support.play_browser import (
    HttpOpponents,
    click_one_move,
    page_state,
    sign_in,
    wait_my_turn_or_end,
)
from tests.support.server import ApiServer
from tests.support.web import screenshot, wait_data

SHOWN_JS = """() => {
  // the guard's guess list and the card tracker name every card of the ruleset
  const outside = (n) => !n.closest('#choices, #tracker');
  const named = [...document.querySelectorAll('[data-card]')].filter(outside).map(n => n.dataset.card);
  const text = ['#log', '#known', '#result', '#opponents', '#centre', '#me-discards']
    .map(s => document.querySelector(s)).filter(Boolean).map(n => n.innerText).join('\\n');
  const backs = [...document.querySelectorAll('#opponents .opp')].map(o => ({
    seat: Number(o.dataset.seat), count: Number(o.querySelector('.opp-hand').dataset.count),
    backs: o.querySelectorAll('.opp-hand svg.cardface.back').length,
    named: o.querySelectorAll('.opp-hand [data-card]').length,
  }));
  return {named, text, backs, version: Number(document.body.dataset.version)};
}"""


def _cards_in(obj: Any) -> set[str]:
    text = json.dumps(obj)
    return {c for c in NAMES if f'"{c}"' in text}


def _cards_named(text: str) -> set[str]:
    return {c for c in NAMES if re.search(rf"\b{c}\b", text, re.I)}


def check_no_hidden_card(page: Any, api: Api, r: redis.Redis, mid: str, me: Any) -> int:
    """The page at a still moment against the person's own view and the stored state."""
    for _ in range(20):
        doc = matches.load(r, mid)
        shown = page.evaluate(SHOWN_JS)
        if shown["version"] == doc.version:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the page did not settle on the stored version")
    assert doc.state is not None
    seat = doc.seat_of(me.id)
    view = api.view(me, mid)
    assert view["version"] == doc.version
    mine = api.events(mid, token=me.token)["events"]  # every event this seat may see
    knowable = _cards_in({k: v for k, v in view.items() if k != "legal_actions"}) | _cards_in(mine)
    named = set(shown["named"]) | _cards_named(shown["text"])
    assert named <= knowable, f"the page names {named - knowable}, which this seat can't know"
    s = doc.state
    if s.status == "active":
        secret = {NAMES[c] for p, h in enumerate(s.hands) if p != seat for c in h} | \
            {NAMES[c] for c in s.deck} | {NAMES[c] for c in s.aside}
        assert not (secret - knowable) & named
        for b in shown["backs"]:  # other hands: face down, only their size
            assert b["named"] == 0, b
            assert b["backs"] == b["count"] == len(s.hands[b["seat"]]), b
    return int(doc.version)


def test_play_page_never_shows_another_seats_hidden_card(
        page: Any, api: Api, store: redis.Redis, api_server: ApiServer) -> None:
    mid, players, _ = api.new_match(4, prefix="pp", ruleset="2019", seed="play-secret-3",
                                    tokens_to_win=2, turn_timeout_s=600)
    me = players[0]
    sign_in(page, api_server.url, me)
    calls: list[tuple[str, str, str | None]] = []  # from the table on
    page.on("request", lambda rq: calls.append((rq.method, rq.url, rq.headers.get("authorization"))))
    page.goto(f"{api_server.url}/play/{mid}")
    rng = random.Random(11)
    checks = 0
    with HttpOpponents(api_server.url, mid, players[1:], delay=0.02):
        end = time.monotonic() + 100
        while time.monotonic() < end:
            st = wait_my_turn_or_end(page, 60)
            if st["status"] == "finished":
                break
            check_no_hidden_card(page, api, store, mid, me)
            checks += 1
            if checks == 3:
                screenshot(page, "play-secret-check")
            click_one_move(page, rng)
        assert page_state(page)["status"] == "finished"
    page.wait_for_selector("#result #match-result")
    screenshot(page, "table-match-end")
    assert checks >= 3, checks
    # Only the player's own endpoints, with the player's own token.
    api_calls = [(m, urlsplit(u).path, a) for m, u, a in calls if urlsplit(u).path.startswith("/v1/")]
    assert api_calls
    allowed = re.compile(rf"^/v1/(matches/{mid}/(view|events|actions)|rulesets|me)$")
    for m, path, auth in api_calls:
        assert allowed.match(path), path
        if path != "/v1/rulesets":
            assert auth == f"Bearer {me.token}", (m, path)


def test_only_legal_choices_are_offered(page: Any, api: Api, api_server: ApiServer) -> None:
    mid, players, _ = api.new_match(2, prefix="lg", ruleset="2019", seed="play-legal-2",
                                    tokens_to_win=1, turn_timeout_s=600, first_seat=0)
    me = players[0]
    sign_in(page, api_server.url, me)
    # the spectator page of a match the signed-in person sits in links to their table
    page.goto(f"{api_server.url}/matches/{mid}")
    page.click("#to-table")
    page.wait_for_url(f"**/play/{mid}")
    rng = random.Random(3)
    seen: list[str] = []
    with HttpOpponents(api_server.url, mid, players[1:], delay=0.02):
        for _ in range(6):
            st = wait_my_turn_or_end(page, 30)
            if st["status"] == "finished":
                break
            legal = api.view(me, mid)["legal_actions"]
            enabled = page.eval_on_selector_all("#hand button:not([disabled])", "bs => bs.map(b => b.dataset.card)")
            key = "keep" if st["phase"] == "chancellor" else "card"
            assert set(enabled) == {a[key] for a in legal}, (enabled, legal)
            click_one_move(page, rng, before_choice=functools.partial(offered, page, legal, seen))
        wait_data(page, "status", "finished", timeout=60000)
    assert seen, "no move needed a target or a guess: nothing was checked past the card"


def offered(page: Any, legal: list[dict[str, Any]], seen: list[str], kind: str) -> None:
    """The targets and guesses the page offers are those of legal_actions."""
    opts = page.eval_on_selector_all(
        "#choices button.option", "bs => bs.map(b => [b.dataset.target, b.dataset.guess])")
    seen.append(kind)
    if kind == "target":
        assert {int(t) for t, _ in opts if t} <= {a.get("target") for a in legal}, opts
    if kind == "guess":
        assert {g for _, g in opts} == {a.get("guess") for a in legal if a.get("guess")}, opts


def test_a_match_played_with_the_keyboard_only(page: Any, api: Api, api_server: ApiServer) -> None:
    """Tab to a card, Enter; Tab to a target or a guess, Enter: every step of every move, with
    a visible focus ring each time; Escape steps back out of a choice."""
    mid, players, _ = api.new_match(2, prefix="kb", ruleset="classic", seed="play-keys-1",
                                    tokens_to_win=1, turn_timeout_s=600, first_seat=0)
    me = players[0]
    sign_in(page, api_server.url, me)
    page.goto(f"{api_server.url}/play/{mid}")
    rng = random.Random(8)
    moves = 0
    escaped = False
    with HttpOpponents(api_server.url, mid, players[1:], delay=0.02):
        end = time.monotonic() + 60
        while time.monotonic() < end:
            st = wait_my_turn_or_end(page, 30)
            if st["status"] == "finished":
                break
            # the page puts the focus on the hand when the turn comes
            assert page.evaluate("document.activeElement.closest('#hand') !== null")
            first = page.get_attribute("#hand button[data-index='0']", "data-card")
            if not escaped and first == "guard" and page.is_enabled("#hand button[data-index='0']"):
                # key 1 picks the first card; Escape leaves the guess (or target) choice
                page.keyboard.press("1")
                page.wait_for_function(
                    "v => document.querySelector('#choices button.option') || "
                    "Number(document.body.dataset.version) !== v", arg=st["version"])
                if page_state(page)["version"] != st["version"]:
                    moves += 1  # no one to target: the guard went straight out
                    continue
                screenshot(page, "play-keyboard-choice")
                page.keyboard.press("Escape")
                page.wait_for_function("() => !document.querySelector('#choices button.option')")
                assert page.evaluate("document.activeElement.closest('#hand') !== null")
                escaped = True
            click_one_move(page, rng, keyboard=True)
            moves += 1
        page.wait_for_selector("#result #match-result")
    assert moves >= 1
    assert escaped, "no turn offered the Guard first: Escape was not tried (pick another seed)"


def test_the_clock_counts_down_and_the_server_moves_at_the_deadline(
        page: Any, api: Api, api_server: ApiServer) -> None:
    """Nobody clicks (so a short deadline is fine): the countdown runs down on the person's turn,
    marked urgent, and when the deadline passes the page shows the move the server made for
    them, with no reload."""
    # a 12-s turn: urgent (under 10 s left) for long enough that even a page that shows the
    # turn a few seconds late on a loaded machine sees its countdown tick before the deadline
    mid, players, _ = api.new_match(2, prefix="ck", ruleset="classic", seed="play-clock-1",
                                    turn_timeout_s=12, first_seat=0, max_timeouts=5)
    me = players[0]
    sign_in(page, api_server.url, me)
    page.goto(f"{api_server.url}/play/{mid}")
    with HttpOpponents(api_server.url, mid, players[1:], delay=0.02):
        clock = "() => [document.body.dataset.version, document.getElementById('clock-text').textContent]"
        st = wait_my_turn_or_end(page, 30)  # seat 0 moves first: this is its first turn
        assert st["status"] == "active" and st["myTurn"]
        page.wait_for_selector("#clock.mine.urgent:not([hidden])")
        version, first = page.evaluate(clock)
        page.wait_for_function(f"([v, t]) => ({clock})().join() !== [v, t].join()",
                               arg=[version, first], timeout=15000)
        now_version, now = page.evaluate(clock)
        assert now_version == version, "the turn ended before its clock ticked once"
        assert now < first, (first, now)  # m:ss counts down
        screenshot(page, "play-clock-urgent")
        page.wait_for_selector("#log li[data-type='play'] >> text=timed out", timeout=15000)
    line = page.locator("#log li[data-type='play']", has_text="timed out").first.inner_text()
    assert me.name in line, line
