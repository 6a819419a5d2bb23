"""Browser tests: Debian's headless Chromium driven by Playwright.

``make test`` installs the ``chromium`` package when /usr/bin/chromium is missing (Makefile,
target ``browser``); Playwright is a dev extra and is pointed at that binary, never at browsers of
its own. Where neither can be had, every test here is skipped with a message saying why.
Screenshots go to tests/artifacts/ (git-ignored)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.support.redis_proc import RedisProcess
from tests.support.web import ARGS, CHROMIUM, checked_page


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"no Chromium at {CHROMIUM}: `make test` installs Debian's chromium with "
                    "apt-get when it can; it could not here, so the browser tests are skipped")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (it is a dev extra: make install)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page under the pages' own CSP; JavaScript errors and anything the CSP refused on
    it fail the test (tests/support/web.py)."""
    with checked_page(browser) as pg:
        yield pg


@pytest.fixture
def store(redis_server: RedisProcess) -> Iterator[redis.Redis]:
    """A client of the session's Redis, to read what the server stored."""
    r = redis_server.client()
    yield r
    r.close()
