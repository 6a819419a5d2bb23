"""The repository documents itself: docs/rules.md covers exactly the rules the tests name, its
actions are real actions, links between the docs resolve, and no committed file points at a path
outside the repository (a clone has nothing but the repository)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from service import engine

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
RULES = DOCS / "rules.md"

#: ``def test_r16_...`` anywhere under tests/ names rule R16 (R20a: ``test_r20a_...``).
RULE_TEST = re.compile(r"^\s*(?:async\s+)?def test_r(\d+[a-z]?)_", re.M)
ANCHOR = re.compile(r"""<a id="([^"]+)"></a>""")


def committed_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=REPO, capture_output=True, check=True).stdout
    return [REPO / p for p in out.decode().split("\0") if p and (REPO / p).is_file()]


def anchors(path: Path) -> set[str]:
    """Explicit ``<a id>`` anchors and the ids Markdown gives headings (GitHub style)."""
    text = path.read_text()
    ids = set(ANCHOR.findall(text))
    for title in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        ids.add(slug)
    return ids


def rules_named_by_tests() -> dict[str, list[str]]:
    named: dict[str, list[str]] = {}
    for path in sorted((REPO / "tests").rglob("*.py")):
        for rule in RULE_TEST.findall(path.read_text()):
            named.setdefault("R" + rule, []).append(str(path.relative_to(REPO)))
    return named


def test_every_rule_a_test_names_has_an_anchor_in_docs_rules_and_the_reverse() -> None:
    named = rules_named_by_tests()
    assert len(named) >= 33, sorted(named)  # R1-R32 and R20a at least
    documented = {a for a in anchors(RULES) if re.fullmatch(r"R\d+[a-z]?", a)}
    missing = sorted(set(named) - documented, key=lambda r: (int(re.sub(r"\D", "", r)), r))
    untested = sorted(documented - set(named), key=lambda r: (int(re.sub(r"\D", "", r)), r))
    assert not missing, f"rules named by tests but without an anchor in docs/rules.md: {missing}"
    assert not untested, f"rules in docs/rules.md that no test_rN_... names: {untested}"


def test_each_rule_anchor_is_used_once_and_leads_its_rule() -> None:
    text = RULES.read_text()
    ids = ANCHOR.findall(text)
    assert len(ids) == len(set(ids)), "an anchor is defined twice"
    for rule in (a for a in ids if re.fullmatch(r"R\d+[a-z]?", a)):
        after = text.split(f'<a id="{rule}"></a>', 1)[1].lstrip()[:80]
        assert re.match(rf"(- \*\*|### .*\(){rule}\b", after), (rule, after)


def test_every_card_section_shows_an_action_the_engine_accepts() -> None:
    text = RULES.read_text()
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S)]
    for block in blocks:
        action = engine.Action.from_dict(block)  # raises on anything malformed
        assert action.to_dict() == block, block  # and is written in its canonical form
    played = {b["card"] for b in blocks if b["type"] == "play"}
    assert played == set(engine.NAMES), f"cards without an action: {set(engine.NAMES) - played}"
    assert any(b["type"] == "chancellor_return" for b in blocks)
    # each card's own section (### Name (Rn)) shows its action
    for name in engine.NAMES:
        sections = re.split(r"^### ", text, flags=re.M)
        own = [s for s in sections if s.lower().startswith(name) or f"**{name.title()}" in s]
        assert any(f'"card": "{name}"' in s for s in own), name


def test_the_card_table_matches_the_engine() -> None:
    text = RULES.read_text()
    rows = {m.group(1): m.group(2) for m in
            re.finditer(r"^\| `(\w+)`\s*\|(.*)\|$", text.split("## Cards", 1)[1], re.M)}
    for name in engine.NAMES:
        cells = [c.strip() for c in rows[name].split("|")]
        classic, v2019, *copies = cells
        card = engine.Card.parse(name)
        for ruleset, shown in (("classic", classic), ("2019", v2019)):
            rs = engine.RULESETS[ruleset]
            assert shown == (str(rs.values[card]) if rs.copies[card] else "-"), (name, ruleset)
        assert [int(c) for c in copies] == [engine.RULESETS[r].copies[card]
                                            for r in ("classic", "2019", "2019-classic")], name


def md_files() -> list[Path]:
    return [p for p in committed_files() if p.suffix == ".md"]


@pytest.mark.parametrize("path", md_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_in_markdown_resolve(path: Path) -> None:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("/"):
            continue  # a URL, or a path on the running server
        file_part, _, fragment = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        assert dest.exists(), f"{path.relative_to(REPO)}: broken link {target}"
        assert REPO in dest.parents or dest == REPO, f"{path.relative_to(REPO)}: {target}"
        if fragment and dest.suffix == ".md":
            assert fragment in anchors(dest), f"{path.relative_to(REPO)}: no anchor {target}"


# Spelled in pieces so that this file does not name them itself.
OUTSIDE = [
    re.compile(r"\.\./" + "shared"),
    re.compile("/" + "work/"),
    re.compile(r"shared/" + r"(?:RULES|DESIGN)\.md"),
    re.compile(r"(?<![\w/.-])" + "RULES" + r"\.md"),
    re.compile(r"(?<![\w/.-])" + "DESIGN" + r"\.md"),
    re.compile("/" + r"home/\w+"),
]


def test_no_committed_file_names_a_path_outside_the_repository() -> None:
    hits = []
    for path in committed_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in OUTSIDE):
                hits.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not hits, "files naming a path outside the repository:\n" + "\n".join(hits)


def test_the_outside_path_check_would_catch_each_kind() -> None:
    samples = ["see ../" "shared/x", "/" "work/shared", "shared/RUL" "ES.md", "cite RUL" "ES.md R5",
               "(DESI" "GN.md)", "/" "home/alice/x"]
    for s in samples:
        assert any(p.search(s) for p in OUTSIDE), s
    assert not any(p.search("docs/rules.md#R5 and docs/design.md") for p in OUTSIDE)
