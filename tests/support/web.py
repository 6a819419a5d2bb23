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
