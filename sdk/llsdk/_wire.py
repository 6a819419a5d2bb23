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
is one plan per class (a reader function per field), built once from ``dataclasses.fields`` and
``typing.get_type_hints``; ``tests/sdk/test_sdk_wire.py`` checks every model field by field
against the API's OpenAPI schema.

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
        return read(cls, d)


def read(cls: type[M], d: Mapping[str, Any], **given: Any) -> M:
    """An instance of the dataclass ``cls`` read from ``d``; the fields in ``given`` are taken
    as they are instead of read."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _plan(cls)
    values = {name: given[name] if name in given else reader(d) for name, reader in plan}
    return cls(**values)


# The plan of each model class: (field name, reader of that field from a JSON object), made on
# first use (when every model its annotations name exists). Keyed by the class itself, so a
# subclass gets its own plan with its own fields (and defaults), never its base's.
_PLANS: dict[type, list[tuple[str, Callable[[Mapping[str, Any]], Any]]]] = {}


def _plan(cls: type) -> list[tuple[str, Callable[[Mapping[str, Any]], Any]]]:
    hints = typing.get_type_hints(cls)
    return [(f.name, _reader(cls, f, hints[f.name])) for f in fields(cls)]


def _reader(cls: type, f: Field[Any], hint: Any) -> Callable[[Mapping[str, Any]], Any]:
    """The function that reads field ``f`` from a JSON object."""
    if f.name == "raw":
        return lambda d: d if isinstance(d, dict) else dict(d)
    kind, optional = _unwrap(hint)
    key: str = f.metadata.get("key", f.name)
    element = typing.get_args(kind)[0] if typing.get_origin(kind) is list else None
    convert: Callable[[Any], Any] | None
    if isinstance(kind, type) and hasattr(kind, "from_dict"):
        model: Any = kind
        accepts: type | None = dict
        convert = model.from_dict
    elif element is not None and hasattr(element, "from_dict"):
        item: Any = element
        accepts = list
        convert = lambda v: [item.from_dict(x) for x in v]  # noqa: E731
    elif kind is bool:
        accepts, convert = None, bool
    else:
        accepts, convert = None, None
    if f.metadata.get("required"):
        def required(d: Mapping[str, Any]) -> Any:
            v = d[key]  # a KeyError when absent
            if convert is None or (accepts is not None and not isinstance(v, accepts)) \
                    or (accepts is None and v is None):
                return v
            return convert(v)
        return required
    missing = _missing(cls, f, kind, optional)

    def optional_field(d: Mapping[str, Any]) -> Any:
        v = d.get(key)
        if v is None or (accepts is not None and not isinstance(v, accepts)):
            return missing()
        return v if convert is None else convert(v)
    return optional_field


def _missing(cls: type, f: Field[Any], kind: Any, optional: bool) -> Callable[[], Any]:
    """What field ``f`` gets when its key is absent or null (a new list or dict each time)."""
    if "missing" in f.metadata:
        value = f.metadata["missing"]
    elif f.default is not MISSING:
        value = f.default
    elif f.default_factory is not MISSING:
        return f.default_factory
    elif optional:
        value = None
    else:
        origin = typing.get_origin(kind) or kind
        if origin in _EMPTY_FACTORY:
            return _EMPTY_FACTORY[origin]
        if origin not in _EMPTY:
            raise TypeError(f"{cls.__name__}.{f.name}: a {kind} has no empty value; "
                            "give it a default, wire(missing=...) or REQUIRED")
        value = _EMPTY[origin]
    return lambda: value


def _unwrap(hint: Any) -> tuple[Any, bool]:
    """``(X, True)`` for ``X | None``, ``(X, False)`` for a plain ``X``."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
        return hint, True
    return hint, False
