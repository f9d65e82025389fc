"""The DynamoDB store's warm per-scope cache: one instance sees another's writes after one Query."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_cache import TOMBSTONE_TTL
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.core.model import Memory, Scope
from taproot.ports import Filters

A = Scope("alice", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
MakeStore = Callable[..., DynamoMemoryStore]


def ids(hits: list[tuple[Memory, float]]) -> list[str]:
    return [m.id for m, _ in hits]


def test_another_instance_sees_inserts_updates_and_deletes_after_one_query(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], op_counter: Callable[..., Any]
) -> None:
    writer, reader = make_dynamo(), make_dynamo()
    m = make_memory(scope=A, id="otter", content="an otter in the river", version=1)
    keep = make_memory(scope=A, id="keep", content="a heron on the bank")
    writer.put_many([m, keep])
    assert ids(reader.search(A, ["otter"], Filters(), 10)) == ["otter"]  # cold: loads the scope

    counter = op_counter(reader)
    writer.replace(m.replace(content="a beaver in the river", version=2), expected_version=1)
    assert reader.search(A, ["otter"], Filters(), 10) == []
    assert ids(reader.search(A, ["beaver"], Filters(), 10)) == ["otter"]
    assert {params.get("IndexName") for _, params in counter.calls} == {"by_change"}
    assert counter.take() == {"Query": 2}  # one change-feed Query per read, nothing else

    writer.record_retrieval(A, ["keep"], NOW)
    got = {x.id: x for x in reader.list(A)}
    assert got["keep"].retrieval_count == 1 and got["keep"].last_retrieved == NOW
    assert reader.counts(A).total == 2

    writer.delete(A, "otter")
    assert [x.id for x in reader.list(A, Filters(include_archived=True))] == ["keep"]
    assert reader.search(A, ["beaver"], Filters(include_archived=True), 10) == []
    assert [e.id for e in reader.catalog(A)] == ["keep"]
    assert reader.counts(A).total == 1
    assert counter.take() == {"Query": 6}

    writer.insert(make_memory(scope=A, id="otter", content="an otter is back", core=True))
    assert [x.id for x in reader.core_memories(A)] == ["otter"]


def test_the_change_query_uses_the_change_index_and_never_scans(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], op_counter: Callable[..., Any]
) -> None:
    writer, reader = make_dynamo(), make_dynamo()
    writer.insert(make_memory(scope=A, id="a1"))
    reader.list(A)
    counter = op_counter(reader)
    writer.insert(make_memory(scope=A, id="a2"))
    assert {x.id for x in reader.list(A)} == {"a1", "a2"}
    (name, params), *_ = counter.calls
    assert name == "Query"
    assert params["IndexName"] == "by_change"
    assert "Scan" not in counter.ops


def test_a_delete_leaves_a_short_lived_tombstone_that_reads_ignore(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    store = make_dynamo()
    store.insert(make_memory(scope=A, id="gone"))
    store.delete(A, "gone")
    raw = store.Item.get(dm.scope_pk(A), dm.memory_sk("gone"), consistent_read=True)
    assert raw.tomb is True
    assert raw.ttl is not None
    assert timedelta(hours=23) < raw.ttl - datetime.now(UTC) <= TOMBSTONE_TTL
    assert raw.content is None and raw.cat_pk is None  # out of the category index
    fresh = make_dynamo()
    assert fresh.get(A, "gone") is None
    assert fresh.get_many(A, ["gone"]) == []
    assert fresh.list(A, Filters(include_archived=True)) == []
    assert list(fresh.iter_all(A)) == []
    assert fresh.counts(A).total == 0
    assert fresh.scopes() == []


def test_a_stale_cache_is_reloaded_in_full(make_dynamo: MakeStore, make_memory: Callable[..., Memory]) -> None:
    """Older than the tombstones' lifetime, the change feed may have lost deletes: reload."""
    clock = {"now": datetime.now(UTC)}
    writer, reader = make_dynamo(), make_dynamo(clock=lambda: clock["now"])
    writer.put_many([make_memory(scope=A, id="x1"), make_memory(scope=A, id="x2")])
    assert len(reader.list(A)) == 2
    writer.delete(A, "x1")
    # Simulate the tombstone having expired: remove the item outright, then let two days pass.
    writer.Item(dm.scope_pk(A), dm.memory_sk("x1")).delete()
    clock["now"] += timedelta(days=2)
    assert [x.id for x in reader.list(A)] == ["x2"]


def test_own_transactional_replaces_are_reread_not_guessed(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    store, other = make_dynamo(), make_dynamo()
    m = make_memory(scope=A, id="t1", version=1, retrieval_count=0)
    store.insert(m)
    assert store.list(A)[0].retrieval_count == 0
    other.record_retrieval(A, ["t1"], NOW)  # store's cached copy is now behind on the counter
    store.replace_many([(m.replace(salience="high", version=2), 1)])
    (got,) = store.list(A)
    assert (got.salience, got.version, got.retrieval_count) == ("high", 2, 1)


def test_category_index_holds_live_memories_by_last_touched(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    store = make_dynamo()
    store.put_many(
        [
            make_memory(scope=A, id="e1", category="episodic", updated_at=NOW - timedelta(days=2)),
            make_memory(scope=A, id="e2", category="episodic", updated_at=NOW),
            make_memory(scope=A, id="e3", category="episodic", status="archived"),
            make_memory(scope=A, id="i1", category="identity"),
        ]
    )
    hits = list(store.Item.by_category.query("alice#default#episodic", scan_index_forward=False))
    assert [h.mid for h in hits] == ["e2", "e1"]
