"""Records that would otherwise grow for good carry a TTL (issue 24, bounded data): a player's two
inbox streams, an action's idempotency record, the seats-asked set of a match, and the admin
audit stream (kept 100 days after its newest entry). Each is read with TTL on a private Redis:
a key without one answers -1."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from service import engine
from service.store import attendance, audit, inbox, keys, matches, players
from service.store.docs import MatchDoc

ON_CLUSTER = True


@pytest.fixture(autouse=True)
def empty(redis_db: redis.Redis) -> None:
    redis_db.flushall()


def respond(doc: MatchDoc, seat: int, now: float) -> dict[str, Any]:
    return {"version": doc.version}


def test_inbox_idempotency_and_asked_records_expire(redis_db: redis.Redis) -> None:
    r = redis_db
    pids = [players.register(r, f"ttl-{i}")["id"] for i in range(2)]
    doc = matches.create(r, pids[0], {"ruleset": "classic", "seats": 2, "seed": "ttl",
                                      "turn_timeout_s": 86400})
    for pid in pids:
        doc = matches.join(r, doc.id, pid)
    assert doc.state is not None
    action = engine.legal_action_dicts(doc.state)[0]
    matches.act(r, doc.id, pids[doc.state.turn], action, respond=respond,
                idempotency_key="k1", idempotency_ttl_s=3600)
    idem = keys.idempotency(doc.id, pids[doc.state.turn], "k1")
    assert 0 < r.ttl(idem) <= 3600
    for pid in pids:
        assert 0 < r.ttl(inbox.key(pid)) <= inbox.TTL_S
    pipe = r.pipeline()
    inbox.push(pipe, pids[0], {"type": "challenge_received", "challenge_id": "c_1"})
    pipe.execute()
    assert 0 < r.ttl(inbox.challenge_key(pids[0])) <= inbox.TTL_S
    attendance.note(r, pids[1], [doc.id])
    assert 0 < r.ttl(keys.match_asked(doc.id)) <= attendance.ASKED_TTL_S


def test_the_audit_stream_expires_its_retention_after_the_newest_entry(
        redis_db: redis.Redis) -> None:
    r = redis_db
    audit.record(r, admin="cli:test", action="ban", target="p_000000000001", reason="spam")
    ttl = r.ttl(keys.AUDIT)
    assert audit.KEEP_DAYS * 86400 - 60 < ttl <= audit.KEEP_DAYS * 86400
    assert len(audit.read(r)[0]) == 1
