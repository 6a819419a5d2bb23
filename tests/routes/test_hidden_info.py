"""Hidden information over HTTP (docs/rules.md#R29 to #R32).

Every answer a player, a spectator or an outsider receives while random matches are played through
the API is checked against the engine's own projection: the match is replayed locally with the
same options (explicit seed, sometimes an explicit deck) and the same actions, and the HTTP view of
a seat must be exactly ``engine.view(state, seat, since=state.round_start_seq)`` plus the service's
own fields (ids, names, version, deadline, options), the public summary exactly
``engine.public_view(state, since=...)`` plus the same. Any extra key, any extra event, any card
the engine would not show is a failure.

R32 over HTTP: two matches whose explicit decks differ only in cards a seat cannot see give that
seat byte-identical answers, once the fields that legitimately differ (match id, creation time,
deadline, player ids and names) are blanked.
"""

from __future__ import annotations

import json
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from service import engine
from service.engine import MatchState
from tests.support.apiclient import (
    NO_TIMEOUTS,
    Api,
    Player,
    canon,
    engine_match,
    engine_part,
    error_of,
    expected_view,
    norm,
)
from tests.support.server import ApiServer

API_WORKERS = 2  # gunicorn workers for this module's server

MATCHES = 200
THREADS = 4
#: options a spectator sees while the match runs (no seed, deck or first seat: they decide
#: hidden cards)
RUNNING_OPTIONS = {"ruleset", "seats", "turn_timeout_s", "timeout_policy", "max_timeouts",
                   "tokens_to_win", "two_player_setup",
                   # (whether the creator chose them, and which: issue 11's no hidden rigging)
                   "fixed_by_creator", "fixed_options"}
SERVICE_FIELDS = {"match_id", "version", "options", "rated", "ladder", "created_at", "aborted"}

CONFIGS: list[tuple[str, int, str]] = [
    ("classic", 2, "three-up"), ("classic", 2, "three-down-one-up"), ("classic", 3, "three-up"),
    ("classic", 4, "three-up"),
    ("2019", 2, "three-up"), ("2019", 2, "three-down-one-up"), ("2019", 3, "three-up"),
    ("2019", 4, "three-up"), ("2019", 5, "three-up"), ("2019", 6, "three-up"),
    ("2019-classic", 2, "three-up"), ("2019-classic", 3, "three-up"),
    ("2019-classic", 4, "three-up"),
]


