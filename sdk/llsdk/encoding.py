"""Numbers for learning code: a fixed action space and a flat observation of one seat's view.

Both are read from what the seat may see (a view: the API's ``GET /v1/matches/{id}/view``, or
``service.engine.view(state, seat, since=<round start>)`` offline), never from the hidden state,
so an observation holds the same information as the view and nothing more. Seats are numbered
*relative to the observer* (0 = itself, 1 = the next seat in turn order, ...), in actions as in
observations, so one policy serves every seat. The layouts are documented in docs/bots.md.

Action ids (``N_ACTIONS`` = 1880, for up to ``MAX_SEATS`` = 6 seats and the 10 card kinds):

- a play: ``card * 77 + t * 11 + g`` with ``t`` = 0 (no target) or 1 + the target's relative
  seat (1 = oneself: the prince), and ``g`` = 0 (no guess) or 1 + the named card;
- a chancellor's return: ``770 + keep * 111 + b`` with ``b`` = 0 (nothing returned),
  ``1 + x`` (one card ``x``) or ``11 + 10 * x + y`` (``x`` above ``y`` at the bottom).

>>> a = Action.play("guard", target=3, guess="priest")
>>> i = action_id(a, me=2, players=4); i
102
>>> action_of(i, me=2, players=4) == a
True
>>> action_of(action_id(Action.chancellor_return("king", ["spy", "guard"]), 0, 2), 0, 2)
Action(type='chancellor_return', card=None, target=None, guess=None, keep='king', bottom=('spy', 'guard'))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .cards import CARDS, COPIES
from .models import Action

MAX_SEATS = 6
KINDS = len(CARDS)  # 10
INDEX = {name: i for i, name in enumerate(CARDS)}
_PLAY_T = MAX_SEATS + 1  # no target, or one of the 6 relative seats
_PLAY_G = KINDS + 1  # no guess, or one of the 10 kinds
PLAY_ACTIONS = KINDS * _PLAY_T * _PLAY_G  # 770
_RETURN_B = 1 + KINDS + KINDS * KINDS  # 111 bottoms of 0, 1 or 2 cards
N_ACTIONS = PLAY_ACTIONS + KINDS * _RETURN_B  # 1880

#: the rulesets an observation names (a one-hot), in this order
RULESET_ORDER = ("classic", "2019", "2019-classic")


def action_id(action: Action, me: int, players: int) -> int:
    """The id of ``action`` taken by seat ``me`` of a ``players``-seat match."""
    if action.type == "chancellor_return":
        keep = INDEX[action.keep or ""]
        bottom = [INDEX[c] for c in action.bottom or ()]
        if len(bottom) > 2:
            raise ValueError(f"a chancellor returns at most 2 cards, not {len(bottom)}")
        b = 0 if not bottom else 1 + bottom[0] if len(bottom) == 1 else \
            1 + KINDS + KINDS * bottom[0] + bottom[1]
        return PLAY_ACTIONS + keep * _RETURN_B + b
    t = 0 if action.target is None else 1 + (action.target - me) % players
    g = 0 if action.guess is None else 1 + INDEX[action.guess]
    return INDEX[action.card or ""] * _PLAY_T * _PLAY_G + t * _PLAY_G + g


def action_of(i: int, me: int, players: int) -> Action:
    """The action of id ``i`` for seat ``me`` (the inverse of :func:`action_id`); ids beyond
    the match's seats raise ``ValueError``."""
    if not 0 <= i < N_ACTIONS:
        raise ValueError(f"no action id {i}: ids run from 0 to {N_ACTIONS - 1}")
    if i >= PLAY_ACTIONS:
        keep, b = divmod(i - PLAY_ACTIONS, _RETURN_B)
        bottom = () if b == 0 else (CARDS[b - 1],) if b <= KINDS else \
            (CARDS[(b - 1 - KINDS) // KINDS], CARDS[(b - 1 - KINDS) % KINDS])
        return Action.chancellor_return(CARDS[keep], bottom)
    card, rest = divmod(i, _PLAY_T * _PLAY_G)
    t, g = divmod(rest, _PLAY_G)
    if t > players:
        raise ValueError(f"action id {i} targets relative seat {t - 1} of a {players}-seat match")
    target = None if t == 0 else (me + t - 1) % players
    return Action.play(CARDS[card], target, None if g == 0 else CARDS[g - 1])


def legal_mask(view: Mapping[str, Any]) -> list[int]:
    """A 0/1 list over every action id: 1 for the view's legal actions (none when it is not
    the seat's turn)."""
    mask = [0] * N_ACTIONS
    for i in legal_ids(view):
        mask[i] = 1
    return mask


def legal_ids(view: Mapping[str, Any]) -> list[int]:
    """The ids of the view's legal actions, ascending."""
    me, n = view["seat"], view["players_count"]
    return sorted(action_id(Action.from_dict(a), me, n) for a in view["legal_actions"])


# --------------------------------------------------------------------------- observations

#: the observation's blocks, in order: (name, size). docs/bots.md explains each.
SEAT_BLOCK = (("present", 1), ("tokens", 1), ("eliminated", 1), ("protected", 1),
              ("forfeited", 1), ("to_act", 1), ("hand_count", 1), ("discards", KINDS),
              ("known_card", KINDS))
SEAT_SIZE = sum(size for _, size in SEAT_BLOCK)  # 27
LAYOUT = (("ruleset", len(RULESET_ORDER)), ("players", MAX_SEATS - 1), ("phase", 2),
          ("hand", KINDS), ("seats", MAX_SEATS * SEAT_SIZE), ("face_up", KINDS),
          ("unseen", KINDS), ("deck_count", 1), ("set_aside_count", 1), ("round", 1),
          ("tokens_to_win", 1))
OBS_SIZE = sum(size for _, size in LAYOUT)  # 206
#: an upper bound of every entry (counts of cards and tokens, the round number; the rest 0/1)
OBS_HIGH = 128.0  # rounds: at most 6 seats x 19 tokens + 1 = 115


def offsets() -> dict[str, int]:
    """Where each block of :data:`LAYOUT` starts."""
    out, at = {}, 0
    for name, size in LAYOUT:
        out[name] = at
        at += size
    return out


_AT = offsets()


def known_cards(view: Mapping[str, Any]) -> dict[int, str]:
    """Seat -> the card this seat last learnt it holds (a priest look, a baron comparison, a
    king trade), dropped once that seat plays or discards that card, or leaves the round."""
    me = view["seat"]
    facts: list[tuple[int, int, str]] = []  # (seq, seat, card)
    for f in view["known"]:
        kind = f["type"]
        if kind in ("priest", "baron"):
            facts.append((f["seq"], f["seat"], f["card"]))
        elif kind == "king":  # the other seat now holds what this seat gave
            facts.append((f["seq"], f["seat"], f["gave"]))
    out: dict[int, str] = {}
    for seq, seat, card in sorted(facts):
        if seat == me:
            continue
        out[seat] = card
        for e in view["events"]:
            if e["seq"] <= seq:
                continue
            played = e["type"] == "play" and e.get("seat") == seat and e.get("card") == card
            discarded = e["type"] == "play" and e.get("target") == seat \
                and e.get("card") == "prince"
            if played or discarded or e["type"] == "king_swapped" and seat in (
                    e.get("seat"), e.get("target")):
                out.pop(seat, None)
                break
    for p in view["players"]:
        if p["eliminated"]:
            out.pop(p["seat"], None)
    return out


def observe(view: Mapping[str, Any]) -> list[float]:
    """The flat observation (:data:`OBS_SIZE` numbers) of a seat's view (a wire-form dict)."""
    x = [0.0] * OBS_SIZE
    me, n = view["seat"], view["players_count"]
    rs = view["ruleset"]
    if rs in RULESET_ORDER:
        x[_AT["ruleset"] + RULESET_ORDER.index(rs)] = 1.0
    x[_AT["players"] + n - 2] = 1.0
    turn = view.get("turn")
    if turn is not None and turn["seat"] == me and view["legal_actions"]:
        x[_AT["phase"] + (turn["phase"] == "chancellor")] = 1.0
    seen = [0] * KINDS
    for c in view["hand"]:
        x[_AT["hand"] + INDEX[c]] += 1
        seen[INDEX[c]] += 1
    known = known_cards(view)
    for p in view["players"]:
        seat = p["seat"]
        at = _AT["seats"] + ((seat - me) % n) * SEAT_SIZE
        x[at] = 1.0
        x[at + 1] = float(p["tokens"])
        x[at + 2] = float(p["eliminated"])
        x[at + 3] = float(p["protected"])
        x[at + 4] = float(p["forfeited"])
        x[at + 5] = float(turn is not None and turn["seat"] == seat)
        x[at + 6] = float(p["hand_count"])
        for c in p["discards"]:
            x[at + 7 + INDEX[c]] += 1
            seen[INDEX[c]] += 1
        if seat in known:
            x[at + 7 + KINDS + INDEX[known[seat]]] = 1.0
    for c in view["face_up"]:
        x[_AT["face_up"] + INDEX[c]] += 1
        seen[INDEX[c]] += 1
    copies = COPIES.get(rs, {})
    for c, k in copies.items():
        x[_AT["unseen"] + INDEX[c]] = float(max(0, k - seen[INDEX[c]]))
    x[_AT["deck_count"]] = float(view["deck_count"])
    x[_AT["set_aside_count"]] = float(view.get("set_aside_count", 0))
    x[_AT["round"]] = float(view["round"])
    x[_AT["tokens_to_win"]] = float(view.get("tokens_to_win") or 0)
    return x


def describe(x: Sequence[float]) -> dict[str, list[float]]:
    """An observation cut into its named blocks (for reading and debugging)."""
    return {name: list(x[_AT[name]:_AT[name] + size]) for name, size in LAYOUT}


__all__ = ["INDEX", "KINDS", "LAYOUT", "MAX_SEATS", "N_ACTIONS", "OBS_HIGH", "OBS_SIZE",
           "PLAY_ACTIONS", "RULESET_ORDER", "action_id", "action_of", "describe", "known_cards",
           "legal_ids", "legal_mask", "observe"]
