"""The project's Markdown docs as web pages: ``/rules`` (docs/rules.md), ``/protocol``.

Rendered with markdown-it-py (CommonMark plus tables; raw HTML on, for the ``<a id="R16">``
anchors the rules keep for every rule id), once per file version: a page costs a dict lookup
after its first request. Links between the docs are rewritten to the pages that serve them
(``rules.md#R16`` -> ``/rules#R16``); a relative link to a file the server does not serve keeps
its text and loses the link, so nothing on these pages leads to a 404.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

#: docs/<file> -> the path serving it
PAGES = {"rules.md": "/rules", "protocol.md": "/protocol"}


def docs_dir() -> Path:
    """docs/ of the repository this package runs from (a checkout, or the image's /app)."""
    for base in (*Path(__file__).resolve().parents, Path.cwd()):
        if (base / "docs" / "rules.md").is_file():
            return base / "docs"
    raise FileNotFoundError("docs/rules.md not found next to the service package nor in the "
                            "working directory")


@dataclass(frozen=True)
class Page:
    title: str
    html: str


_cache: dict[tuple[str, float], Page] = {}


def _href(href: str) -> str | None:
    """Where a link of a doc page should point on the web; None: drop the link."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", href) or href.startswith(("#", "/")):
        return href
    file, _, fragment = href.partition("#")
    page = PAGES.get(file.removeprefix("./"))
    if page is None:
        return None
    return page + (f"#{fragment}" if fragment else "")


def _rewrite_links(tokens: list[Token]) -> None:
    for tok in tokens:
        if tok.children:
            kids: list[Token] = []
            dropping = 0
            for child in tok.children:
                if child.type == "link_open":
                    href = _href(str(child.attrGet("href") or ""))
                    if href is None:
                        dropping += 1
                        continue
                    child.attrSet("href", href)
                elif child.type == "link_close" and dropping:
                    dropping -= 1
                    continue
                kids.append(child)
            tok.children = kids


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def render(name: str) -> Page:
    """The page for docs/``name`` (``rules.md``), rendered again only when the file changes."""
    path = docs_dir() / name
    key = (name, path.stat().st_mtime)
    page = _cache.get(key)
    if page is None:
        text = path.read_text(encoding="utf-8")
        md = _markdown()
        tokens = md.parse(text)
        _rewrite_links(tokens)
        html = md.renderer.render(tokens, md.options, {})
        m = re.search(r"^# (.+)$", text, re.M)
        page = _cache[key] = Page(m.group(1) if m else name, html)
    return page
