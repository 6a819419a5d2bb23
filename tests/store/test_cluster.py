"""The store on a Redis Cluster (service/store/cluster.py), on the session's private 3-master
cluster: a transaction never spans slots (redis-py refuses one that would), what a change
writes to other slots follows its commit through an outbox, and the repair pass applies an
outbox whose process died before it could. The rest of the store, the API and the deadlines are
run on the cluster by the ``ON_CLUSTER`` modules (tests/conftest.py)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
import redis
from redis.cluster import RedisCluster as StockCluster
from redis.exceptions import (
    ClusterDownError,
    CrossSlotTransactionError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)

from service import engine
from service.realtime.notify import Notifier
from service.store import cluster, inbox, keys, ladders, matches, players, presence
from service.store.commit import Commit
from service.store.docs import ACTIVE, FINISHED, MatchDoc
from service.store.ladder_config import LadderConfig
from tests.support.notices import all_notices
from tests.support.redis_cluster import ClusterStack
from tests.support.stall import stalled


@pytest.fixture
def r(redis_cluster: ClusterStack) -> Iterator[redis.Redis]:
    # the session's cluster is shared with other modules on this worker (the API tests' runs
    # on the cluster), which may leave matches and counters behind: start from an empty one
    redis_cluster.flushall()
    client = redis_cluster.client()
    yield client
    redis_cluster.flushall()
    client.close()


def respond(doc: MatchDoc, seat: int, now: float) -> dict[str, Any]:
    return {"version": doc.version}


def started(r: redis.Redis) -> tuple[MatchDoc, list[str]]:
    tag = random.getrandbits(32)
    pids = [players.register(r, f"c{i}-{tag:x}")["id"] for i in range(2)]
    doc = matches.create(r, pids[0], {"ruleset": "classic", "seats": 2})
    for pid in pids:
        doc = matches.join(r, doc.id, pid)
    assert doc.status == ACTIVE and doc.state is not None
    return doc, pids


def move(r: redis.Redis, doc: MatchDoc, pids: list[str]) -> dict[str, Any]:
    assert doc.state is not None
    action = dict(engine.legal_action_dicts(doc.state)[0])
    return matches.act(r, doc.id, pids[doc.state.turn], action, respond=respond)


def outboxes(r: redis.Redis) -> list[bytes]:
    return list(r.scan_iter(match=cluster.OUTBOX_PREFIX + "*"))


def test_redis_py_refuses_a_transaction_across_slots(r: redis.Redis) -> None:
    """What the suite's cluster runs rely on: had any change put keys of two slots in one
    MULTI or WATCH, it would fail there (CROSSSLOT) instead of passing."""
    a, b = "ll:test:{a}", "ll:test:{b}"
    assert r.keyslot(a) != r.keyslot(b)  # type: ignore[attr-defined]
    stock = StockCluster.pipeline(r, transaction=True)
    stock.set(a, 1)
    stock.set(b, 1)
    with pytest.raises(RedisClusterException):
        stock.execute()
    with r.pipeline() as pipe, pytest.raises(RedisClusterException):
        pipe.watch(a, b)
    assert r.get(a) is None and r.get(b) is None


def test_a_move_commits_in_its_slot_and_its_other_writes_follow(r: redis.Redis) -> None:
    doc, pids = started(r)
    assert move(r, doc, pids) == {"version": doc.version + 1}
    after = matches.load(r, doc.id)
    assert after.version == doc.version + 1
    assert r.hget(keys.STATS, "actions") == b"1"
    assert r.zscore(keys.matches_by_status(ACTIVE), doc.id) is not None or \
        after.status == FINISHED
    if after.status == ACTIVE:  # whoever moves next (a round may end on the move) was told
        assert after.state is not None
        notices = all_notices(r, after.seats[after.state.turn])
        assert (notices[-1]["type"], notices[-1]["version"]) == ("your_turn", after.version)
    assert outboxes(r) == []  # applied, then deleted


def test_commands_sent_to_a_node_that_lost_their_slot_go_again_through_the_cluster_client(
        r: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hot path sends each node's commands through the node's plain client (store/
    cluster.py): a node that answers MOVED (the slot moved since the client looked) has the
    command sent again through redis-py's cluster client, which follows it. Simulated with a
    view of the slots where every key is on another master than it is."""
    doc, pids = started(r)
    token = players.register(r, "stale-view")
    c = cast(cluster.Cluster, r)
    right = c.get_node_from_key

    def wrong(key: Any, replica: bool = False) -> Any:
        node = right(key)
        return next(n for n in c.get_primaries() if n.name != node.name)

    stock = c.plain_pipeline
    sent_again: list[int] = []

    def counted() -> Any:
        sent_again.append(1)
        return stock()

    monkeypatch.setattr(c, "get_node_from_key", wrong)
    monkeypatch.setattr(c, "plain_pipeline", counted)
    got = players.access(r, token["token"])  # the token check (cluster.send)
    assert got.player == token["id"] and got.ban is None
    assert sent_again
    assert move(r, doc, pids) == {"version": doc.version + 1}  # scripts and outbox
    assert len(sent_again) >= 3  # the token check, the outbox's writes and its wake-ups
    monkeypatch.undo()
    after = matches.load(r, doc.id)
    assert after.version == doc.version + 1
    assert r.hget(keys.STATS, "actions") == b"1"
    if after.status == ACTIVE:  # the notice went once, though its first send was refused
        assert after.state is not None
        notices = all_notices(r, after.seats[after.state.turn])
        assert [(n["type"], n["version"]) for n in notices].count(
            ("your_turn", after.version)) == 1
    assert outboxes(r) == []  # applied, then deleted


