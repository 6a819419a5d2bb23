"""Reading the typed models from the API's JSON: one ``from_dict`` for every dataclass model.

A model subclasses :class:`WireModel` and declares its fields; ``Model.from_dict(d)`` then reads
each field from the key of the same name, by these rules (the ones the SDK's hand-written
readers followed, so a newer server never breaks an older SDK):

- a key the model does not declare is ignored;
- a key that is absent, or null, gives the field's default; a field without one gets the empty
  value of its type (None if it admits None, else 0, 0.0, "", False, a new [] or {}), unless
  its metadata says otherwise: ``wire(missing="open")`` (another value), ``REQUIRED`` (an id
  the server always sends: reading without it is a ``KeyError``), ``wire(key="challenge_id")``
  (another JSON name);
- a field typed as a model (``Turn``, ``Turn | None``) is read with that model's ``from_dict``
  from a JSON object, a ``list[Model]`` from a JSON array; anything else there counts as absent;
- a ``bool`` field holds ``bool(value)``; any other value is kept as the JSON gave it;
- a field named ``raw`` holds the JSON object itself.

A model whose reading has a twist overrides ``from_dict`` and calls :func:`read` with the
fields it computes itself (``read(cls, d, data=d)``).

Why not a library (dacite, cattrs, pydantic, msgspec): the SDK depends on ``requests`` alone,
so every bot author installs what it needs; a converter library would be a second dependency,
and pydantic or msgspec would pin bot authors to a major version. The rules above would still
need hooks in any of them (null as absent, the empty value, the ``raw`` field), and the reader
is one plan per class, built once from ``dataclasses.fields`` and ``typing.get_type_hints``.

>>> from dataclasses import dataclass, field
>>> @dataclass(slots=True)
... class Pet(WireModel):
...     id: str = field(metadata=REQUIRED)
...     legs: int
...     tags: list[str]
...     kind: str = "cat"
...     owner: str | None = field(default=None, metadata=wire(key="owner_id"))
>>> Pet.from_dict({"id": "p1", "kind": None, "owner_id": "u2", "colour": "red"})
Pet(id='p1', legs=0, tags=[], kind='cat', owner='u2')
>>> Pet.from_dict({"legs": 4})
Traceback (most recent call last):
KeyError: 'id'
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, fields
from typing import Any, Self, TypeVar

M = TypeVar("M")

_EMPTY: dict[Any, Any] = {int: 0, float: 0.0, str: "", bool: False}
_EMPTY_FACTORY: dict[Any, Callable[[], Any]] = {list: list, dict: dict}


def wire(*, key: str | None = None, missing: Any = MISSING,
         required: bool = False) -> Mapping[str, Any]:
    """Field metadata for :func:`read`: the JSON ``key`` (if not the field's name), the value
    when the key is ``missing`` (if not the default or the empty value), or ``required``."""
    meta: dict[str, Any] = {"required": required}
    if key is not None:
        meta["key"] = key
    if missing is not MISSING:
        meta["missing"] = missing
    return types.MappingProxyType(meta)


REQUIRED = wire(required=True)


class WireModel:
    """Base of the SDK's dataclass models: gives them :meth:`from_dict`."""

    __slots__ = ()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        """The model read from its JSON object (the rules are in :mod:`llsdk._wire`)."""
        reader = _READERS.get((cls, ())) or _compile(cls, ())
        if "from_dict" not in cls.__dict__:
            # later calls go straight to the compiled reader (one call, as a hand-written one)
            setattr(cls, "from_dict", classmethod(reader))  # noqa: B010 (mypy: a method)
        made: Self = reader(cls, d)
        return made


def read(cls: type[M], d: Mapping[str, Any], **given: Any) -> M:
    """An instance of the dataclass ``cls`` read from ``d``; the fields in ``given`` are taken
    as they are instead of read."""
    names = tuple(given)
    reader = _READERS.get((cls, names)) or _compile(cls, names)
    made: M = reader(cls, d, given)
    return made


# (model class, names of the given fields) -> its reader, compiled on first use (when every
# model its annotations name exists), as dataclasses compiles ``__init__``: a loop over the
# fields read a view 2x slower than the hand-written readers did, and the offline arena reads
# one view per move. A reader's ``__doc__`` is its source.
_READERS: dict[tuple[type, tuple[str, ...]], Callable[..., Any]] = {}


def _compile(cls: type, given: tuple[str, ...]) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    lines = [f"{f.name}={_expression(cls, f, hint, given, namespace)}"
             for f, hint in zip(fields(cls), _hints(cls), strict=True)]
    source = ("def from_dict(cls, d, given=None):\n    get = d.get\n    return cls(\n"
              + "".join(f"        {line},\n" for line in lines) + "    )\n")
    exec(compile(source, f"<llsdk reader of {cls.__name__}>", "exec"), namespace)
    reader: Callable[..., Any] = namespace["from_dict"]
    reader.__doc__ = source
    _READERS[(cls, given)] = reader
    return reader


def _hints(cls: type) -> list[Any]:
    hints = typing.get_type_hints(cls)
    return [hints[f.name] for f in fields(cls)]


def _expression(cls: type, f: Field[Any], hint: Any, given: tuple[str, ...],
                namespace: dict[str, Any]) -> str:
    """The Python expression that reads field ``f`` from ``d``."""
    if f.name in given:
        return f"given[{f.name!r}]"
    if f.name == "raw":
        return "d if isinstance(d, dict) else dict(d)"
    kind, optional = _unwrap(hint)
    key = f.metadata.get("key", f.name)
    element = typing.get_args(kind)[0] if typing.get_origin(kind) is list else None
    if isinstance(kind, type) and hasattr(kind, "from_dict"):
        namespace[f"{f.name}_model"] = kind
        read, accepts = f"{f.name}_model.from_dict(v)", "dict"
    elif element is not None and hasattr(element, "from_dict"):
        namespace[f"{f.name}_model"] = element
        read, accepts = f"[{f.name}_model.from_dict(x) for x in v]", "list"
    elif kind is bool:
        read, accepts = "bool(v)", ""
    else:
        read, accepts = "v", ""
    if f.metadata.get("required"):
        got = f"d[{key!r}]"  # a KeyError when absent
        if read == "v":
            return got
        check = f"isinstance(v := {got}, {accepts})" if accepts else f"(v := {got}) is not None"
        return f"{read} if {check} else v"
    missing = _missing(cls, f, kind, optional, namespace)
    if accepts:
        return f"{read} if isinstance(v := get({key!r}), {accepts}) else {missing}"
    if (missing, read) in (("None", "v"), ("False", "bool(v)")):  # the same, in one step
        return read.replace("v", f"get({key!r})")
    return f"{missing} if (v := get({key!r})) is None else {read}"


def _missing(cls: type, f: Field[Any], kind: Any, optional: bool,
             namespace: dict[str, Any]) -> str:
    """The expression for field ``f`` when its key is absent or null."""
    if "missing" in f.metadata:
        value = f.metadata["missing"]
    elif f.default is not MISSING:
        value = f.default
    elif f.default_factory is not MISSING:
        namespace[f"{f.name}_factory"] = f.default_factory
        return f"{f.name}_factory()"
    elif optional:
        return "None"
    else:
        origin = typing.get_origin(kind) or kind
        if origin in _EMPTY_FACTORY:
            namespace[f"{f.name}_factory"] = _EMPTY_FACTORY[origin]
            return f"{f.name}_factory()"
        if origin not in _EMPTY:
            raise TypeError(f"{cls.__name__}.{f.name}: a {kind} has no empty value; "
                            "give it a default, wire(missing=...) or REQUIRED")
        value = _EMPTY[origin]
    if value is None or type(value) in (bool, int, float, str):
        return repr(value)
    namespace[f"{f.name}_missing"] = value
    return f"{f.name}_missing"


def _unwrap(hint: Any) -> tuple[Any, bool]:
    """``(X, True)`` for ``X | None``, ``(X, False)`` for a plain ``X``."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
        return hint, True
    return hint, False
