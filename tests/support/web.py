"""Helpers of the browser tests (tests/web): where the browser is, how it is launched,
screenshots under tests/artifacts/ (git-ignored)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True, animations="disabled")  # no half-faded cards
    return path


def new_context(browser: Any, *, enforce_csp: bool = False) -> Any:
    """A browser context as every browser test uses: a laptop-sized viewport, and reduced motion
    (the page honours ``prefers-reduced-motion``), so that a card still sliding in or a hand card
    still growing on hover is never a click target Playwright waits on as "not stable"; on a
    loaded machine such a wait ran out the 15-s timeout.

    The pages' Content-Security-Policy forbids ``eval``, which Playwright's own string
    predicates (``wait_for_function("...")``) use inside the page: contexts bypass the policy
    unless ``enforce_csp`` (tests/web/test_token_rotation.py plays a page under it, and
    tests/routes/test_security_headers.py checks the headers)."""
    return browser.new_context(viewport={"width": 1280, "height": 900}, reduced_motion="reduce",
                               bypass_csp=not enforce_csp)
