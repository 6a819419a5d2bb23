"""``GET /v1`` is an index of the API, and ``/rules`` and ``/protocol`` are the repository's
docs/rules.md and docs/protocol.md as web pages, every rule at its anchor, every link answering."""

from __future__ import annotations

import re
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlparse

import requests

from tests.support.server import ApiServer

REPO = Path(__file__).resolve().parent.parent.parent


def test_v1_is_an_index_of_every_collection_and_document(api_server: ApiServer) -> None:
    r = requests.get(api_server.url + "/v1", timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    index = r.json()
    base = api_server.url
    assert index["collections"] == {k: base + v for k, v in {
        "players": "/v1/players", "matches": "/v1/matches", "me": "/v1/me",
        "ladders": "/v1/ladders"}.items()}
    assert set(index["documents"]) == {"openapi", "docs", "rules", "protocol", "web"}
    for name, url in index["documents"].items():
        assert requests.get(url, timeout=10).status_code == 200, name
    # the collections answer (GET where there is one; /v1/me wants a token; players only POST)
    assert requests.get(index["collections"]["matches"], timeout=10).status_code == 200
    assert requests.get(index["collections"]["ladders"], timeout=10).status_code == 200
    assert requests.get(index["collections"]["me"], timeout=10).status_code == 401
    # every /v1 path of the OpenAPI document is listed, with the same methods
    spec = requests.get(base + "/openapi.json", timeout=10).json()
    listed = {e["path"]: set(e["methods"]) for e in index["endpoints"]}
    documented = {p: {m.upper() for m in ops if m != "parameters"} for p, ops in spec["paths"].items()
                  if p.startswith("/v1/")}
    assert listed == documented
    for e in index["endpoints"]:
        assert all(summary for summary in e["methods"].values()), e


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        d = dict(attrs)
        if d.get("id"):
            self.ids.add(str(d["id"]))
        if tag == "a" and d.get("href"):
            self.hrefs.append(str(d["href"]))


def page(url: str) -> Links:
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html"), url
    links = Links()
    links.feed(r.text)
    return links


def test_rules_page_has_every_rule_anchor_and_its_links_answer(api_server: ApiServer) -> None:
    base = api_server.url
    rules = page(base + "/rules")
    ids = set(re.findall(r'<a id="([^"]+)"></a>', (REPO / "docs" / "rules.md").read_text()))
    assert {f"R{n}" for n in range(1, 33)} | {"R20a"} <= ids
    assert ids <= rules.ids, ids - rules.ids
    pages = {"/rules": rules, "/protocol": page(base + "/protocol")}
    for path, links in pages.items():
        for href in links.hrefs:
            url = urljoin(base + path, href)
            parsed = urlparse(url)
            assert parsed.netloc == urlparse(base).netloc, (path, href)  # nothing off-site
            target = pages.get(parsed.path)
            if target is None:
                assert requests.get(url, timeout=10).status_code == 200, (path, href)
            if parsed.fragment and target is not None:
                assert parsed.fragment in target.ids, (path, href)
    # a doc-to-doc link is rewritten to the page serving it
    assert "/protocol#deadlines" in rules.hrefs
    assert not [h for h in pages["/protocol"].hrefs if h.endswith(".md") or ".md#" in h]


def test_event_rule_links_point_at_rules_that_exist() -> None:
    """The match and play pages link each event to the rule it applied (events.js): each id
    they can produce is an anchor of docs/rules.md."""
    js = (REPO / "service" / "http" / "web" / "static" / "events.js").read_text()
    used = set(re.findall(r'"(R\d+a?)"', js))
    assert len(used) >= 20, used
    ids = set(re.findall(r'<a id="([^"]+)"></a>', (REPO / "docs" / "rules.md").read_text()))
    assert used <= ids, used - ids


def test_a_refusal_that_applies_a_rule_links_to_it(api_server: ApiServer) -> None:
    """The Countess with the King must be played (R11): trying the King says so and links to
    /rules#R11, which is on the rules page."""
    base = api_server.url
    tokens = [requests.post(base + "/v1/players", json={"name": f"refused-{i}-{time.time_ns()}"},
                            timeout=10).json()["token"] for i in range(2)]
    auth = [{"Authorization": f"Bearer {t}"} for t in tokens]
    # classic, 2 players, three-up: aside, 3 face up, deal seat 0 and 1, then seat 0 draws
    deck = ["guard", "guard", "guard", "guard", "countess", "priest", "king", "guard", "priest",
            "baron", "baron", "handmaid", "handmaid", "prince", "prince", "princess"]
    mid = requests.post(base + "/v1/matches", headers=auth[0], timeout=10, json={
        "ruleset": "classic", "seats": 2, "deck": deck, "first_seat": 0}).json()["match_id"]
    for h in auth:
        assert requests.post(f"{base}/v1/matches/{mid}/join", headers=h, timeout=10).ok
    view = requests.get(f"{base}/v1/matches/{mid}/view", headers=auth[0], timeout=10).json()
    assert sorted(view["hand"]) == ["countess", "king"], view["hand"]
    r = requests.post(f"{base}/v1/matches/{mid}/actions", headers=auth[0], timeout=10,
                      json={"type": "play", "card": "king", "target": 1})
    body = r.json()
    assert r.status_code == 422 and body["code"] == "illegal_action", body
    assert "(R11)" in body["message"] and body["rule"] == "/rules#R11"
    assert 'id="R11"' in requests.get(base + body["rule"].split("#")[0], timeout=10).text
    # an error that cites no rule has no link
    r = requests.post(f"{base}/v1/matches/{mid}/actions", headers=auth[1], timeout=10,
                      json={"type": "play", "card": "guard", "target": 0, "guess": "king"})
    assert r.status_code == 409 and "rule" not in r.json()
