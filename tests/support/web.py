"""Helpers of the browser tests (tests/web): where the browser is, how it is launched,
screenshots under tests/artifacts/ (git-ignored)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


def expect(target: Any) -> Any:
    """Playwright's ``expect`` (imported when a browser test runs: Playwright is a dev extra,
    and the browser tests skip without it)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


def wait_data(page: Any, name: str, value: str, timeout: float = 15000) -> None:
    """Wait until the page's ``<body data-NAME>`` is ``value`` (e.g. ``wait_data(page, "step",
    "3")``): a locator assertion, which evaluates nothing in the page."""
    expect(page.locator("body")).to_have_attribute(f"data-{name}", value, timeout=timeout)


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True, animations="disabled")  # no half-faded cards
    return path


def new_context(browser: Any, *, phone: bool = False) -> Any:
    """A browser context as every browser test uses: a laptop-sized viewport (``phone``: 390 x
    844, touch, mobile), and reduced motion (the page honours ``prefers-reduced-motion``), so
    that a card still sliding in or a hand card still growing on hover is never a click target
    Playwright waits on as "not stable"; on a loaded machine such a wait ran out the 15-s timeout.

    Pages run under their own Content-Security-Policy (no ``eval``, no inline script): never
    bypassed. ``page.evaluate("...")`` works under it (the DevTools protocol evaluates the string
    at once, which the policy allows); ``wait_for_function`` only with a function (``"() => ..."``
    or ``"n => ..."``): Playwright evaluates that string once and then calls the function on
    every poll, whereas a bare expression is evaluated again on each poll, an ``eval`` the policy
    refuses. Locator assertions (:func:`wait_data`, ``expect(locator)``) evaluate nothing."""
    size = {"width": 390, "height": 844} if phone else {"width": 1280, "height": 900}
    return browser.new_context(viewport=size, reduced_motion="reduce", has_touch=phone,
                               is_mobile=phone)


@contextmanager
def checked_page(browser: Any, *, phone: bool = False) -> Iterator[Any]:
    """A fresh page in its own :func:`new_context`, with a 15-s default timeout; when the block
    ends, a JavaScript error on the page or anything its Content-Security-Policy refused (a
    script, a style, an ``eval``: Chromium reports each on the console) fails the test."""
    ctx = new_context(browser, phone=phone)
    try:
        pg = ctx.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error"
              and "Content Security Policy" in m.text else None)
        pg.set_default_timeout(15000)
        yield pg
        assert not errors, f"JavaScript errors or refused by the CSP on the page: {errors}"
    finally:
        ctx.close()
