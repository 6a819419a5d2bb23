"""The match page in headless Chromium: live while bots play, replay once it has ended.

- Live: a match is played by SDK bots (``llsdk.Bot``, in threads; plain HTTP players if the SDK
  is missing) while the page, loaded once, follows it on its own: its version moves, with no
  reload. At paused moments the page is compared with the engine's public view of the stored
  state: seats, tokens, discards, face-up cards, hand sizes and the public event log, and it
  names no card that the public view does not (so no hand, deck or set-aside card leaks). The
  page only ever sends anonymous GETs to the public summary and events.
- Replay: a finished match steps forward and back; every hand is shown, and at each step where
  the engine has a state to compare (after each action), the page's hands, discards, tokens and
  deck size are the engine's.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis

from service import engine
from service.engine import NAMES
from service.store import matches
from tests.support.apiclient import (
    NO_TIMEOUTS,
    Api,
    Player,
    actions_from_record,
    engine_match,
    play_randomly,
)
from tests.support.server import ApiServer
from tests.support.web import screenshot, wait_data

SEAT_JS = """() => ({
  version: document.body.dataset.version,
  mode: document.body.dataset.mode,
  step: document.body.dataset.step,
  seats: [...document.querySelectorAll('#players .seat')].map(s => ({
    seat: Number(s.dataset.seat),
    hand: [...s.querySelectorAll('.hand .card')].map(c => c.dataset.card || null),
    backs: s.querySelectorAll('.hand .card.back').length,
    revealed: s.querySelectorAll('.hand .card.revealed').length,
    handText: s.querySelector('.hand').textContent,
    discards: [...s.querySelectorAll('.discards .card')].map(c => c.dataset.card),
    tokens: Number(s.querySelector('.tokens').dataset.tokens),
    turn: s.classList.contains('turn'),
  })),
  faceUp: [...document.querySelectorAll('#piles .pile')].find(p => p.textContent.startsWith('face up'))
            ? [...[...document.querySelectorAll('#piles .pile')].find(p => p.textContent.startsWith('face up'))
                 .querySelectorAll('.card')].map(c => c.dataset.card) : [],
  deck: document.querySelector('#piles .pile').textContent,
  log: [...document.querySelectorAll('#log li')].map(li => ({seq: Number(li.dataset.seq),
        type: li.dataset.type, private: li.classList.contains('private'),
        current: li.classList.contains('current'), text: li.textContent})),
  // the page's text without the card tracker (which lists every card of the ruleset by name)
  text: (() => {
    const t = document.getElementById('tracker');
    if (t) t.style.display = 'none';
    const text = document.body.innerText;
    if (t) t.style.display = '';
    return text;
  })(),
})"""


# --------------------------------------------------------------------------- bots in threads


class Driver:
    """Plays a match in background threads, one move every ``delay`` seconds; ``pause()`` holds
    every move until ``resume()``. SDK bots when ``llsdk.Bot`` exists, else plain HTTP."""

    def __init__(self, base: str, mid: str, players: list[Player], delay: float = 0.2) -> None:
        self.base, self.mid, self.players, self.delay = base, mid, players, delay
        self.gate = threading.Event()
        self.gate.set()
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []
        self.kind = "sdk"
        try:
            from llsdk import Bot  # noqa: F401
        except ImportError:
            self.kind = "http"

    def _guard(self, fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported by finish()
                self.errors.append(e)
        return run

    def start(self) -> None:
        if self.kind == "sdk":
            from llsdk import Bot

            from tests.support.sdkclient import Client

            driver = self

            class Paced(Bot):  # type: ignore[misc]
                def choose(self, view: Any) -> Any:
                    driver.gate.wait()
                    time.sleep(driver.delay)
                    return self.rng.choice(view.legal_actions)

            for i, p in enumerate(self.players):
                bot = Paced()
                bot.rng = random.Random(100 + i)
                client = Client(self.base, p.token)
                self.threads.append(threading.Thread(target=self._guard(
                    lambda b=bot, c=client: b.run(c, max_matches=1, stop_event=self.stop,
                                                  poll_wait=1.0)), daemon=True))
        else:
            self.threads.append(threading.Thread(target=self._guard(self._http), daemon=True))
        for t in self.threads:
            t.start()

    def _http(self) -> None:
        api = Api(self.base)
        rng = random.Random(5)
        try:
            while not self.stop.is_set():
                v = api.summary(self.mid)
                if v["status"] == "finished":
                    return
                self.gate.wait()
                time.sleep(self.delay)
                p = self.players[v["turn"]["seat"]]
                view = api.view(p, self.mid)
                api.act(p, self.mid, rng.choice(view["legal_actions"]))
        finally:
            api.close()

    def pause(self, api: Api) -> dict[str, Any]:
        """Hold the bots; returns the public summary once the match stopped moving."""
        self.gate.clear()
        last = api.summary(self.mid)
        still_since = time.monotonic()
        while time.monotonic() - still_since < 4 * self.delay + 0.6:
            time.sleep(0.1)
            v = api.summary(self.mid)
            if v["version"] != last["version"]:
                last, still_since = v, time.monotonic()
        return last

    def resume(self) -> None:
        self.gate.set()

    def finish(self, timeout: float = 120.0) -> None:
        self.gate.set()
        for t in self.threads:
            t.join(timeout)
        self.stop.set()
        assert not any(t.is_alive() for t in self.threads), "the bots did not finish"
        assert not self.errors, self.errors

    def abort(self) -> None:
        self.stop.set()
        self.gate.set()
        for t in self.threads:
            t.join(10)


# --------------------------------------------------------------------------- checks


def _cards_named(text: str) -> set[str]:
    return {c for c in NAMES if re.search(rf"\b{c}\b", text, re.I)}


def check_only_public(page: Any, api: Api, r: redis.Redis, mid: str) -> dict[str, Any]:
    """The live page, at a moment the match stands still, against the engine's public view."""
    doc = matches.load(r, mid)
    assert doc.status == "active" and doc.state is not None
    state = doc.state
    wait_data(page, "version", str(doc.version))
    page.wait_for_function(  # the log has caught up with the version
        "n => document.querySelectorAll('#log li').length === n",
        arg=len(api.events(mid)["events"]))
    dom = page.evaluate(SEAT_JS)
    pv = engine.public_view(state, since=state.round_start_seq)  # the engine's public view
    summary = api.summary(mid)
    spectator_events = api.events(mid)["events"]
    assert summary["version"] == doc.version
    assert dom["mode"] == "live"
    assert [s["seat"] for s in dom["seats"]] == list(range(state.players))
    for s, p in zip(dom["seats"], pv["players"], strict=True):
        assert s["backs"] == p["hand_count"], (s, p)  # hands face down: only their size
        assert s["revealed"] == 0 and all(c is None for c in s["hand"]), s
        assert not _cards_named(s["handText"]), s["handText"]
        assert s["discards"] == p["discards"], (s, p)
        assert s["tokens"] == p["tokens"], (s, p)
        assert s["turn"] == (pv["turn"] is not None and pv["turn"]["seat"] == s["seat"])
    assert dom["faceUp"] == pv["face_up"]
    assert dom["deck"] == f"deck{pv['deck_count']} cards"
    # The log is the spectator's event list, no more.
    assert [e["seq"] for e in dom["log"]] == [e["seq"] for e in spectator_events]
    assert not any(e["private"] for e in dom["log"])
    # The page names no card the public view does not: no hand, no deck order, no set-aside.
    public_text = json.dumps(summary) + json.dumps(spectator_events)
    public_cards = {c for c in NAMES if f'"{c}"' in public_text}
    shown = _cards_named(dom["text"])
    assert shown <= public_cards, f"the page names {shown - public_cards}, hidden right now"
    hidden = {NAMES[c] for h in state.hands for c in h} | {NAMES[c] for c in state.deck} | \
        {NAMES[c] for c in state.aside}
    assert not (hidden - public_cards) & shown
    return dom


