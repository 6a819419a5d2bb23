"""``llsdk.Client`` for tests: the same client, with a session that never reads the environment.

requests looks up proxies in ``os.environ`` on every request (``trust_env``), iterating the
mapping; pytest rewrites ``PYTEST_CURRENT_TEST`` in the main thread at each test's phases, so a bot
thread that outlives a test (a module's league, a stack's bots) can hit a key that vanished
mid-iteration: ``KeyError('PYTEST_CURRENT_TEST')`` (pytest-dev/pytest#10876). Tests talk only to
servers on 127.0.0.1, so they need nothing from the environment.
"""

from __future__ import annotations

from typing import Any

import llsdk


class Client(llsdk.Client):
    """``llsdk.Client`` whose session ignores proxy, netrc and CA settings from the environment."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session.trust_env = False
