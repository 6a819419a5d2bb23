"""The SDK's decoder (``llsdk._wire``) against the API's published schema (openapi.yaml): every
model field that the schema describes is read from the property of the same name (or the one
its metadata names) with a type the schema allows; every required field is a property the API
sends; and a dataclass subclass reads its own fields, defaults included (issue 25: ``D(x=1,
y=0)`` once decoded as its base)."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from llsdk import models
from llsdk._wire import REQUIRED, WireModel, wire

REPO = Path(__file__).resolve().parents[2]
COMPONENTS: dict[str, Any] = yaml.safe_load(
    (REPO / "openapi.yaml").read_text())["components"]["schemas"]

# SDK model -> the OpenAPI component it reads
PAIRS = {
    models.Turn: "Turn", models.Seat: "Seat", models.View: "View", models.Result: "Result",
    models.Match: "MatchSummary", models.MatchPage: "MatchList", models.EventLog: "Events",
    models.Notices: "Notices", models.Player: "Registered", models.OnlinePlayer: "OnlineRow",
    models.ChallengePlayer: "Opponent", models.Challenge: "Challenge",
    models.Challenges: "ChallengeList", models.LeaderboardRow: "Row",
    models.Ladder: "Leaderboard", models.LadderEntry: "Entry",
}
# Fields a model has that its component does not describe, and why (the schema's objects are
# open: the API sends more than it documents, and the SDK computes some fields itself).
UNDOCUMENTED = {
    (models.View, "tokens_to_win"), (models.View, "players_count"),
    (models.View, "set_aside_count"), (models.View, "two_player_setup"),
    (models.View, "rated"), (models.View, "ladder"),  # in options, also sent flat
    (models.Match, "rated"), (models.Match, "ladder"), (models.Match, "created_at"),
    (models.Player, "recent_matches"), (models.Player, "ratings"),  # GET /v1/me's (Profile)
    (models.Player, "accepts_challenges"),  # GET /v1/me's setting (PATCH /v1/me)
    (models.Player, "bench"), (models.Player, "aborts_24h"),  # GET /v1/players/{id}'s
}
JSON_TYPES = {int: {"integer"}, float: {"number", "integer"}, str: {"string"},
              bool: {"boolean"}, list: {"array"}, tuple: {"array"}, dict: {"object"}}


def resolve(prop: dict[str, Any]) -> dict[str, Any]:
    """A property with its ``$ref`` (or single ``allOf``) followed."""
    if "allOf" in prop and len(prop["allOf"]) == 1:
        prop = {**prop, **prop["allOf"][0]}
    ref = prop.get("$ref")
    return COMPONENTS[ref.rsplit("/", 1)[1]] if ref else prop


def allowed(hint: Any, prop: dict[str, Any]) -> bool:
    """Whether a JSON value the schema allows fits the field's annotation."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] \
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union \
        else [hint]
    target = resolve(prop)
    kinds = target.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds} if kinds else {"object"}
    for arg in args:
        origin = typing.get_origin(arg) or arg
        if origin is Any:
            return True
        if isinstance(arg, type) and dataclasses.is_dataclass(arg):
            if "object" in kinds:
                return True
            continue
        if kinds & JSON_TYPES.get(origin, set()):
            return True
    return False


@pytest.mark.parametrize("model", list(PAIRS), ids=lambda m: m.__name__)
def test_every_model_field_reads_a_property_the_schema_describes_with_its_type(
        model: type) -> None:
    component = COMPONENTS[PAIRS[model]]
    props: dict[str, Any] = component.get("properties", {})
    hints = typing.get_type_hints(model)
    for f in dataclasses.fields(model):
        if f.name == "raw":
            continue
        key = f.metadata.get("key", f.name)
        if (model, f.name) in UNDOCUMENTED:
            assert key not in props, f"{model.__name__}.{f.name} is documented now"
            continue
        assert key in props, f"{model.__name__}.{f.name}: no property {key!r} in {PAIRS[model]}"
        assert allowed(hints[f.name], props[key]), (model.__name__, f.name, hints[f.name],
                                                    props[key])
        if f.metadata.get("required"):  # what the SDK cannot do without, the API always sends
            assert "nullable" not in props[key] or not props[key]["nullable"], (model, f.name)