# --------------------------------------------------------------------------- live


def test_live_page_follows_the_match_and_shows_only_public_information(
        page: Any, api: Api, store: redis.Redis, api_server: ApiServer) -> None:
    mid, players, _ = api.new_match(3, prefix="bot", ruleset="2019", seed="web-live-1",
                                    tokens_to_win=3, turn_timeout_s=600)
    requests_seen: list[tuple[str, str, dict[str, str]]] = []
    page.on("request", lambda rq: requests_seen.append((rq.method, rq.url, rq.headers)))
    navigations: list[str] = []
    page.on("framenavigated", lambda f: navigations.append(f.url) if f == page.main_frame
            else None)
    page.goto(f"{api_server.url}/matches/{mid}?interval=250")
    page.wait_for_selector("body[data-mode='live']")
    page.evaluate("window.__loadedOnce = 'yes'")
    driver = Driver(api_server.url, mid, players)
    driver.start()
    try:
        versions: list[int] = []
        end = time.monotonic() + 20
        while time.monotonic() < end and len(set(versions)) < 5:
            v = page.evaluate("document.body.dataset.version")
            if v and (not versions or int(v) != versions[-1]):
                versions.append(int(v))
            time.sleep(0.1)
        assert len(set(versions)) >= 5, f"the page did not follow the match: {versions}"
        assert versions == sorted(versions)

        checked = 0
        for _ in range(3):
            v = driver.pause(api)
            if v["status"] != "active":
                break
            check_only_public(page, api, store, mid)
            if not checked:
                screenshot(page, "web-live")
            checked += 1
            driver.resume()
            time.sleep(1.5)
        assert checked, "the match ended before the page could be checked while it ran"

        driver.finish()
    except BaseException:
        driver.abort()
        raise
    assert api.summary(mid)["status"] == "finished"
    # The page noticed the end by itself and turned into the replay, hands now revealed.
    page.wait_for_selector("body[data-mode='replay']", timeout=20000)
    dom = page.evaluate(SEAT_JS)
    assert sum(s["revealed"] for s in dom["seats"]) > 0
    assert page.evaluate("window.__loadedOnce") == "yes", "the page was reloaded"
    assert navigations == [f"{api_server.url}/matches/{mid}?interval=250"], navigations
    # The page read only the public API, anonymously, with GETs.
    allowed = {f"/v1/matches/{mid}", f"/v1/matches/{mid}/events"}
    api_calls = [(m, urlsplit(u).path, h) for m, u, h in requests_seen if "/v1/" in u]
    assert api_calls
    for method, path, headers in api_calls:
        assert method == "GET" and path in allowed, (method, path)
        assert "authorization" not in {k.lower() for k in headers}, headers
    screenshot(page, "web-live-ended")


