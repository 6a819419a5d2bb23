"""Reference data for bot authors: card names, values, copies and effects per ruleset
(docs/rules.md#R1).

The rules live only in the service's engine. These tables are read from ``rulesets.json``, which
``make openapi`` writes from the engine (``python -m service.engine.catalog``): the same document
``GET /v1/rulesets`` serves, so they can't drift apart (a test checks the file is current).

>>> value("king", "classic"), value("king", "2019")
(6, 7)
>>> deck_counts("classic")["guard"], sum(deck_counts("2019").values())
(5, 21)
>>> EFFECTS["priest"]
"Look at the target's hand."
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

#: the document ``GET /v1/rulesets`` serves, as the SDK was built with it
CATALOG: dict[str, Any] = json.loads(files(__package__).joinpath("rulesets.json").read_text())

#: action type -> its fields besides ``type``: (name, kind, required), kind ``card``, ``seat`` or
#: ``cards`` (the engine's one definition of an action; ``models.Action`` follows it)
ACTION_FIELDS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    kind: tuple((s["name"], s["kind"], s["required"]) for s in shape)
    for kind, shape in CATALOG["actions"].items()}

#: ruleset name -> its description (cards, player range, tokens to win, tie and spy rules)
RULESETS: dict[str, dict[str, Any]] = {r["name"]: r for r in CATALOG["rulesets"]}

#: every card name, in card order (the engine's ``Card`` order)
CARDS: tuple[str, ...] = tuple(c["name"] for c in CATALOG["cards"])

#: card -> its effect in one line
EFFECTS: dict[str, str] = {c["name"]: c["effect"] for c in CATALOG["cards"]}

#: ruleset -> card -> value (cards absent from a ruleset are absent from its table)
VALUES: dict[str, dict[str, int]] = {
    name: {c["name"]: c["value"] for c in r["cards"]} for name, r in RULESETS.items()}

#: ruleset -> card -> copies in the deck
COPIES: dict[str, dict[str, int]] = {
    name: {c["name"]: c["copies"] for c in r["cards"]} for name, r in RULESETS.items()}

#: ruleset -> players -> tokens to win (R1-R3)
TOKENS_TO_WIN: dict[str, dict[int, int]] = {
    name: {int(n): t for n, t in r["tokens_to_win"].items()} for name, r in RULESETS.items()}


def value(card: str, ruleset: str) -> int:
    """The value of ``card`` under ``ruleset``."""
    return VALUES[ruleset][card]


def deck_counts(ruleset: str) -> dict[str, int]:
    """A fresh ``{card: copies}`` of the whole deck of ``ruleset``."""
    return dict(COPIES[ruleset])


__all__ = ["CARDS", "CATALOG", "COPIES", "EFFECTS", "RULESETS", "TOKENS_TO_WIN", "VALUES",
           "deck_counts", "value"]
