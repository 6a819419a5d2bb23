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


# --------------------------------------------------------------------------- the event log's JSON


def _plain_json(doc: MatchDoc) -> bytes:
    """The document as it was encoded before the event log was memoised: every event anew."""
    import orjson

    d = {name: getattr(doc, name) for name in doc.__dataclass_fields__ if name != "state"}
    d["state"] = None if doc.state is None else doc.state.to_dict()
    return orjson.dumps(d)


def test_a_document_encodes_to_the_same_bytes_with_its_event_log_memoised() -> None:
    # a whole match, copied and moved on one action at a time as the store does: each encoding
    # reuses the previous one's events and adds the new ones
    state = engine.new_match("classic", 2, seed="memo")
    doc = MatchDoc(id="m_memo", created_at=1.0, created_by="p_1", options=dict(CLASSIC2),
                   seats=["p_1", "p_2"], names=["a", "b"], status="active", state=state)
    i = 0
    while state.status == engine.ACTIVE:
        assert doc.to_json() == _plain_json(doc)
        assert MatchDoc.from_json(doc.to_json()) == doc
        doc = doc.copy()
        state = doc.state
        assert state is not None
        actions = engine.legal_action_dicts(state)
        engine.apply_inplace(state, actions[i % len(actions)], seat=state.turn)
        i += 1
    assert doc.to_json() == _plain_json(doc)
    assert i > 10


def test_a_memo_of_other_events_is_not_used() -> None:
    # a copy carries its original's memo; given a log that went another way (or a shorter one),
    # it encodes its own events
    state = engine.new_match("classic", 2, seed="fork")
    doc = MatchDoc(id="m_fork", created_at=1.0, created_by="p_1", options=dict(CLASSIC2),
                   seats=["p_1", "p_2"], names=["a", "b"], status="active", state=state)
    doc.to_json()
    a, b = doc.copy(), doc.copy()
    assert a.state is not None and b.state is not None
    actions = engine.legal_action_dicts(a.state)
    engine.apply_inplace(a.state, actions[0], seat=a.state.turn)
    engine.apply_inplace(b.state, actions[-1], seat=b.state.turn)
    assert a.to_json() == _plain_json(a)
    c = a.copy()  # a's memo: a's events
    assert c.state is not None
    c.state.events = list(b.state.events)
    assert a.state.events[-1] != b.state.events[-1]
    assert c.to_json() == _plain_json(c)
    c = a.copy()
    assert c.state is not None
    c.state.events = c.state.events[:1]
    assert c.to_json() == _plain_json(c)
