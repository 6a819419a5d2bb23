"""The front door: ``/`` says what this is and where to go; the HTML paths answer a browser with
pages (a 404 page with links for a path that names none) and an API client with JSON (content
negotiation on Accept); ``/v1`` always answers JSON; ``make run``'s banner lists ``/play``."""

from __future__ import annotations

import re

import requests

from service.ops.run import banner
from tests.support.apiclient import Api, error_of

#: what Chromium sends when it navigates to a page
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


def _get(api: Api, path: str, accept: str | None) -> requests.Response:
    headers = {"Accept": accept} if accept else {}
    return api.s.get(api.base + path, headers=headers, allow_redirects=False, timeout=30)


def test_the_front_page_says_what_this_is_and_links_everywhere(api: Api) -> None:
    r = _get(api, "/", BROWSER)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    text = r.text
    assert "Love Letter" in text and "bot" in text
    hrefs = set(re.findall(r'href="([^"]+)"', text))
    assert {"/play", "/ladders", "/rules", "/protocol", "/docs", "/v1"} <= hrefs
    for href in ("/play", "/ladders", "/rules", "/protocol", "/docs"):
        assert _get(api, href, BROWSER).status_code == 200, href


def test_ladders_is_a_page_for_a_browser_and_json_for_an_api_client(api: Api) -> None:
    page = _get(api, "/ladders", BROWSER)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert 'id="ladders"' in page.text
    assert _get(api, "/ladders", "*/*").headers["Content-Type"].startswith("text/html")  # curl
    moved = _get(api, "/ladders", "application/json")
    assert moved.status_code == 307 and moved.headers["Location"].endswith("/v1/ladders")
    followed = api.s.get(api.base + "/ladders", headers={"Accept": "application/json"},
                               timeout=30)
    assert followed.status_code == 200 and "ladders" in followed.json()
    one = _get(api, "/ladders/duel", "application/json")
    assert one.status_code == 307 and one.headers["Location"].endswith("/v1/ladders/duel")


def test_a_missing_page_is_a_page_with_links_for_a_browser(api: Api) -> None:
    r = _get(api, "/ladder", BROWSER)
    assert r.status_code == 404 and r.headers["Content-Type"].startswith("text/html")
    assert "There is no such page" in r.text and "/ladder" in r.text
    assert {"/", "/play", "/ladders", "/rules", "/docs"} <= set(re.findall(r'href="([^"]+)"', r.text))
    # a page id that can't be one: the same page
    bad = _get(api, "/matches/" + "x" * 80, BROWSER)
    assert bad.status_code == 404 and bad.headers["Content-Type"].startswith("text/html")


def test_api_clients_and_v1_keep_json_errors(api: Api) -> None:
    for path, accept in (("/ladder", "application/json"), ("/ladder", "*/*"), ("/ladder", None),
                         ("/v1/nope", BROWSER), ("/v1/ladders/nope", BROWSER),
                         ("/v1/matches/m_nope", "text/html")):
        r = _get(api, path, accept)
        assert r.status_code == 404, (path, accept)
        assert error_of(r)["code"] in ("not_found", "match_not_found"), (path, accept)
    wrong = api.s.post(api.base + "/ladders", headers={"Accept": "application/json"},
                             timeout=30)
    assert wrong.status_code == 405 and error_of(wrong)["code"] == "method_not_allowed"


def test_the_run_banner_lists_the_play_page() -> None:
    lines = banner("http://127.0.0.1:8000", "redis://x", "embedded", "web", "run.log")
    assert any(re.fullmatch(r"  play\s+http://127\.0\.0\.1:8000/play\b.*", ln) for ln in lines)
    assert any(ln.split()[:2] == ["ladders", "http://127.0.0.1:8000/ladders"] for ln in lines)