class Checker:
    """Plays one match through the API and checks every answer against the engine."""

    def __init__(self, api: Api, index: int) -> None:
        self.api = api
        self.index = index
        self.rng = random.Random(f"hidden-info:{index}")
        rng = self.rng
        ruleset, seats, setup = rng.choice(CONFIGS)
        self.options: dict[str, Any] = {
            "ruleset": ruleset, "seats": seats, "two_player_setup": setup,
            "seed": f"hidden-{index}-{rng.randrange(10**9)}",
            "tokens_to_win": 1 if rng.random() < 0.85 else 2, **NO_TIMEOUTS,
        }
        if rng.random() < 0.5:
            self.options["first_seat"] = rng.randrange(seats)
        if rng.random() < 0.3:
            deck = [engine.NAMES[c] for c in engine.get_ruleset(ruleset).deck()]
            rng.shuffle(deck)
            self.options["deck"] = deck
        self.seats = seats
        self.state: MatchState | None = None
        self.version = 1
        self.checked = 0
        self.resigned = 0

    def where(self) -> str:
        return f"match #{self.index} options={self.options}"

    # ------------------------------------------------------------------ checks

    def check_service_fields(self, v: dict[str, Any], mid: str) -> None:
        assert v["match_id"] == mid
        assert v["version"] == self.version, (v["version"], self.version, self.where())
        assert v["rated"] is False and v["ladder"] is None
        opts = v["options"]
        finished = self.state is not None and self.state.status == engine.FINISHED
        if finished:
            assert opts["seed"] == self.options["seed"]
            assert opts["deck"] == self.options.get("deck")
        else:
            assert set(opts) == RUNNING_OPTIONS, (sorted(opts), self.where())
        chosen = sorted(k for k in ("deck", "first_seat", "seed") if k in self.options)
        assert opts["fixed_by_creator"] is bool(chosen) and opts["fixed_options"] == chosen
        for k in RUNNING_OPTIONS:
            if k in self.options:
                assert opts[k] == self.options[k], (k, opts[k], self.where())

    def check_view(self, v: dict[str, Any], seat: int | None, mid: str,
                   players: list[Player]) -> None:
        """``v`` is what ``seat`` (None: spectator) received; it must be the engine's view."""
        self.checked += 1
        self.check_service_fields(v, mid)
        assert v["seat"] == seat, (v["seat"], seat, self.where())
        assert self.state is not None
        want = norm(expected_view(self.state, seat))
        got = engine_part(v)
        if got != want:
            diff = {k: (got.get(k), want.get(k)) for k in set(got) | set(want)
                    if got.get(k) != want.get(k)}
            raise AssertionError(f"seat {seat} view differs from the engine's: {diff}\n"
                                 f"{self.where()} version {self.version}")
        for i, p in enumerate(v["players"]):
            assert p["player_id"] == players[i].id and p["name"] == players[i].name
        if v["turn"] is not None:
            assert v["turn"]["deadline"] and v["turn"]["seconds_left"] > 0
        if seat is None:
            assert not {"hand", "known", "legal_actions"} & set(v), sorted(v)
            if self.state.status == engine.ACTIVE:
                assert not [e for e in v["events"] if e.get("private")], v["events"]

    def check_events(self, seat: int | None, token: str | None, mid: str) -> None:
        """GET .../events as ``seat`` (None: spectator, or an outsider's token)."""
        assert self.state is not None
        after = self.rng.choice([-1, -1, self.rng.randrange(len(self.state.events) + 1)])
        got = self.api.events(mid, token=token, after=after)
        self.checked += 1
        evs = self.state.events[after + 1:] if after >= 0 else self.state.events
        if self.state.status == engine.ACTIVE:
            want = [e.to_dict() for e in evs if e.visible_to(seat)]
        else:  # the full record once ended
            want = [e.to_dict(with_audience=True) for e in evs]
        assert got["events"] == norm(want), (seat, after, self.where())
        assert got["version"] == self.version
        assert got["last_seq"] == (want[-1]["seq"] if want else None)

    # ------------------------------------------------------------------ the match

    def run(self, pool: list[Player]) -> tuple[int, int]:
        """Play the match with players from ``pool`` (the last one stays out of it)."""
        api, rng = self.api, self.rng
        players = pool[:self.seats]
        outsider = pool[-1]
        created = api.create(players[0], **{k: v for k, v in self.options.items()
                                            if k != "seats"}, seats=self.seats)
        mid = created["match_id"]
        self.check_service_fields(created, mid)
        assert created["status"] == "waiting" and created["seat"] is None
        assert not {"hand", "known", "legal_actions"} & set(created)
        for i, p in enumerate(players):
            v = api.join(p, mid)
            self.version += 1
            if i < self.seats - 1:
                self.check_service_fields(v, mid)
                assert v["status"] == "waiting" and v["seat"] == i and v["hand"] == []
                assert v["known"] == [] and v["legal_actions"] == [] and v["events"] == []
            else:
                self.state = engine_match(self.options)
                self.check_view(v, i, mid, players)
        state = self.state
        assert state is not None
        # An outsider can't read a seat's view, nor act.
        r = api.request("GET", f"/v1/matches/{mid}/view", token=outsider.token)
        assert r.status_code == 403 and error_of(r)["code"] == "forbidden"
        while state.status == engine.ACTIVE:
            seat = state.turn
            mine = api.view(players[seat], mid)
            self.check_view(mine, seat, mid, players)
            action = rng.choice(mine["legal_actions"])
            answer = api.act(players[seat], mid, action)
            engine.apply_inplace(state, action, seat=seat)
            self.version += 1
            self.check_view(answer, seat, mid, players)
            # Now and then a player resigns (R27), whether it is their turn or not.
            if state.status == engine.ACTIVE and rng.random() < 0.03:
                quitter = rng.choice([i for i in range(self.seats) if not state.forfeited[i]])
                answer = api.ok(api.request("POST", f"/v1/matches/{mid}/resign",
                                            token=players[quitter].token))
                engine.forfeit_inplace(state, quitter, reason="resigned")
                self.version += 1
                self.resigned += 1
                self.check_view(answer, quitter, mid, players)
            # Now and then: another seat, a spectator, an outsider, the event log.
            if rng.random() < 0.3:
                other = rng.randrange(self.seats)
                self.check_view(api.view(players[other], mid), other, mid, players)
            x = rng.random()
            if x < 0.15:
                self.check_view(api.summary(mid), None, mid, players)
            elif x < 0.22:
                self.check_view(api.summary(mid, token=outsider.token), None, mid, players)
            elif x < 0.27:
                # a seated player's token gets the public summary there too
                self.check_view(api.summary(mid, token=players[seat].token), None, mid,
                                players)
            y = rng.random()
            if y < 0.08:
                s = rng.randrange(self.seats)
                self.check_events(s, players[s].token, mid)
            elif y < 0.12:
                self.check_events(None, None, mid)
            elif y < 0.14:
                self.check_events(None, outsider.token, mid)
        # The end: every seat, the spectator, the outsider and the full record.
        for seat, p in enumerate(players):
            self.check_view(api.view(p, mid), seat, mid, players)
        self.check_view(api.summary(mid), None, mid, players)
        self.check_view(api.summary(mid, token=outsider.token), None, mid, players)
        self.check_events(0, players[0].token, mid)
        self.check_events(None, outsider.token, mid)
        r = api.request("GET", f"/v1/matches/{mid}/view", token=outsider.token)
        assert r.status_code == 403 and error_of(r)["code"] == "forbidden"
        return self.checked, self.resigned