# --------------------------------------------------------------------------- replay


def engine_snapshots(summary: dict[str, Any], events: list[dict[str, Any]]
                     ) -> dict[int, dict[str, Any]]:
    """The engine's table after the deal and after each action, keyed by how many events the
    match had then (so by the last event a replay step shows, plus one)."""
    opts = dict(summary["options"])
    s = engine_match(opts)

    def snap() -> dict[str, Any]:
        return {"hands": [sorted(NAMES[c] for c in h) for h in s.hands],
                "discards": [[NAMES[c] for c in d] for d in s.discards],
                "tokens": list(s.tokens), "deck": len(s.deck)}

    out = {len(s.events): snap()}
    for a in actions_from_record(events):
        engine.apply_inplace(s, a)
        out[len(s.events)] = snap()
    assert s.status == engine.FINISHED
    return out


def _dom_table(dom: dict[str, Any]) -> dict[str, Any]:
    return {"hands": [sorted(s["hand"]) for s in dom["seats"]],
            "discards": [s["discards"] for s in dom["seats"]],
            "tokens": [s["tokens"] for s in dom["seats"]],
            "deck": int(dom["deck"].removeprefix("deck").split()[0])}


@pytest.mark.parametrize(("ruleset", "seats", "seed"), [("2019", 4, "web-replay-4"),
                                                         ("classic", 2, "web-replay-2")])
