"""Markers of the ladder tests."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: plays many real matches against the whole stack (about a minute); "
                   "part of `make test`, skip with -m 'not slow'")
