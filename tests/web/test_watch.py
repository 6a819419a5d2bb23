"""Watching at human pace: replay autoplay and step links, the home page refreshing itself.

- A replay opened at ``#seq=S`` shows the step holding event S (steps are named by the seq of
  their first event, the API's numbering); stepping moves the address along, so the link always
  names the step shown; a hash typed later jumps there.
- Autoplay walks the steps forward on its own, one per chosen interval, and stops at the end;
  Space pauses it.
- The home page lists a match started after it was loaded, with no reload.
"""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from tests.support.apiclient import NO_TIMEOUTS, Api, play_randomly
from tests.support.server import ApiServer
from tests.support.web import screenshot, wait_data


@pytest.fixture
def finished(api: Api) -> str:
    mid, players, joins = api.new_match(2, prefix="w", ruleset="classic", seed="watch-1",
                                        tokens_to_win=2, **NO_TIMEOUTS)
    play_randomly(api, mid, players, random.Random(1), joins[-1])
    return mid


def _step(page: Any) -> int:
    return int(page.evaluate("document.body.dataset.step"))


def _seq(page: Any) -> int:
    return int(page.evaluate("document.body.dataset.seq"))


def test_a_link_opens_the_replay_at_its_event_and_follows_the_steps(
        page: Any, api: Api, api_server: ApiServer, finished: str) -> None:
    """One numbering: a step is named by the seq of its first event (the seq of the API's
    events and of the log's lines); #seq=S opens the step that holds event S."""
    events = api.events(finished)["events"]
    play = next(e for e in events if e["type"] == "play" and e["seq"] > 10)
    navigations: list[str] = []
    page.goto(f"{api_server.url}/matches/{finished}#seq={play['seq']}")
    page.wait_for_selector("body[data-mode='replay']")
    page.on("framenavigated", lambda f: navigations.append(f.url))
    at = _step(page)
    assert _seq(page) == play["seq"]  # a play opens its own step
    assert f"event #{play['seq']} / #{events[-1]['seq']}" == page.inner_text("#step-label")
    assert page.get_attribute("#step-link", "href") == f"#seq={play['seq']}"
    current = page.eval_on_selector_all("#log li.current", "ls => ls.map(l => Number(l.dataset.seq))")
    assert current[0] == play["seq"]
    assert page.inner_text(f"#log li[data-seq='{play['seq']}'] .seq") == f"#{play['seq']}"
    page.click("#forward")
    wait_data(page, "step", str(at + 1))
    assert page.evaluate("location.hash") == f"#seq={_seq(page)}"
    assert _seq(page) > play["seq"]
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    wait_data(page, "step", str(at - 1))
    assert page.evaluate("location.hash") == f"#seq={_seq(page)}"
    # an event inside a step (not its first) opens that step
    inside = _seq(page) + 1 if _seq(page) + 1 < play["seq"] else _seq(page)
    page.evaluate(f"location.hash = '#seq={inside}'")
    wait_data(page, "step", str(at - 1))
    page.evaluate("location.hash = '#seq=0'")
    wait_data(page, "step", "0")
    # a link of the older form (#v=N, the N-th step) still opens its step
    page.evaluate("location.hash = '#v=3'")
    wait_data(page, "step", "2")
    assert page.evaluate("window.performance.getEntriesByType('navigation').length") == 1
    assert all("#seq=" in u or "#v=" in u for u in navigations), navigations  # never a reload


def test_autoplay_walks_the_replay_at_the_chosen_speed(
        page: Any, api_server: ApiServer, finished: str) -> None:
    page.goto(f"{api_server.url}/matches/{finished}")
    page.wait_for_selector("body[data-mode='replay']")
    n = int(page.evaluate("document.body.dataset.steps"))
    assert _step(page) == 0 and n > 8
    page.select_option("#speed", "250")
    page.click("#play")
    assert page.get_attribute("#play", "aria-pressed") == "true"
    page.wait_for_function("() => Number(document.body.dataset.step) >= 4", timeout=10000)
    screenshot(page, "watch-autoplay")
    # Space pauses (focus off the buttons, as a viewer would have it)
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press(" ")
    wait_data(page, "playing", "0")
    held = _step(page)
    time.sleep(0.8)
    assert _step(page) == held, "autoplay went on after the pause"
    # slow: one step in 3 s is not 3 steps in 1.5 s
    page.select_option("#speed", "3000")
    page.keyboard.press(" ")
    wait_data(page, "playing", "1")
    time.sleep(1.5)
    assert _step(page) <= held + 1
    # fast to the end, where it stops by itself
    page.select_option("#speed", "250")
    wait_data(page, "step", str(n - 1), timeout=n * 1000)
    wait_data(page, "playing", "0")
    assert page.is_disabled("#forward")


def test_autoplay_from_the_address(page: Any, api_server: ApiServer, finished: str) -> None:
    page.goto(f"{api_server.url}/matches/{finished}?autoplay=1&speed=200")
    page.wait_for_selector("body[data-mode='replay']")
    page.wait_for_function("() => Number(document.body.dataset.step) >= 3", timeout=10000)
    assert page.input_value("#speed") == "200"


def test_home_page_refreshes_itself(page: Any, api: Api, api_server: ApiServer) -> None:
    page.goto(f"{api_server.url}/?refresh=1")
    page.wait_for_function("() => Number(document.body.dataset.refreshed) >= 1")
    page.evaluate("window.__loadedOnce = 'yes'")
    mid, _, _ = api.new_match(2, prefix="h", ruleset="classic", **NO_TIMEOUTS)
    page.mouse.move(0, 0)
    page.wait_for_selector(f"#active a[href='/matches/{mid}']", timeout=10000)
    assert page.evaluate("window.__loadedOnce") == "yes"