def test_replay_steps_forward_and_back_with_every_hand(
        page: Any, api: Api, api_server: ApiServer, ruleset: str, seats: int, seed: str) -> None:
    mid, players, joins = api.new_match(seats, prefix="bot", ruleset=ruleset, seed=seed,
                                        tokens_to_win=3, **NO_TIMEOUTS)
    play_randomly(api, mid, players, random.Random(seed), joins[-1])
    summary = api.summary(mid)
    record = api.events(mid)["events"]
    snaps = engine_snapshots(summary, record)

    page.goto(f"{api_server.url}/matches/{mid}")
    page.wait_for_selector("body[data-mode='replay']")
    n = int(page.evaluate("document.body.dataset.steps"))
    assert n > 10
    assert page.evaluate("document.body.dataset.step") == "0"
    assert page.is_disabled("#back") and not page.is_disabled("#forward")
    seen: dict[int, dict[str, Any]] = {}
    compared = 0
    for i in range(n):
        if i:
            page.click("#forward")
        wait_data(page, "step", str(i))
        dom = page.evaluate(SEAT_JS)
        assert dom["mode"] == "replay"
        current = [e["seq"] for e in dom["log"] if e["current"]]
        assert current, f"step {i} marks no event"
        # one numbering: a step is named by the seq of its first event
        assert f"event #{min(current)} / #" in dom["text"]
        table = _dom_table(dom)
        seen[i] = table
        key = max(current) + 1
        if key in snaps:
            assert table == snaps[key], f"step {i} (events up to {key - 1})"
            compared += 1
        if i >= 1:  # after the deal every live hand is shown, face up
            assert all(c is not None for s in dom["seats"] for c in s["hand"])
            assert any(s["revealed"] for s in dom["seats"])
        if i == 3:
            screenshot(page, f"web-replay-{ruleset}-{seats}")
    assert compared >= n // 3, (compared, n)
    assert page.is_disabled("#forward") and page.is_disabled("#last")
    # The last step shows the result.
    assert summary["result"]["tokens"] == seen[n - 1]["tokens"]
    # Backward, by button and by keyboard: the same tables as on the way forward.
    for i in range(n - 2, n - 7, -1):
        page.click("#back")
        wait_data(page, "step", str(i))
        assert _dom_table(page.evaluate(SEAT_JS)) == seen[i]
    page.keyboard.press("ArrowLeft")
    wait_data(page, "step", str(n - 7))
    page.keyboard.press("ArrowRight")
    wait_data(page, "step", str(n - 6))
    page.click("#first")
    wait_data(page, "step", "0")
    assert _dom_table(page.evaluate(SEAT_JS)) == seen[0]
    page.click("#last")
    wait_data(page, "step", str(n - 1))
    screenshot(page, f"web-replay-{ruleset}-{seats}-end")
    # Each event links to the rule it applied (a play to its card's rule), and the link opens
    # that rule on /rules.
    links = page.evaluate("""[...document.querySelectorAll('#log li')].map((li) => ({
        type: li.dataset.type, card: li.textContent,
        rules: [...li.querySelectorAll('a.rule')].map((a) => a.getAttribute('href'))}))""")
    assert len(links) >= len([e for e in record if e["type"] != "deck"])
    assert all(x["rules"] for x in links), [x for x in links if not x["rules"]][:3]
    assert all(h.startswith("/rules#R") for x in links for h in x["rules"])
    plays = {e["seq"]: e for e in record if e["type"] == "play"}
    card_rule = {"guard": "R12", "priest": "R13", "baron": "R14", "handmaid": "R15",
                 "prince": "R16", "chancellor": "R17", "king": "R18", "countess": "R19",
                 "princess": "R20", "spy": "R20"}
    play_links = page.evaluate("""[...document.querySelectorAll("#log li[data-type='play']")]
        .map((li) => [Number(li.dataset.seq), li.querySelector('a.rule').getAttribute('href')])""")
    assert play_links
    for seq, href in play_links:
        e = plays[seq]
        no_target = e["card"] in ("guard", "priest", "baron", "king") and e.get("target") is None
        assert href == "/rules#" + ("R20a" if no_target else card_rule[e["card"]]), (e, href)
    assert all("/rules#R22" in x["rules"] for x in links if x["type"] == "round_end")
    page.click("#log li[data-type='round_end'] a.rule")
    page.wait_for_url("**/rules#R22")
    assert page.evaluate("document.getElementById('R22') !== null")


def test_a_match_whose_creator_fixed_the_deal_says_so_on_its_page_and_the_index(
        page: Any, api: Api, api_server: ApiServer) -> None:
    """A creator who chose the seed may know every hand: the match page and the index's lists
    show a "fixed by creator" badge naming what was chosen; a match dealt by the server has
    none."""
    fixed, _, _ = api.new_match(2, prefix="fix", ruleset="classic", seed="web-fixed-1",
                              **NO_TIMEOUTS)
    fair, _, _ = api.new_match(2, prefix="fair", ruleset="classic", **NO_TIMEOUTS)
    page.goto(f"{api_server.url}/matches/{fixed}")
    badge = page.wait_for_selector("#match-info .badge.fixed")
    assert badge.text_content() == "fixed by creator"
    assert "seed" in (badge.get_attribute("title") or "")
    page.goto(f"{api_server.url}/matches/{fair}")
    page.wait_for_selector("body[data-mode='live']")
    assert page.query_selector("#match-info .badge.fixed") is None
    page.goto(f"{api_server.url}/")
    page.wait_for_selector(f"a[href='/matches/{fixed}']")
    row_badges = page.evaluate("""(ids) => ids.map((id) => {
        const row = document.querySelector(`a[href='/matches/${id}']`).closest('tr');
        return row.querySelector('.badge.fixed') ? row.querySelector('.badge.fixed').textContent
                                                 : null; })""", [fixed, fair])
    assert row_badges == ["fixed by creator", None]