def test_every_answer_matches_the_engine_projection(api_server: ApiServer) -> None:
    """200 random matches (mixed rulesets, player counts, 2-player setups, explicit decks and
    first seats, now and then a resignation), every answer compared with the engine's view for
    that seat or spectator."""
    local = threading.local()
    clients: list[Api] = []
    lock = threading.Lock()

    def one(i: int) -> tuple[int, int]:
        if not hasattr(local, "api"):
            local.api = Api(api_server.url)
            # each thread's players sit in many matches (one at a time), like real bots
            local.pool = [local.api.register(f"hid{i}s{k}") for k in range(7)]
            with lock:
                clients.append(local.api)
        try:
            return Checker(local.api, i).run(local.pool)
        except Exception as e:
            raise AssertionError(f"match #{i}: {e}") from e

    try:
        with ThreadPoolExecutor(THREADS) as pool:
            counts = list(pool.map(one, range(MATCHES)))
    finally:
        for c in clients:
            c.close()
    assert len(counts) == MATCHES
    assert sum(c for c, _ in counts) > MATCHES * 5
    assert sum(r for _, r in counts) >= 5  # some matches saw a resignation


# --------------------------------------------------------------------------- own seat only


def test_a_token_reads_only_its_own_seat(api: Api) -> None:
    mid, players, _ = api.new_match(4, prefix="own", ruleset="2019", seed="own-seat",
                                    **NO_TIMEOUTS)
    hands: dict[int, list[str]] = {}
    for seat, p in enumerate(players):
        # whatever the query says, /view is the caller's seat
        for query in ("", "?seat=0", "?seat=3", f"?player={players[0].id}"):
            v = api.ok(api.request("GET", f"/v1/matches/{mid}/view{query}", token=p.token))
            assert v["seat"] == seat, (seat, query, v["seat"])
            hands.setdefault(seat, v["hand"])
            assert v["hand"] == hands[seat]
            assert all(e["seat"] == seat for e in v["events"] if e["type"] == "dealt")
            assert all(e.get("seat") == seat for e in v["events"] if e.get("private"))


def test_an_outsider_reads_only_the_public_summary(api: Api) -> None:
    mid, players, _ = api.new_match(2, prefix="pub", ruleset="classic", seed="outsider",
                                        **NO_TIMEOUTS)
    outsider = api.register("nosy")
    # no seat: 403 on the seat-only endpoints, whatever it asks
    for method, path, body in [
        ("GET", "view", None), ("GET", "view?seat=0", None),
        ("POST", "actions", {"type": "play", "card": "guard", "target": 0, "guess": "priest"}),
        ("POST", "resign", None),
    ]:
        r = api.request(method, f"/v1/matches/{mid}/{path}", token=outsider.token, json=body)
        assert r.status_code == 403, (path, r.status_code, r.text)
        assert error_of(r)["code"] == "forbidden"
    # the public summary, with or without the outsider's token: the same, and nothing private
    anon = api.summary(mid)
    mine = api.summary(mid, token=outsider.token)
    assert canon({k: v for k, v in anon.items() if k != "turn"}) == \
        canon({k: v for k, v in mine.items() if k != "turn"})
    for v in (anon, mine):
        assert v["seat"] is None
        assert not {"hand", "hands", "known", "legal_actions"} & set(v)
        assert not [e for e in v["events"] if e.get("private")]
        assert {e["type"] for e in v["events"]} <= {"round_start", "turn"}
        assert set(v["options"]) == RUNNING_OPTIONS
    evs = api.events(mid, token=outsider.token)["events"]
    assert evs == api.events(mid)["events"]
    assert not [e for e in evs if e.get("private")] and "deck" not in {e["type"] for e in evs}
    text = json.dumps([anon, mine, evs])
    assert '"dealt"' not in text and '"drew"' not in text and '"hand"' not in text