def test_a_transaction_whose_slot_moved_refreshes_the_nodes_and_fails_as_a_lost_connection(
        r: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other stores' transactions (``r.pipeline()``: SlotPipeline) on a master that no
    longer holds their slot: the cluster's view of its nodes is read again and the caller gets
    a ConnectionError, which it treats as a lost connection (its WATCH is gone)."""
    c = cast(cluster.Cluster, r)
    right = c.get_node_from_key
    monkeypatch.setattr(c, "get_node_from_key", lambda key, replica=False: next(
        n for n in c.get_primaries() if n.name != right(key).name))
    refreshed: list[int] = []
    stock = c.nodes_manager.initialize
    monkeypatch.setattr(c.nodes_manager, "initialize",
                        lambda *a, **k: (refreshed.append(1), stock(*a, **k))[1])
    pipe = r.pipeline()
    try:
        with pytest.raises(redis.ConnectionError, match="the slot moved"):
            pipe.watch("ll:test:{moved}:a")
    finally:
        pipe.reset()
    assert refreshed


def test_effects_lost_to_a_crash_are_applied_by_the_repair_pass(
        r: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    doc, pids = started(r)
    real_apply = cluster.apply

    def crash(*_: Any) -> None:
        raise redis.ConnectionError("the process died after EXEC")

    monkeypatch.setattr(cluster, "apply", crash)
    assert move(r, doc, pids) == {"version": doc.version + 1}  # committed all the same
    monkeypatch.setattr(cluster, "apply", real_apply)
    after = matches.load(r, doc.id)
    assert after.version == doc.version + 1
    assert r.hget(keys.STATS, "actions") is None  # its counter is in the outbox
    assert len(outboxes(r)) == 1
    assert cluster.repair(r) == 0  # younger than the grace: its own process may still be on it
    assert cluster.repair(r, grace_s=0) == 1
    assert outboxes(r) == []
    assert r.hget(keys.STATS, "actions") == b"1"
    if after.status == ACTIVE:
        assert after.state is not None
        notices = all_notices(r, after.seats[after.state.turn])
        assert notices[-1]["type"] == "your_turn" and notices[-1]["version"] == after.version


def test_stale_status_index_entries_are_dropped(r: redis.Redis) -> None:
    doc, pids = started(r)
    matches.resign(r, doc.id, pids[0])
    assert matches.load(r, doc.id).status == FINISHED
    # what two changes' crossed index writes can leave behind
    r.zadd(keys.matches_by_status(ACTIVE), {doc.id: doc.created_at})
    assert matches.reconcile_status_indexes(r) == 1
    assert r.zscore(keys.matches_by_status(ACTIVE), doc.id) is None
    assert r.zscore(keys.matches_by_status(FINISHED), doc.id) is not None


def test_wakeups_travel_by_sharded_pubsub(r: redis.Redis) -> None:
    doc, pids = started(r)
    assert doc.state is not None
    notifier = Notifier(r)
    # whoever moves next is told (a round may end on the move: either player)
    with notifier.listen(keys.match_channel(doc.id)) as on_match, \
            notifier.listen(*map(keys.player_channel, pids)) as on_player:
        move(r, doc, pids)
        assert on_match.wait(5) and on_player.wait(5)
    assert keys.shard_channel(keys.match_channel(doc.id)) in keys.shard_channels()


def smessage(sub: Any, timeout: float, kind: str = "smessage") -> dict[str, Any] | None:
    """The next message of type ``kind`` on ``sub`` within ``timeout`` s, else None."""
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        msg = sub.get_message(timeout=left)
        if msg is not None and msg.get("type") in (kind, kind.encode()):
            return cast(dict[str, Any], msg)
    return None


def test_a_wakeup_reaches_pollers_only_after_the_notice_it_announces(
        r: redis.Redis, redis_cluster: ClusterStack) -> None:
    """A change's effects go to several nodes: the next player's inbox notice (the slot of its
    inbox) and its wake-up (the slot of a shard channel). Sent in one pipeline, the wake-up
    could be delivered while the notice was still unwritten on its node (the sender's thread
    paused between the nodes' sends): the poll woke, read nothing, waited again and slept out
    its whole ``wait``. Here the notice's node is stalled (SIGSTOP) while the effects of a
    real change (``inbox.queue``'s ``your_turn``) are applied: no wake-up may arrive until that
    node has the notice."""
    rc = redis_cluster.cluster
    doc, _ = started(r)
    assert doc.state is not None
    pid = doc.seats[doc.state.turn]
    channel = keys.shard_channel(keys.player_channel(pid))
    inbox_node, wake_node = rc.master_of(inbox.key(pid)), rc.master_of(channel)
    while inbox_node == wake_node:  # the two on different nodes: another match, another player
        doc, _ = started(r)
        assert doc.state is not None
        pid = doc.seats[doc.state.turn]
        channel = keys.shard_channel(keys.player_channel(pid))
        inbox_node, wake_node = rc.master_of(inbox.key(pid)), rc.master_of(channel)
    c = Commit()
    inbox.queue(c, doc, ACTIVE)  # the your_turn notice of the player to move, its wake-ups
    _, effects, _ = cluster.split(r, keys.match(doc.id), c.ops)
    assert ["SPUBLISH", channel, keys.player_channel(pid)] in effects
    before = all_notices(r, pid)
    sender = redis_cluster.client(socket_timeout=30)  # waits out the stall below
    sender.exists(inbox.key(pid))  # its connection to the node made (a new one would wait
    # for the stalled node before sending anything: a connection in the pool doesn't)
    sub = rc.node(wake_node).pubsub()
    sub.ssubscribe(channel)
    assert smessage(sub, 10, kind="ssubscribe") is not None
    done = threading.Event()
    with stalled(rc.procs[inbox_node]):
        t = threading.Thread(target=lambda: (cluster.apply(sender, effects), done.set()),
                             daemon=True)
        t.start()
        # the wake-up would come now: the sender's other nodes answer at once
        early = smessage(sub, 1.5)
        assert not done.is_set()
    assert early is None, "a wake-up arrived while the notice it announces was not written"
    t.join(timeout=30)
    assert done.is_set()
    heard = smessage(sub, 10)
    assert heard is not None and heard["data"] == keys.player_channel(pid).encode()
    after = all_notices(r, pid)
    assert len(after) == len(before) + 1 and after[-1]["type"] == "your_turn"
    sub.close()
    sender.close()


def test_a_ladder_forms_and_rates_its_matches_on_the_cluster(r: redis.Redis) -> None:
    lad = LadderConfig("cl", "classic", 2, interval_s=1)
    tag = random.getrandbits(32)
    pids = [players.register(r, f"l{i}-{tag:x}")["id"] for i in range(2)]
    for pid in pids:
        ladders.enter(r, lad, pid)
        presence.touch(r, pid)
    formed = ladders.form_matches(r, lad, rng=random.Random(1))
    assert len(formed) == 1
    doc = matches.load(r, formed[0])
    assert doc.status == ACTIVE and doc.rated and set(doc.seats) == set(pids)
    assert r.hexists(keys.ladder(lad.name, "inflight"), doc.id)
    matches.act(r, doc.id, doc.seats[doc.state.turn],  # type: ignore[union-attr]
                dict(engine.legal_action_dicts(doc.state)[0]), respond=respond)
    matches.resign(r, doc.id, doc.seats[0])
    assert ladders.rate(r, doc.id, {lad.name: lad})
    assert not ladders.rate(r, doc.id, {lad.name: lad})  # exactly once
    assert not r.hexists(keys.ladder(lad.name, "inflight"), doc.id)
    assert all(ladders.record(r, lad, p) is not None for p in pids)


def test_racing_moves_on_the_cluster_apply_once(r: redis.Redis,
                                               redis_cluster: ClusterStack) -> None:
    doc, pids = started(r)
    assert doc.state is not None
    action = dict(engine.legal_action_dicts(doc.state)[0])
    pid = pids[doc.state.turn]
    barrier = threading.Barrier(6)
    out: list[Any] = []

    def one() -> None:
        c = redis_cluster.client()
        barrier.wait()
        try:
            out.append(matches.act(c, doc.id, pid, action, respond=respond,
                                   expected_version=doc.version))
        except Exception as e:  # noqa: BLE001 - recorded, asserted below
            out.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wins = [o for o in out if isinstance(o, dict)]
    assert len(wins) == 1, out
    assert matches.load(r, doc.id).version == doc.version + 1
    assert r.hget(keys.STATS, "actions") == b"1"


def test_queue_redis_rules() -> None:
    single, other = "redis://10.0.0.1:6379/0", "redis://10.0.0.2:6379/0"
    clustered = "redis+cluster://10.0.0.3:7000,10.0.0.4:7000"
    assert cluster.queue_url(single, None) == single
    assert cluster.queue_url(single, single) == single
    assert cluster.queue_url(clustered, other) == other
    with pytest.raises(cluster.ConfigError, match="QUEUE_REDIS_URL"):
        cluster.queue_url(clustered, None)
    with pytest.raises(cluster.ConfigError, match="single Redis"):
        cluster.queue_url(clustered, clustered)
    with pytest.raises(cluster.ConfigError, match="only when REDIS_URL"):
        cluster.queue_url(single, other)


@pytest.mark.parametrize(("error", "status"), [
    (ClusterDownError("CLUSTERDOWN The cluster is down"), 503),
    (TryAgainError("TRYAGAIN resharding"), 503),
    (SlotNotCoveredError("slot 42 is not covered"), 503),
    (CrossSlotTransactionError("keys of two slots"), 500),
])
def test_a_cluster_failing_over_is_a_503_and_a_slot_bug_a_500(
        redis_cluster: ClusterStack, monkeypatch: pytest.MonkeyPatch, error: Exception,
        status: int) -> None:
    from service.config import Config
    from service.http.app import create_app

    app = create_app(Config(redis_url=redis_cluster.url, queue_redis_url=redis_cluster.queue_url,
                            rate_limits_enabled=False))

    def fail(*_: Any, **__: Any) -> None:
        raise error

    monkeypatch.setattr(players, "register", fail)
    resp = app.test_client().post("/v1/players", json={"name": "failover"})
    assert resp.status_code == status
    body = resp.get_json()
    assert body["code"] == ("service_unavailable" if status == 503 else "internal_error")
    assert (resp.headers.get("Retry-After") is not None) == (status == 503)
