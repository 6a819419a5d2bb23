"""Leaving a ladder while a scheduling pass is under way: the answer comes after the pass, and
counts what it seated, so a bot that stops after leaving finds every match it was given."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from service.store import ladder_planner, ladders, matches, players, presence
from service.store.ladder_config import LadderConfig

ON_CLUSTER = True  # (tests/conftest.py: also on a private 3-master Redis Cluster)

LAD = LadderConfig("exit", "classic", 2)


def test_leave_during_a_pass_answers_after_it_with_the_match_it_seated(
        redis_db: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    r = redis_db
    a, b = (players.register(r, f"leaver{i}")["id"] for i in range(2))
    for p in (a, b):
        ladders.enter(r, LAD, p)
        presence.touch(r, p)
    planning, formed = threading.Event(), []
    plan = ladder_planner.plan_tables

    def slow_plan(*args: Any, **kwargs: Any) -> list[list[str]]:
        planning.set()  # the pass has read the entries: both bots are in its pool
        time.sleep(0.5)  # ... and the leave comes in before it writes its table
        return plan(*args, **kwargs)

    monkeypatch.setattr(ladder_planner, "plan_tables", slow_plan)
    scheduler = threading.Thread(target=lambda: formed.extend(ladders.form_matches(r, LAD)))
    scheduler.start()
    assert planning.wait(30)
    answer = ladders.leave(r, LAD, a)
    scheduler.join(30)
    assert len(formed) == 1 and a in matches.load(r, formed[0]).seats
    assert not answer["entered"]
    assert answer["active_matches"] == 1  # the match the pass gave it, before the answer
    # and no later pass seats it again
    assert ladders.form_matches(r, LAD) == []
