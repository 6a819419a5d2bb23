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


def new_context(browser: Any) -> Any:
    """A browser context as every browser test uses: a laptop-sized viewport, and reduced motion
    (the page honours ``prefers-reduced-motion``), so that a card still sliding in or a hand card
    still growing on hover is never a click target Playwright waits on as "not stable"; on a
    loaded machine such a wait ran out the 15-s timeout."""
    return browser.new_context(viewport={"width": 1280, "height": 900}, reduced_motion="reduce")
