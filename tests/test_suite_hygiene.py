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


# wait_for_function( followed by a string literal that is not a function ("() => ...",
# "n => ...", "([a, b]) => ...")
_EXPRESSION_WAIT = re.compile(r'wait_for_function\(\s*[fr]?("""|"(?!""))(?!\s*(\(|\w+\s*=>|async\b))')


def test_browser_tests_run_under_the_pages_content_security_policy() -> None:
    """The pages forbid ``eval``: Playwright evaluates a ``wait_for_function`` expression string
    again on every poll (refused after the first), a function string once. No context bypasses
    the policy (tests/support/web.py), so every wait is a function or a locator assertion."""
    texts = {str(p.relative_to(TESTS)): p.read_text() for p in TESTS.rglob("*.py")
             if p.name != Path(__file__).name}
    assert sorted(n for n, t in texts.items() if _EXPRESSION_WAIT.search(t)) == []
    assert sorted(n for n, t in texts.items() if "bypass_csp" in t) == []


def test_the_csp_check_sees_an_expression_wait() -> None:
    assert _EXPRESSION_WAIT.search('page.wait_for_function("document.body.dataset.x === \'1\'")')
    assert _EXPRESSION_WAIT.search("page.wait_for_function(\n    f\"Number(x) >= {n}\")")
    for ok in ('page.wait_for_function("() => x")', 'p.wait_for_function("n => n > 1", arg=1)',
               'p.wait_for_function("([v, t]) => v", arg=[1, 2])',
               'p.wait_for_function("""() => { return 1; }""")', "p.wait_for_function(cond)"):
        assert not _EXPRESSION_WAIT.search(ok), ok
