"""The tables in headless Chromium: the log, the card tracker, the Guard's names, the keys, a
phone-sized screen.

- Every event is shown once and in order whatever brought it: a move whose answer already
  belongs to the next round (the long-polls are cut off here, so that answer is the only way
  the page learns of it) still leaves every event of the round that ended in the log.
- The card tracker counts public information only (discards and face-up cards, never the
  player's own hand nor the set-aside card), the same on the player's and the spectator's
  table; the Guard's names whose copies are all seen are greyed out and can't be chosen.
- The digit keys play a whole move (card, then guess).
- The spectator's log keeps the newest line in sight while the reader is at the end, leaves a
  reader who scrolled up in place, ends at the end when the match ends, and a replay opened
  afterwards starts at the start.
- On a phone-sized screen nothing is wider than the screen, and a match can be played to its
  end by tapping.
- A pointer resting on the lower edge of a card of the hand lifts the card's face and the card
  holds still (a lifted button flickered up and down under it, and a click never landed: CI,
  a red run of test_two_people_play_each_other).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.apiclient import Api
from tests.support.play_browser import (
    HttpOpponents,
    click_one_move,
    page_state,
    sign_in,
    wait_my_turn_or_end,
)
from tests.support.server import ApiServer
from tests.support.web import ARTIFACTS, checked_page, screenshot, wait_data

#: classic, two players, three cards face up: the king set aside; two Handmaids and a Baron
#: face up; the person (seat 0, first) holds a Guard and draws a Guard; the other holds a Priest
DECK = ["king", "handmaid", "handmaid", "baron", "guard", "priest", "guard",
        "guard", "guard", "guard", "priest", "baron", "prince", "prince", "countess", "princess"]

TRACKER_JS = """sel => Object.fromEntries([...document.querySelectorAll(sel + ' tr[data-card]')]
  .map(tr => [tr.dataset.card, {copies: Number(tr.dataset.copies), seen: Number(tr.dataset.seen),
              left: Number(tr.dataset.left), gone: tr.classList.contains('gone')}]))"""

LOG_JS = "() => [...document.querySelectorAll('#log li')].map(li => Number(li.dataset.seq))"

#: the log is scrolled to its end (its last line in sight)
AT_END_JS = """() => { const l = document.getElementById('log');
  return l.scrollHeight - l.scrollTop - l.clientHeight < 45; }"""


def _wait_quietly(page: Any, condition: str, arg: Any) -> None:
    """Wait for ``condition``, but let the assertion that follows say what is wrong."""
    try:
        page.wait_for_function(condition, arg=arg, timeout=15000)
    except Exception as e:  # noqa: BLE001 - Playwright's TimeoutError (imported lazily)
        if "Timeout" not in type(e).__name__:
            raise


def _is_long_poll(url: str) -> bool:
    return "/view?" in url and "wait=" in url


def test_a_round_that_ends_inside_a_moves_answer_leaves_no_gap_in_the_log(
        page: Any, api: Api, api_server: ApiServer) -> None:
    mid, players, _ = api.new_match(2, prefix="gap", ruleset="classic", deck=DECK, first_seat=0,
                                    tokens_to_win=2, turn_timeout_s=600)
    me = players[0]
    sign_in(page, api_server.url, me)
    cut: list[str] = []

    def no_long_poll(route: Any) -> None:
        cut.append(route.request.url)
        route.abort()

    page.route(_is_long_poll, no_long_poll)
    page.goto(f"{api_server.url}/play/{mid}")
    wait_my_turn_or_end(page, 30)

    # The tracker: public cards only. The person's two Guards and the set-aside King are not
    # counted; the face-up Handmaids and Baron are.
    mine = page.evaluate(TRACKER_JS, "#tracker")
    assert mine["handmaid"] == {"copies": 2, "seen": 2, "left": 0, "gone": True}
    assert mine["baron"] == {"copies": 2, "seen": 1, "left": 1, "gone": False}
    assert mine["guard"] == {"copies": 5, "seen": 0, "left": 5, "gone": False}
    assert mine["king"] == {"copies": 1, "seen": 0, "left": 1, "gone": False}
    assert set(mine) == {"guard", "priest", "baron", "handmaid", "prince", "king", "countess",
                         "princess"}
    spectator = page.context.new_page()
    spectator.goto(f"{api_server.url}/matches/{mid}?interval=200")
    spectator.wait_for_selector("#tracker tr[data-card='guard']")
    assert spectator.evaluate(TRACKER_JS, "#tracker") == mine
    screenshot(page, "table-mid-round")

    # Keys only: 1 picks the Guard (its one target is chosen for it), a digit names the Priest.
    page.keyboard.press("1")
    page.wait_for_selector("#choices button.guess")
    guesses = page.eval_on_selector_all("#choices button.option", """bs => bs.map(b => ({
        guess: b.dataset.guess, disabled: b.disabled, key: b.querySelector('.key').textContent}))""")
    assert [g["guess"] for g in guesses if g["disabled"]] == ["handmaid"]  # both seen face up
    priest = next(g for g in guesses if g["guess"] == "priest")
    page.keyboard.press(priest["key"])

    # The answer to that move is a view of round 2; the long-poll brought nothing.
    wait_data(page, "round", "2")
    page.wait_for_selector("#result #round-result")
    seen = api.events(mid, token=me.token)["events"]
    want = [e["seq"] for e in seen if e["type"] not in ("deck", "turn")]
    _wait_quietly(page, "n => document.querySelectorAll('#log li').length >= n", len(want))
    shown = page.evaluate(LOG_JS)
    assert shown == want, f"every event once, in order; missing {sorted(set(want) - set(shown))}"
    types = {e["seq"]: e["type"] for e in seen}
    assert [types[s] for s in shown if types[s] in ("play", "eliminated", "round_end",
                                                    "round_start")] == \
        ["round_start", "play", "eliminated", "round_end", "round_start"]
    assert cut, "no long-poll was cut off: the move's answer was not the only path"
    assert page.evaluate(AT_END_JS)
    screenshot(page, "table-round-end")

    # The spectator's log follows its header to the same point.
    version = page_state(page)["version"]
    wait_data(spectator, "version", str(version))
    public = [e["seq"] for e in api.events(mid)["events"] if e["type"] != "deck"]
    spectator.wait_for_function("n => document.querySelectorAll('#log li').length >= n",
                                arg=len(public))
    assert spectator.evaluate(LOG_JS) == public
    # a new round: nothing seen yet but the face-up cards
    assert sum(t["seen"] for t in spectator.evaluate(TRACKER_JS, "#tracker").values()) == 3
    spectator.close()


def test_spectator_log_keeps_the_readers_place(page: Any, api: Api,
                                               api_server: ApiServer) -> None:
    mid, players, _ = api.new_match(3, prefix="scroll", ruleset="2019", seed="scroll-2",
                                    tokens_to_win=2, turn_timeout_s=600)
    page.set_viewport_size({"width": 1280, "height": 700})
    page.goto(f"{api_server.url}/matches/{mid}?interval=200")
    with HttpOpponents(api_server.url, mid, players, delay=0.25, seed=5):
        # live, a reader at the end sees the newest line
        page.wait_for_function("""() => { const l = document.getElementById('log');
            return l.scrollHeight > l.clientHeight + 100; }""", timeout=60000)
        assert page.evaluate(AT_END_JS)
        # a reader who scrolled up stays there while lines keep coming
        page.evaluate("document.getElementById('log').scrollTop = 0")
        lines = len(page.evaluate(LOG_JS))
        page.wait_for_function(
            "n => document.querySelectorAll('#log li').length > n + 2 || "
            "document.body.dataset.mode === 'replay'", arg=lines, timeout=60000)
        if page.evaluate("document.body.dataset.mode") == "live":
            assert page.evaluate("document.getElementById('log').scrollTop") == 0
        # watched to the end: the replay stands at its last step, the log at its end
        page.wait_for_selector("body[data-mode='replay']", timeout=120000)
    assert page.evaluate("Number(document.body.dataset.step) === "
                         "Number(document.body.dataset.steps) - 1")
    assert page.evaluate(AT_END_JS)
    # opened afterwards: the replay and its log start at the start
    page.goto(f"{api_server.url}/matches/{mid}")
    page.wait_for_selector("body[data-mode='replay']")
    assert page.evaluate("document.body.dataset.step") == "0"
    assert page.evaluate("document.getElementById('log').scrollTop") == 0


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    """A phone-sized page (390 x 844, touch), checked as ``page`` is."""
    with checked_page(browser, phone=True) as pg:
        yield pg


FITS_JS = """() => {
  const w = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('main *')].filter(n => {
    const r = n.getBoundingClientRect();
    return r.width > 0 && (r.right > w + 1 || r.left < -1) && !n.closest('ol.log, table.board');
  }).map(n => n.id || n.className.baseVal || n.className || n.tagName);
  return {scroll: document.documentElement.scrollWidth, width: w, wide: wide.slice(0, 5)};
}"""


def _fits(page: Any) -> None:
    got = page.evaluate(FITS_JS)
    assert got["scroll"] <= got["width"] and not got["wide"], got


#: the rectangles of the first enabled card of the hand (the button, its face), one a frame
#: for 40 frames
FRAMES_JS = """() => new Promise(done => {
  const b = document.querySelector('#hand button:not([disabled])');
  const out = [];
  const step = () => {
    const r = b.getBoundingClientRect(), f = b.querySelector('svg').getBoundingClientRect();
    out.push({top: r.top, face: f.top, hover: b.matches(':hover')});
    if (out.length < 40) requestAnimationFrame(step); else done(out);
  };
  requestAnimationFrame(step);
})"""


def test_a_card_under_the_pointers_lower_edge_holds_still(page: Any, api: Api,
                                                          api_server: ApiServer) -> None:
    mid, players, _ = api.new_match(2, prefix="edge", ruleset="classic", deck=DECK, first_seat=0,
                                    turn_timeout_s=600)
    sign_in(page, api_server.url, players[0])
    page.goto(f"{api_server.url}/play/{mid}")
    wait_my_turn_or_end(page, 30)
    card = page.locator("#hand button:not([disabled])").first
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    box = card.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] - 3)
    page.wait_for_timeout(300)  # the lift (0.12 s) is over
    frames = page.evaluate(FRAMES_JS)
    assert {f["top"] for f in frames} == {frames[0]["top"]}, frames  # the button never moved
    assert all(f["hover"] for f in frames), frames  # and stayed under the pointer
    assert {f["face"] for f in frames} == {frames[0]["face"]}, frames
    assert frames[0]["face"] < frames[0]["top"], frames  # the face is lifted
    card.click(timeout=5000)  # and a click lands (it did not while the card flickered)
    page.wait_for_function("() => document.querySelector('#hand button.chosen') || "
                           "document.querySelector('#choices button.option')")


def test_the_table_fits_a_phone(phone: Any, api: Api, api_server: ApiServer) -> None:
    mid, players, _ = api.new_match(4, prefix="ph", ruleset="2019", seed="phone-1",
                                    tokens_to_win=1, turn_timeout_s=600)
    me = players[0]
    sign_in(phone, api_server.url, me)
    phone.goto(f"{api_server.url}/play/{mid}")
    rng = random.Random(3)
    moves = 0
    with HttpOpponents(api_server.url, mid, players[1:], delay=0.02):
        end = time.monotonic() + 100
        while time.monotonic() < end:
            st = wait_my_turn_or_end(phone, 60)
            if st["status"] == "finished":
                break
            _fits(phone)
            for box in phone.eval_on_selector_all(
                    "#hand button", "bs => bs.map(b => b.getBoundingClientRect().toJSON())"):
                assert 0 <= box["left"] and box["right"] <= 390, box
            if moves == 0:
                screenshot(phone, "phone-table")
            click_one_move(phone, rng)
            moves += 1
    phone.wait_for_selector("#result #match-result")
    _fits(phone)
    screenshot(phone, "phone-match-end")
    assert moves >= 1
    phone.goto(f"{api_server.url}/matches/{mid}")
    phone.wait_for_selector("body[data-mode='replay']")
    _fits(phone)
    assert ARTIFACTS.is_dir()