# --------------------------------------------------------------------------- R32 over HTTP


def blank(raw: str) -> str:
    """A view's JSON text with the fields that legitimately differ between two matches blanked,
    everything else (values and key order) kept; re-serialized compactly like the server."""
    v = json.loads(raw)
    v["match_id"] = v["created_at"] = None
    if v.get("turn"):
        v["turn"]["deadline"] = v["turn"]["seconds_left"] = None
    for p in v["players"]:
        p["player_id"] = p["name"] = None
    return json.dumps(v, separators=(",", ":"))


def two_matches(api: Api, decks: list[list[str]], *, ruleset: str, seats: int,
                prefix: str, **extra: Any) -> list[tuple[str, list[Player]]]:
    out = []
    for d in decks:
        mid, players, _ = api.new_match(seats, prefix=prefix, ruleset=ruleset, seed="r32-http",
                                        first_seat=0, deck=d, **NO_TIMEOUTS, **extra)
        out.append((mid, players))
    return out


def raw_view(api: Api, mid: str, p: Player) -> str:
    r = api.request("GET", f"/v1/matches/{mid}/view", token=p.token)
    assert r.status_code == 200, r.text
    return r.text


def raw_summary(api: Api, mid: str) -> str:
    r = api.request("GET", f"/v1/matches/{mid}")
    assert r.status_code == 200, r.text
    return r.text


def test_r32_views_are_a_function_of_the_seats_information_over_http(api: Api) -> None:
    """2019, 4 players, seat 0 first. The two decks differ in the set-aside card, the hands dealt
    to seats 1-3 and the order of the undrawn deck, but agree on every card seat 0 sees (its hand,
    its draws) and on the cards played in the public turns. Seat 0's answers and the public
    summary are byte-identical all along; the other seats' differ (negative control)."""
    # positions: 0 set aside | 1-4 dealt to seats 0..3 | 5 seat 0's draw | 6.. the deck
    # script: seat 0 plays handmaid; seats 1, 2, 3 each draw and play the card they drew
    # (countess, handmaid, spy: no effect on anyone); seat 0 draws again.
    a = ["princess", "handmaid", "guard", "king", "baron",
         "priest",                     # seat 0 draws
         "countess", "handmaid", "spy",  # seats 1, 2, 3 draw and play these
         "guard",                      # seat 0's second draw
         "guard", "guard", "guard", "guard", "priest", "baron", "prince", "prince",
         "chancellor", "chancellor", "spy"]
    b = a[:]
    # hidden from seat 0: the set-aside card, seats 1-3's dealt cards, the undrawn deck order
    b[0], b[2], b[3], b[4] = "king", "baron", "princess", "guard"
    b[10:] = list(reversed(a[10:]))
    assert sorted(a) == sorted(b) and a != b
    (ma, pa), (mb, pb) = two_matches(api, [a, b], ruleset="2019", seats=4, prefix="r32a")

    def same(step: str) -> None:
        assert blank(raw_view(api, ma, pa[0])) == blank(raw_view(api, mb, pb[0])), step
        assert blank(raw_summary(api, ma)) == blank(raw_summary(api, mb)), step
        for s in (1, 2, 3):  # negative control: these seats hold different cards
            assert blank(raw_view(api, ma, pa[s])) != blank(raw_view(api, mb, pb[s])), (step, s)
        ea = api.events(ma, token=pa[0].token)["events"]
        eb = api.events(mb, token=pb[0].token)["events"]
        assert ea == eb, step

    same("start")
    script = [(0, {"type": "play", "card": "handmaid"}),
              (1, {"type": "play", "card": "countess"}),
              (2, {"type": "play", "card": "handmaid"}),
              (3, {"type": "play", "card": "spy"})]
    for seat, action in script:
        ra = api.post_action(pa[seat], ma, action)
        rb = api.post_action(pb[seat], mb, action)
        assert ra.status_code == rb.status_code == 200, (ra.text, rb.text)
        if seat == 0:
            assert blank(ra.text) == blank(rb.text)
        same(f"after seat {seat} played {action['card']}")
    v = json.loads(raw_view(api, ma, pa[0]))
    assert v["turn"]["seat"] == 0 and sorted(v["hand"]) == ["guard", "priest"]


