"""The names a request shows for players: those in the match documents, except for players
renamed or deleted since they sat down (``store/names.py``), resolved by id here. The names'
generation comes with the token check (``routes/common.verified_player``), so a request with a
token reads nothing more unless a name changed; one without reads the generation once."""

from __future__ import annotations

from flask import current_app, g, has_request_context

from ..store import names


def shown() -> dict[str, str]:
    """Player id -> shown name, for the players whose name changed (empty outside a request)."""
    if not has_request_context():
        return {}
    if "ll_names" not in g:
        g.ll_names = names.shown(current_app.extensions["redis"], g.get("ll_names_gen"))
    return g.ll_names  # type: ignore[no-any-return]


def of(seats: list[str], given: list[str]) -> list[str]:
    """The names to show for ``seats``, whose documents hold ``given``."""
    changed = shown()
    if not changed:
        return given
    return [changed.get(p, n) for p, n in zip(seats, given, strict=True)]
