"""A person at the play page (tests/web): clicks only what the page offers, the way a person
would, plus opponents that play over the public API when no house bot is wanted.

``click_one_move`` chooses a card of the hand, then any target, guess or order the page asks
for, among the enabled buttons only (the page builds them from ``legal_actions``); it never
posts anything itself. ``HttpOpponents`` are plain HTTP loops (view, then one of its
``legal_actions``), for tests that need opponents the test controls.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.support.apiclient import Api, Player

PAGE_STATE_JS = """() => ({
  status: document.body.dataset.status || null,
  version: Number(document.body.dataset.version || -1),
  myTurn: document.body.dataset.myTurn === '1',
  phase: document.body.dataset.phase || '',
  round: Number(document.body.dataset.round || 0),
})"""


def sign_in(page: Any, base: str, player: Player) -> None:
    """Put ``player``'s token where the sign-up form would have kept it."""
    page.goto(f"{base}/play")
    page.evaluate("p => localStorage.setItem('llarena.player', JSON.stringify(p))",
                  {"id": player.id, "name": player.name, "token": player.token})


def page_state(page: Any) -> dict[str, Any]:
    return page.evaluate(PAGE_STATE_JS)  # type: ignore[no-any-return]


def wait_my_turn_or_end(page: Any, timeout: float) -> dict[str, Any]:
    page.wait_for_function(
        "() => document.body.dataset.status === 'finished' || "
        "(document.body.dataset.myTurn === '1' && document.querySelector('#hand button:not([disabled])'))",
        timeout=timeout * 1000)
    return page_state(page)


def click_one_move(page: Any, rng: random.Random, *, keyboard: bool = False,
                   prefer: str | None = None,
                   before_choice: Callable[[str], None] | None = None) -> list[str]:
    """Play one move by clicking (or with the keyboard: focus a button, Enter); returns what
    was chosen, e.g. ``["card:guard", "target:1", "guess:priest"]``. ``prefer``: that card of
    the hand if the page lets it be chosen."""
    version = page_state(page)["version"]
    cards = page.locator("#hand button:not([disabled])")
    n = cards.count()
    assert n > 0, "my turn, but no card of the hand can be chosen"
    preferred = page.locator(f"#hand button[data-card='{prefer}']:not([disabled])")
    pick = preferred.first if prefer and preferred.count() else cards.nth(rng.randrange(n))
    chosen = [f"card:{pick.get_attribute('data-card')}"]
    press(page, pick, keyboard)
    for _ in range(4):  # target, guess, order or a confirmation
        page.wait_for_function(
            "v => Number(document.body.dataset.version) !== v || "
            "document.querySelector('#choices button.option')", arg=version)
        options = page.locator("#choices button.option:not([disabled])")  # greyed: impossible
        if page_state(page)["version"] != version or options.count() == 0:
            break
        kind = (options.first.get_attribute("class") or "").replace("option", "").strip()
        if before_choice:
            before_choice(kind)
        opt = options.nth(rng.randrange(options.count()))
        chosen.append(f"{kind}:{opt.get_attribute('data-target') or opt.get_attribute('data-guess') or opt.get_attribute('data-bottom') or ''}")
        press(page, opt, keyboard)
    page.wait_for_function("v => Number(document.body.dataset.version) > v", arg=version)
    return chosen


def press(page: Any, button: Any, keyboard: bool) -> None:
    """Click ``button``, or reach it with Tab (Shift+Tab) and press Enter, as a person without a
    mouse would; the focused button must show a visible focus ring."""
    if not keyboard:
        button.click()
        return
    handle = button.element_handle()
    for i in range(60):
        if page.evaluate("b => document.activeElement === b", handle):
            break
        page.keyboard.press("Tab" if i < 30 else "Shift+Tab")
    else:
        raise AssertionError("Tab never reached the button")
    ring = page.evaluate("() => { const s = getComputedStyle(document.activeElement); "
                         "return [s.outlineStyle, s.outlineWidth, s.boxShadow]; }")
    assert ring[0] != "none" and ring[1] != "0px" or ring[2] != "none", ring
    page.keyboard.press("Enter")


class HttpOpponents:
    """Seats played over plain HTTP by ``rng.choice(legal_actions)``, ``delay`` s per move."""

    def __init__(self, base: str, mid: str, players: list[Player], delay: float = 0.05,
                 seed: int = 7) -> None:
        self.base, self.mid, self.players, self.delay = base, mid, players, delay
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(p,), daemon=True)
                        for p in players]

    def __enter__(self) -> HttpOpponents:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(10)
        assert not self.errors, self.errors

    def _run(self, p: Player) -> None:
        api = Api(self.base)
        try:
            version = -1
            while not self.stop.is_set():
                r = api.request("GET", f"/v1/matches/{self.mid}/view?wait=5&after={version}",
                                token=p.token)
                v = api.ok(r)
                version = v["version"]
                if v["status"] == "finished":
                    return
                if v["legal_actions"]:
                    time.sleep(self.delay)
                    resp = api.post_action(p, self.mid, {**self.rng.choice(v["legal_actions"]),
                                                         "expected_version": version})
                    if resp.status_code not in (200, 409):
                        api.ok(resp)
        except BaseException as e:  # noqa: BLE001 - reported by __exit__
            self.errors.append(e)
        finally:
            api.close()

