"""A person, from the web pages alone: signs up, challenges a house bot, plays a whole classic
2-player match by clicking until the result is shown; then a 4-player 2019 match against three
bots with a Chancellor turn (a fixed round-1 deck deals the person the Chancellor). Screenshots
of each step land in tests/artifacts/ (play-*.png).

The page is driven only through what a person sees: the sign-up form, the online list's
Challenge buttons, the challenge form, the cards of the hand and the choices the table offers.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from service.engine.cards import NAMES, RULESETS
from tests.support.apiclient import Api, Player
from tests.support.play_browser import click_one_move, wait_my_turn_or_end
from tests.support.redis_proc import RedisProcess
from tests.support.server import ApiServer
from tests.support.web import checked_page, screenshot

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def house_bots(api_server: ApiServer, redis_server: RedisProcess,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """``python -m service.ops.house_bots``, for real: three counting bots that take challenges."""
    log = tmp_path_factory.mktemp("house") / "house_bots.log"
    env = dict(os.environ, LLSDK_URL=api_server.url, REDIS_URL=redis_server.url,
               # "," names no ladder (empty would mean all): these bots only take challenges
               HOUSE_BOTS_FILES="counting_bot", HOUSE_BOTS_COPIES="3", HOUSE_BOTS_LADDERS=",",
               HOUSE_BOTS_POLL_WAIT="1")
    with open(log, "ab") as f:
        proc = subprocess.Popen([sys.executable, "-m", "service.ops.house_bots"], cwd=REPO, env=env,
                                stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # The names they play under: house-counting-1..3, unless an earlier test on this
        # session's Redis took one (tests/system/test_house_bots.py leaves house-counting-1-2 behind
        # as the kept player of house-counting-1), so read them from the log.
        names: list[str] = []
        end = time.monotonic() + 40
        while time.monotonic() < end and len(names) < 3:
            assert proc.poll() is None, log.read_text()
            names = re.findall(r"house-counting-\d \(CountingBot\) plays as (\S+) ",
                               log.read_text())
            time.sleep(0.2)
        assert len(names) == 3 and "?" not in names, log.read_text()
        end = time.monotonic() + 40
        while time.monotonic() < end:
            assert proc.poll() is None, log.read_text()
            online = requests.get(f"{api_server.url}/v1/players/online", params={"limit": 500},
                                  timeout=10).json()
            takers = {p["name"] for p in online["players"] if p["accepts_challenges"]}
            if set(names) <= takers:
                break
            time.sleep(0.3)
        else:
            pytest.fail(f"the house bots {names} are not online for challenges: "
                        f"{log.read_text()[-3000:]}")
        yield names
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def sign_up(page: Any, base: str, name: str, shots: bool = True) -> dict[str, Any]:
    page.goto(f"{base}/play")
    page.wait_for_selector("#signup-name")
    if shots:
        screenshot(page, "play-01-sign-up")
    page.fill("#signup-name", name)
    page.click("#signup button[type=submit]")
    page.wait_for_selector("#token-once:not([hidden])")
    shown = page.inner_text("#token-value")
    stored = page.evaluate("JSON.parse(localStorage.getItem('llarena.player'))")
    assert stored["token"] == shown and stored["name"] == name
    me = requests.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {shown}"}, timeout=10)
    assert me.status_code == 200 and me.json()["name"] == name
    assert me.json().get("kind") == "human"
    if shots:
        screenshot(page, "play-02-token-shown-once")
    page.click("#token-done")
    assert page.inner_text("#token-value") == ""  # shown once: gone from the page
    return stored  # type: ignore[no-any-return]


def challenge(page: Any, opponents: list[str], ruleset: str, shot: str,
              deck: list[str] | None = None, me_first: bool = False) -> str:
    """Pick the opponents in the online list, set the options, send; returns the match id the
    page goes to once they all accepted."""
    for name in opponents:
        row = page.locator(f"#online-table tr[data-name='{name}']")
        row.wait_for()
        row.locator("button.pick").click()
    page.select_option("#ruleset", ruleset)
    if deck or me_first:
        page.click("#challenge details summary")
    if deck:
        page.fill("#deck", ", ".join(deck))
    if me_first:
        page.check("#me-first")
    screenshot(page, shot)
    page.click("#challenge-send")
    page.wait_for_url("**/play/m_*", timeout=30000)
    page.wait_for_selector("body[data-status='active'], body[data-status='finished']")
    return str(page.url.rsplit("/", 1)[-1])


def play_to_the_end(page: Any, rng: random.Random, prefix: str, budget_s: float,
                    prefer: str | None = None) -> dict[str, int]:
    """Click moves until the match result is shown; screenshots of the first turn, the first
    target and guess choices, the first round result and the end."""
    seen: dict[str, int] = {"moves": 0}
    end = time.monotonic() + budget_s

    def shoot(kind: str) -> None:
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] == 1:
            screenshot(page, f"{prefix}-choose-{kind}")

    while time.monotonic() < end:
        st = wait_my_turn_or_end(page, max(1.0, end - time.monotonic()))
        if st["status"] == "finished":
            break
        if seen["moves"] == 0:
            screenshot(page, f"{prefix}-your-turn")
        if st["phase"] == "chancellor":
            seen["chancellor"] = seen.get("chancellor", 0) + 1
            if seen["chancellor"] == 1:
                screenshot(page, f"{prefix}-chancellor-keep")
        if page.locator("#result:not([hidden]) #round-result").count() and "round" not in seen:
            seen["round"] = 1
            screenshot(page, f"{prefix}-round-result")
        click_one_move(page, rng, prefer=prefer if st["phase"] == "play" else None,
                       before_choice=shoot)
        seen["moves"] += 1
    page.wait_for_selector("#result #match-result", timeout=15000)
    screenshot(page, f"{prefix}-match-result")
    return seen


def test_person_signs_up_challenges_a_house_bot_and_plays_two_matches(
        page: Any, api: Api, api_server: ApiServer, house_bots: list[str]) -> None:
    base = api_server.url
    me = sign_up(page, base, "ada_lovelace")
    page.wait_for_selector(f"#online-table tr[data-name='{house_bots[0]}']")
    screenshot(page, "play-03-who-is-online")

    # 1. classic, 2 players, to the end
    mid = challenge(page, [house_bots[0]], "classic", "play-04-challenge")
    rng = random.Random(2)
    seen = play_to_the_end(page, rng, "play-05-classic", budget_s=100)
    summary = api.summary(mid)
    assert summary["status"] == "finished" and summary["ruleset"] == "classic"
    assert {p["name"] for p in summary["players"]} == {me["name"], house_bots[0]}
    assert max(summary["result"]["tokens"]) == 7  # a whole match: someone reached 7 tokens
    result = page.inner_text("#result")
    winner = summary["players"][summary["result"]["winners"][0]]["name"]
    assert ("You won" in result) == (winner == me["name"]), result
    assert seen["moves"] >= 3
    assert page.locator("#log li[data-type='match_end']").count() == 1

    # 2. 2019, 4 players, with a Chancellor turn: the person sits first and starts, and the
    # round-1 deck (typed in the form) deals the first player a Chancellor.
    page.goto(f"{base}/play")
    mid = challenge(page, house_bots, "2019", "play-06-challenge-4", deck=chancellor_deck(),
                    me_first=True)
    person = Player(me["id"], me["name"], me["token"])
    view = api.view(person, mid)
    assert view["ruleset"] == "2019" and len(view["players"]) == 4 and view["seat"] == 0
    seen = play_to_the_end(page, random.Random(4), "play-07-2019", budget_s=110,
                           prefer="chancellor")
    summary = api.summary(mid)
    assert summary["status"] == "finished"
    record = api.events(mid)["events"]
    returns = [e for e in record if e["type"] == "chancellor_returned" and e["seat"] == 0]
    assert returns, "the person never finished a Chancellor turn"
    assert seen.get("chancellor", 0) >= len(returns)
    assert max(summary["result"]["tokens"]) >= 4  # a whole 4-player match (a spy may add one)


def chancellor_deck() -> list[str]:
    """2019's 21 cards, shuffled (fixed seed), with both Chancellors dealt to the first two
    players (the set-aside card comes first)."""
    rest = [NAMES[c] for c in RULESETS["2019"].deck()]
    for _ in range(2):
        rest.remove("chancellor")
    random.Random(5).shuffle(rest)
    return [rest.pop(0), "chancellor", "chancellor"] + rest


def test_person_accepts_a_challenge_in_the_lobby(page: Any, api: Api, api_server: ApiServer) -> None:
    """A bot challenges a person who has the Play page open: the challenge appears under
    Received with Accept and Decline; a declined one closes, an accepted one opens the table."""
    base = api_server.url
    me = sign_up(page, base, "grace_h", shots=False)
    # the open page listens for challenges: the person is online and takes them
    end = time.monotonic() + 15
    while time.monotonic() < end:
        online = api.ok(api.request("GET", "/v1/players/online"))["players"]
        row = next((p for p in online if p["name"] == me["name"]), None)
        if row and row["accepts_challenges"]:
            break
        time.sleep(0.3)
    else:
        pytest.fail(f"the person is not listed online as taking challenges: {online}")
    assert row["kind"] == "human"
    bot = api.register("rival")
    first = api.ok(api.request("POST", "/v1/challenges", token=bot.token,
                               json={"opponents": [me["name"]], "ruleset": "classic"}), 201)
    item = page.locator(f"#incoming [data-challenge='{first['challenge_id']}']")
    item.wait_for(timeout=15000)
    assert bot.name in item.inner_text()
    item.locator("button", has_text="Decline").click()
    page.wait_for_function(
        "id => !document.querySelector(`#incoming [data-challenge='${id}']`)",
        arg=first["challenge_id"])
    got = api.ok(api.request("GET", f"/v1/challenges/{first['challenge_id']}", token=bot.token))
    assert got["status"] == "declined"

    second = api.ok(api.request("POST", "/v1/challenges", token=bot.token,
                                json={"opponents": [me["name"]], "ruleset": "2019",
                                      "turn_timeout_s": 600}), 201)
    item = page.locator(f"#incoming [data-challenge='{second['challenge_id']}']")
    item.wait_for(timeout=15000)
    screenshot(page, "play-08-challenge-received")
    item.locator("button", has_text="Accept").click()
    page.wait_for_url("**/play/m_*", timeout=15000)
    page.wait_for_selector("body[data-status='active']")
    mid = page.url.rsplit("/", 1)[-1]
    got = api.ok(api.request("GET", f"/v1/challenges/{second['challenge_id']}", token=bot.token))
    assert got["status"] == "accepted" and got["match_id"] == mid
    assert {p["name"] for p in api.summary(mid)["players"]} == {me["name"], bot.name}
    screenshot(page, "play-09-accepted-table")


def test_two_people_play_each_other(browser: Any, api: Api, api_server: ApiServer) -> None:
    """Person A challenges person B (both on the Play page, in two browsers); B accepts; both
    tables open and each person plays their own moves by clicking until both see the result."""
    base = api_server.url
    with checked_page(browser) as a, checked_page(browser) as b:  # (errors fail the test)
        pages = [a, b]
        me_a = sign_up(a, base, "alan_t", shots=False)
        me_b = sign_up(b, base, "barbara_l", shots=False)
        a.goto(f"{base}/play")  # the online list as it stands now, with B listening
        a.locator(f"#online-table tr[data-name='{me_b['name']}'] button.pick").click()
        a.select_option("#ruleset", "2019")
        a.click("#challenge details summary")
        a.select_option("#tokens", "2")
        a.click("#challenge-send")
        item = b.locator("#incoming li.challenge")
        item.wait_for()
        assert me_a["name"] in item.inner_text()
        item.locator("button", has_text="Accept").click()
        for pg in pages:
            pg.wait_for_url("**/play/m_*", timeout=20000)
        assert a.url == b.url
        mid = a.url.rsplit("/", 1)[-1]
        rngs = [random.Random(21), random.Random(22)]
        end = time.monotonic() + 90
        while time.monotonic() < end:
            states = [pg.evaluate("({s: document.body.dataset.status, t: document.body.dataset.myTurn})")
                      for pg in pages]
            if all(st["s"] == "finished" for st in states):
                break
            for pg, st, rng in zip(pages, states, rngs, strict=True):
                if st["s"] == "active" and st["t"] == "1" and \
                        pg.locator("#hand button:not([disabled])").count():
                    click_one_move(pg, rng)
            time.sleep(0.1)
        for pg in pages:
            pg.wait_for_selector("#result #match-result")
        screenshot(b, "play-10-person-vs-person")
        summary = api.summary(mid)
        assert summary["status"] == "finished"
        assert {p["name"] for p in summary["players"]} == {me_a["name"], me_b["name"]}
        assert max(summary["result"]["tokens"]) >= 2
