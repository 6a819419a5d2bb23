"""The Play page's "New token" button: the page keeps and shows the new token, the old one is
refused by the API at once. Also: the page works under its Content-Security-Policy (a script
the policy blocked would leave the sign-up form dead)."""

from __future__ import annotations

from typing import Any

import requests

from tests.support.server import ApiServer
from tests.web.test_play_challenge import sign_up


def test_person_rotates_the_token_from_the_play_page(page: Any, api_server: ApiServer) -> None:
    base = api_server.url
    me = sign_up(page, base, "rotating_ada", shots=False)
    page.once("dialog", lambda d: d.accept())
    page.click("#token-rotate")
    page.wait_for_selector("#token-once:not([hidden])")
    shown = page.inner_text("#token-value")
    stored = page.evaluate("JSON.parse(localStorage.getItem('llarena.player'))")
    assert shown and shown != me["token"] and stored["token"] == shown
    old = requests.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {me['token']}"},
                       timeout=10)
    assert old.status_code == 401
    new = requests.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {shown}"}, timeout=10)
    assert new.status_code == 200 and new.json()["id"] == me["id"]
    csp = requests.get(f"{base}/play", timeout=10).headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp
