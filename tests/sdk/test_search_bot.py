"""The search bot (examples/bots/search_bot.py) in a few arena games, and the arena's time budget
option. Strength is measured by bench/bots.py, not here."""

from __future__ import annotations

import math
import os
import random

import pytest
from llsdk import arena, sim
from llsdk.arena import make_view
from llsdk.cli import load_bot, main

from service import engine

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEARCH_BOT = os.path.join(REPO, "examples", "bots", "search_bot.py")
COUNTING_BOT = os.path.join(REPO, "examples", "bots", "counting_bot.py")
RANDOM_BOT = os.path.join(REPO, "examples", "bots", "random_bot.py")


@pytest.mark.parametrize("ruleset,others", [("classic", [COUNTING_BOT]),
                                             ("2019", [COUNTING_BOT, RANDOM_BOT, COUNTING_BOT])])
def test_search_bot_plays_legal_games_within_the_arena_budget(ruleset: str,
                                                              others: list[str]) -> None:
    """A few games at a 5 ms budget: every move legal (the arena raises otherwise), the
    budget set by the arena, each decision searched on at least 4 sampled states, and every
    decision with a choice timed."""
    bot = load_bot(SEARCH_BOT)
    bots = [bot] + [load_bot(o) for o in others]
    result = arena.run(bots, ruleset, games=2, seed="search-test", budget_ms=5)
    assert result.games == 2 and result.budget_ms == 5
    assert bot.budget == 0.005  # type: ignore[attr-defined]
    searched = bot.samples  # type: ignore[attr-defined]
    assert searched and min(searched) >= 4
    # every move is timed; the bot times (and searches) only decisions with a choice
    assert len(result.bots[0].move_seconds) >= len(bot.stats)  # type: ignore[attr-defined]
    assert result.to_dict()["bots"][0]["move_ms"]["moves"] == len(result.bots[0].move_seconds)


def test_search_bot_takes_a_sure_knock_out() -> None:
    """R12/R13: having seen the opponent's card with a Priest (and it can't have changed
    since), holding a Guard, the search plays a move that wins the round at once (in 2
    players, only a knock-out does)."""
    found = 0
    for seed in range(1000):
        rng = random.Random(seed)
        s = engine.new_match("classic", 2, seed=f"ko:{seed}", first_seat=0)
        while s.status == "active" and s.round == 1:
            if s.turn == 0 and 1 in s.hands[0] and not s.protected[1] and s.hands[1] != [1]:
                facts = engine.known_facts(s, 0)
                sure = sim.Sampler(make_view(s, 0)).hand_probabilities(1)
                if facts and facts[-1]["type"] == "priest" and len(sure) == 1:
                    break
            s, _ = engine.apply(s, rng.choice(engine.legal_actions(s)))
        else:
            continue
        bot = load_bot(SEARCH_BOT)
        bot.budget = 0.01  # type: ignore[attr-defined]
        bot.rng = random.Random(seed)
        action = bot.choose(make_view(s, 0))
        after, _ = engine.apply(s, engine.Action.from_dict(action.to_dict()))
        assert after.round == 2 and after.rounds[0]["winners"] == [0], action
        found += 1
        if found == 3:
            break
    assert found == 3


def test_search_bot_keeps_the_counting_bots_move_unless_the_search_beats_it() -> None:
    """With a confidence no search can reach, every decision is the counting bot's move on the
    same view; with none required, the search does overrule it now and then (so the first
    assertion is not about a search that never disagrees)."""
    from llsdk import Bot, View
    from llsdk.models import Action

    strict = load_bot(SEARCH_BOT)
    strict.CONFIDENCE = 1e9  # type: ignore[attr-defined]
    loose = load_bot(SEARCH_BOT)
    loose.CONFIDENCE = float("-inf")  # type: ignore[attr-defined]
    strict.budget = loose.budget = 0.003  # type: ignore[attr-defined]
    counting = load_bot(COUNTING_BOT)
    checked = []

    class Both(Bot):
        def choose(self, view: View) -> Action:
            action = strict.choose(view)
            assert action == counting.choose(view)
            loose.choose(view)
            checked.append(action)
            return action

    arena.run([Both(), load_bot(RANDOM_BOT), load_bot(RANDOM_BOT)], "2019", games=2,
              seed="fallback")
    assert len(checked) > 10
    assert strict.overruled == 0  # type: ignore[attr-defined]
    assert loose.overruled > 0  # type: ignore[attr-defined]


def test_guard_guesses_tell_a_random_player_from_a_careful_one() -> None:
    """An opponent's Guard naming a card whose every copy is in the public piles is far likelier
    under the random model than under the careful one; naming a card still in play tells them
    apart by little (rounds of random play, watched from seat 0)."""
    bot_module = load_bot(SEARCH_BOT).__class__.__module__
    guess_evidence = __import__(bot_module).guess_evidence
    from llsdk.cards import COPIES

    copies = COPIES["2019"]
    seen = {"gone": 0, "in play": 0}
    for seed in range(300):
        rng = random.Random(seed)
        s = engine.new_match("2019", 4, seed=f"guess:{seed}")
        while s.status == "active" and s.round == 1 and min(seen.values()) < 3:
            a = rng.choice(engine.legal_actions(s))
            public = [c for pile in s.discards for c in pile] + list(s.face_up)
            s, _ = engine.apply(s, a)
            if a.guess is None or a.target is None or s.turn is None or 0 in (
                    s.turn, a.target) or s.round != 1:
                continue
            guesser = [e for e in s.events if e.type == "play"][-1].data["seat"]
            if guesser == 0:
                continue
            name = engine.NAMES[a.guess]
            gone = public.count(a.guess) >= copies[name]
            ev = guess_evidence(make_view(s, 0))
            lead = ev["random"][guesser] - ev["heuristic"][guesser]  # this guess and earlier
            before = [e for e in s.events if e.type == "play" and e.data.get("guess")
                      and e.data["seat"] == guesser]
            if len(before) != 1:
                continue  # judge one guess at a time
            if gone:
                assert lead > 1.5  # log((1/9) / (0.02 / cards gone)) at the least
            else:
                assert -0.5 < lead <= -math.log(0.98) + 1e-9  # at most the slip's cost
            seen["gone" if gone else "in play"] += 1
    assert min(seen.values()) >= 3, seen


def test_llsdk_arena_budget_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["arena", SEARCH_BOT, RANDOM_BOT, "--games", "1", "--budget-ms", "2",
                 "--no-progress", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"budget_ms": 2.0' in out
    for bad in ("0", "-5", "nan", "inf", "lots", "1e9"):
        with pytest.raises(SystemExit) as exc:
            main(["arena", SEARCH_BOT, RANDOM_BOT, "--budget-ms", bad])
        assert exc.value.code == 2
        assert "--budget-ms" in capsys.readouterr().err


def test_arena_refuses_a_bad_budget() -> None:
    with pytest.raises(arena.ArenaError):
        arena.run([load_bot(RANDOM_BOT), load_bot(RANDOM_BOT)], games=1, budget_ms=-1)


def handmaid_after_a_missed_guard() -> engine.MatchState:
    """Classic, 2 players (a fixed seed): seat 0 names the Princess with its Guard and misses,
    then seat 1 draws and plays its Handmaid, keeping the other card; seat 0 to play."""
    guard, handmaid, princess = (engine.NAMES.index(c) for c in ("guard", "handmaid",
                                                                  "princess"))
    for seed in range(500):
        s = engine.new_match("classic", 2, seed=f"handmaid:{seed}", first_seat=0)
        if guard not in s.hands[0] or princess in s.hands[1]:
            continue
        s, _ = engine.apply(s, engine.Action("play", guard, 1, princess))
        if s.hands[1].count(handmaid) != 1:
            continue
        s, _ = engine.apply(s, engine.Action("play", handmaid))
        assert s.turn == 0 and s.round == 1
        return s
    raise AssertionError("no such deal in 500 seeds")  # pragma: no cover


def test_careful_opponents_are_dealt_what_the_counting_bot_would_have_kept() -> None:
    """The search bot models a careful opponent by the counting bot's own choices: it plays the
    Handmaid rather than keep a Guard or Priest (it keeps those for a look and a sure hit) but
    keeps a King, Countess or Princess. So after a Handmaid, sampled deals give that opponent a
    high card more often, and a Guard less often, than a deal weighted by card counts alone;
    both match the exact posterior, and every sampled deal agrees with the view."""
    from llsdk.cards import CARDS

    from tests.sdk.test_sdk_sim import check_consistent

    state = handmaid_after_a_missed_guard()
    view = make_view(state, 0)
    bot = load_bot(SEARCH_BOT)
    careful = bot.models(view)["heuristic"]  # type: ignore[attr-defined]
    assert isinstance(careful, sim.PlayTable)
    table, plain = sim.Sampler(view, careful), sim.Sampler(view, sim.OpponentModel(keep_high=0))
    exact_table, exact_plain = table.hand_probabilities(1), plain.hand_probabilities(1)
    high = ("king", "countess", "princess")
    assert sum(exact_table.get(c, 0) for c in high) > 1.5 * sum(exact_plain.get(c, 0)
                                                                 for c in high)
    assert exact_table["guard"] < exact_plain["guard"] / 3
    rng = random.Random(5)
    n = 2000
    dealt = {"table": [0] * len(CARDS), "plain": [0] * len(CARDS)}
    for name, sampler in (("table", table), ("plain", plain)):
        for _ in range(n):
            sampled = sampler.sample(rng)
            check_consistent(state, sampled, 0)
            dealt[name][sampled.hands[1][0]] += 1
    for name, exact in (("table", exact_table), ("plain", exact_plain)):
        for c, p in exact.items():  # within 4 standard errors of the exact share
            assert abs(dealt[name][CARDS.index(c)] / n - p) < 4 * math.sqrt(p * (1 - p) / n)
    assert sum(dealt["table"][CARDS.index(c)] for c in high) > \
        1.5 * sum(dealt["plain"][CARDS.index(c)] for c in high)
    assert dealt["table"][CARDS.index("guard")] < dealt["plain"][CARDS.index("guard")] / 3


def test_match_chance_values_the_tokens_after_a_round() -> None:
    """With three players or more the search scores a playout by the chance to win the match
    after it: every player alike at the start, the chances of all players summing to one (later
    rounds have one winner each), and a rival one token from the match worth more to stop than
    one far behind."""
    bot_module = load_bot(SEARCH_BOT).__class__.__module__
    match_chance = __import__(bot_module).match_chance

    assert match_chance(0, (0, 0, 0), 4) == pytest.approx(0.25)
    assert match_chance(4, (4, 0, 0), 4) == 1.0 and match_chance(3, (0, 1, 4), 4) == 0.0
    tokens = (2, 0, 3, 1)
    total = sum(match_chance(tokens[p], tuple(sorted(tokens[:p] + tokens[p + 1:])), 4)
                for p in range(4))
    assert total == pytest.approx(1.0)
    assert match_chance(1, (0, 0, 3), 4) < match_chance(1, (0, 1, 2), 4)


def test_candidates_of_a_sample_share_the_playouts_random_draws(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Common random numbers: every candidate played out on one sampled deal starts its playout
    from the same random stream (so they differ by their moves, not their luck), and the next
    deal's playouts draw fresh numbers."""
    streams: list[list[tuple[object, ...]]] = []
    sample, rollout = sim.Sampler.sample, sim.rollout

    def sampled(self: sim.Sampler, rng: random.Random, **kw: bool) -> object:
        streams.append([])
        return sample(self, rng, **kw)

    def played(state: object, seat: int, rng: random.Random, *args: object,
               **kw: object) -> float:
        streams[-1].append(rng.getstate())
        return rollout(state, seat, rng, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(sim.Sampler, "sample", sampled)
    monkeypatch.setattr(sim, "rollout", played)
    bot = load_bot(SEARCH_BOT)
    bot.budget = 0.005  # type: ignore[attr-defined]
    arena.run([bot, load_bot(COUNTING_BOT), load_bot(COUNTING_BOT)], "2019", games=1,
              seed="common")
    shared = [s for s in streams if len(s) > 1]
    assert len(shared) > 20
    assert all(len(set(s)) == 1 for s in shared)
    assert len({s[0] for s in shared}) == len(shared)
