"""Rules the test suite keeps so that it stays green on a busy CI machine."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# `from llsdk import ..., Client, ...` (one line, or a parenthesised list)
_SDK_CLIENT = re.compile(r"from llsdk import (\([^)]*|[^\n]*)\bClient\b")


def test_test_code_builds_sdk_clients_that_ignore_the_environment() -> None:
    """Bot threads outlive tests; requests' per-request proxy lookup iterates ``os.environ``
    while pytest rewrites ``PYTEST_CURRENT_TEST`` (pytest-dev/pytest#10876), which failed a
    league test with ``KeyError``. Every test builds its SDK clients from
    ``tests.support.sdkclient.Client`` (``trust_env=False``) instead of ``llsdk.Client``."""
    offenders = sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py")
                       if p.name not in ("sdkclient.py", Path(__file__).name) and _SDK_CLIENT.search(p.read_text()))
    assert offenders == []


def test_the_hygiene_check_sees_a_direct_import() -> None:
    assert _SDK_CLIENT.search("from llsdk import Bot, Client, View\n")
    assert _SDK_CLIENT.search("from llsdk import (\n    Bot,\n    Client,\n)\n")
    assert not _SDK_CLIENT.search("from llsdk import Bot, ClientError\n")