def test_a_model_decodes_a_document_built_from_its_component() -> None:
    """One value per documented scalar property (of the type the schema says), plus the
    model's required keys: each value lands in its field."""
    samples = {"integer": 3, "number": 1.5, "string": "s", "boolean": True}
    for model, name in PAIRS.items():
        doc: dict[str, Any] = {}
        for k, p in COMPONENTS[name].get("properties", {}).items():
            kind = resolve(p).get("type")
            if isinstance(kind, str) and kind in samples:
                doc[k] = samples[kind]
        for f in dataclasses.fields(model):
            if f.metadata.get("required"):
                doc.setdefault(f.metadata.get("key", f.name), "s")
        got = model.from_dict(doc)
        if "from_dict" in model.__dict__:  # a model with a twist of its own: read, not checked
            continue
        for f in dataclasses.fields(model):
            key = f.metadata.get("key", f.name)
            if key in doc and f.name != "raw":
                assert getattr(got, f.name) == doc[key], (model.__name__, f.name)


@dataclass(slots=True)
class Base(WireModel):
    x: int


@dataclass(slots=True)
class Derived(Base):
    y: int = 0


@dataclass(slots=True)
class Named(WireModel):
    id: str = field(metadata=REQUIRED)
    owner: str | None = field(default=None, metadata=wire(key="owner_id"))
    tags: list[str] = field(default_factory=list)
    state: str = field(default="open", metadata=wire(missing="open"))
    child: Base | None = None


def test_a_subclass_with_a_defaulted_field_reads_its_own_fields() -> None:
    assert Base.from_dict({"x": 1, "y": 5}) == Base(x=1)  # the base first: it has a plan
    assert Derived.from_dict({"x": 1, "y": 5}) == Derived(x=1, y=5)
    assert Derived.from_dict({"x": 1}) == Derived(x=1, y=0)
    assert type(Derived.from_dict({"x": 1})) is Derived
    assert Base.from_dict({"x": 2}) == Base(x=2)  # and the base still reads as itself


def test_the_reading_rules() -> None:
    got = Named.from_dict({"id": "a", "owner_id": "u", "tags": None, "state": None,
                           "child": {"x": 4}, "extra": 1})
    assert got == Named(id="a", owner="u", tags=[], state="open", child=Base(x=4))
    assert Named.from_dict({"id": "b", "child": "not an object"}).child is None
    a, b = Named.from_dict({"id": "c"}), Named.from_dict({"id": "c"})
    assert a.tags == [] and a.tags is not b.tags  # a new list each time
    with pytest.raises(KeyError):
        Named.from_dict({"owner_id": "u"})


def test_the_sdk_action_is_the_published_action() -> None:
    """The SDK's Action has exactly the fields the engine's definition publishes (rulesets.json,
    the same document GET /v1/rulesets serves) and the OpenAPI Action component takes; its
    wire form follows the published fields of its type."""
    from llsdk.cards import ACTION_FIELDS

    from service.engine.actions import SHAPES

    published = {name for fields_ in ACTION_FIELDS.values() for name, _, _ in fields_}
    sdk_fields = {f.name for f in dataclasses.fields(models.Action)} - {"type"}
    assert sdk_fields == published
    assert set(COMPONENTS["Action"]["properties"]) == published | {"type", "expected_version"}
    assert ACTION_FIELDS == {kind: tuple((x.name, x.kind, x.required) for x in shape)
                             for kind, shape in SHAPES.items()}
    assert models.Action.play("guard", 1, "priest").to_dict() == {
        "type": "play", "card": "guard", "target": 1, "guess": "priest"}
    assert models.Action.play("handmaid").to_dict() == {"type": "play", "card": "handmaid"}
    assert models.Action.chancellor_return("king", ["spy"]).to_dict() == {
        "type": "chancellor_return", "keep": "king", "bottom": ["spy"]}