@pytest.mark.parametrize(("ruleset", "seats", "setup"), [
    ("classic", 2, "three-up"), ("classic", 2, "three-down-one-up"), ("classic", 4, "three-up"),
    ("2019", 3, "three-up"), ("2019", 6, "three-up"), ("2019-classic", 2, "three-down-one-up"),
])
def test_r32_start_of_match_permutations_over_http(api: Api, ruleset: str, seats: int,
                                                   setup: str) -> None:
    """At the start of a match every seat p sees its own card(s), the face-up cards and the
    counts. Permuting the cards p can't see (the face-down set-aside cards, the other seats'
    cards, the undrawn deck) gives p a byte-identical view; the spectator's summary stays
    identical when every hidden card is permuted. Changing p's own card changes p's view."""
    rng = random.Random(f"r32-start:{ruleset}:{seats}:{setup}")
    base = [engine.NAMES[c] for c in engine.get_ruleset(ruleset).deck()]
    rng.shuffle(base)
    aside = 1 if seats > 2 else (1 if setup == "three-up" else 4)
    face_up = 0 if seats > 2 else (3 if setup == "three-up" else 1)
    # index layout (first_seat 0): aside cards, then for three-down-one-up the face-up one,
    # with three-up the 3 face-up after the first, then one card per seat, then seat 0's draw.
    if seats == 2 and setup == "three-up":
        hidden_aside, visible = [0], [1, 2, 3]
    elif seats == 2:
        hidden_aside, visible = [0, 1, 2, 3], [4]
    else:
        hidden_aside, visible = [0], []
    first_deal = aside + face_up
    dealt = list(range(first_deal, first_deal + seats))
    first_draw = first_deal + seats
    rest = list(range(first_draw + 1, len(base)))
    decks_by_viewer: dict[int | None, list[list[str]]] = {}
    for p in [*range(seats), None]:
        if p is None:  # a spectator sees only the face-up cards
            hidden = hidden_aside + dealt + [first_draw] + rest
        else:
            own = [dealt[p]] + ([first_draw] if p == 0 else [])
            hidden = hidden_aside + [d for d in dealt if d not in own] + \
                ([] if p == 0 else [first_draw]) + rest
        other = base[:]
        values = [base[i] for i in hidden]
        for _ in range(20):
            rng.shuffle(values)
            if values != [base[i] for i in hidden]:
                break
        for i, c in zip(hidden, values, strict=True):
            other[i] = c
        assert [other[i] for i in visible] == [base[i] for i in visible]
        decks_by_viewer[p] = [base, other]
    for p, decks in decks_by_viewer.items():
        (ma, pa), (mb, pb) = two_matches(api, decks, ruleset=ruleset, seats=seats,
                                         prefix=f"r32s{seats}", two_player_setup=setup)
        if p is None:
            assert blank(raw_summary(api, ma)) == blank(raw_summary(api, mb)), decks
            assert api.events(ma)["events"] == api.events(mb)["events"]
        else:
            assert blank(raw_view(api, ma, pa[p])) == blank(raw_view(api, mb, pb[p])), (p, decks)
            assert api.events(ma, token=pa[p].token)["events"] == \
                api.events(mb, token=pb[p].token)["events"]
    # negative control: seat 1's own card changes, and so does its view
    mine = dealt[1]
    swap = next(i for i in rest if base[i] != base[mine])
    other = base[:]
    other[mine], other[swap] = other[swap], other[mine]
    (ma, pa), (mb, pb) = two_matches(api, [base, other], ruleset=ruleset, seats=seats,
                                     prefix=f"r32n{seats}", two_player_setup=setup)
    assert blank(raw_view(api, ma, pa[1])) != blank(raw_view(api, mb, pb[1]))
