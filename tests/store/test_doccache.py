"""The parsed-document cache (``service/store/doccache.py``): a document read again is not parsed
again, yet every caller gets a copy of its own and whatever Redis holds is what is used."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from service import engine
from service.store import doccache, keys, matches, players
from service.store.docs import MatchDoc

CLASSIC2 = {"ruleset": "classic", "seats": 2, "turn_timeout_s": 30}


@pytest.fixture(autouse=True)
def fresh(redis_db: redis.Redis) -> None:
    redis_db.flushall()
    doccache.forget()


def respond(doc: MatchDoc, seat: int, now: float) -> dict[str, Any]:
    return {"version": doc.version}


def started(r: redis.Redis) -> tuple[MatchDoc, list[str]]:
    pids = [players.register(r, f"c{i}")["id"] for i in range(2)]
    doc = matches.create(r, pids[0], dict(CLASSIC2), deadline_jobs=False)
    for pid in pids:
        doc = matches.join(r, doc.id, pid, deadline_jobs=False)
    return doc, pids


def count_parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    parse = MatchDoc.from_json

    def counting(raw: str | bytes) -> MatchDoc:
        calls[0] += 1
        return parse(raw)

    monkeypatch.setattr(MatchDoc, "from_json", staticmethod(counting))
    return calls


def test_a_document_this_process_wrote_is_read_back_without_parsing(
        redis_db: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    doc, pids = started(redis_db)
    parses = count_parses(monkeypatch)
    for _ in range(6):
        assert doc.state is not None
        action = engine.legal_action_dicts(doc.state)[0]
        matches.act(redis_db, doc.id, pids[doc.state.turn], action, respond=respond,
                    deadline_jobs=False)
        doc = matches.get(redis_db, doc.id, deadline_jobs=False)
    assert parses[0] == 0
    # what the cache hands out is what Redis holds
    assert doc == MatchDoc.from_json(redis_db.get(keys.match(doc.id)))


def test_each_reader_gets_its_own_copy(redis_db: redis.Redis) -> None:
    doc, _ = started(redis_db)
    first = matches.load(redis_db, doc.id)
    assert first.state is not None
    first.names[0] = "changed"
    first.state.hands[0].append(99)
    first.options["turn_timeout_s"] = 1
    second = matches.load(redis_db, doc.id)
    assert second is not first
    assert second == MatchDoc.from_json(redis_db.get(keys.match(doc.id)))
    assert second.names[0] != "changed" and second.options["turn_timeout_s"] == 30


def test_a_document_changed_by_someone_else_is_parsed_again(
        redis_db: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    doc, _ = started(redis_db)
    matches.load(redis_db, doc.id)
    stored = MatchDoc.from_json(redis_db.get(keys.match(doc.id)))
    stored.names[1] = "renamed"  # another process (or a hand) writes other bytes
    redis_db.set(keys.match(doc.id), stored.to_json())
    parses = count_parses(monkeypatch)
    assert matches.load(redis_db, doc.id).names[1] == "renamed"
    assert parses[0] == 1
