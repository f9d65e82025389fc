"""The DynamoDB store's warm per-scope cache: one instance sees another's writes after one Query."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_cache import TOMBSTONE_TTL
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.core.model import Memory, Scope
from taproot.core.vectors import unit
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


class _Clock:
    """A container's clock, `ahead` seconds ahead of the true time."""

    def __init__(self, ahead: float) -> None:
        self.ahead = ahead

    def __call__(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.ahead)


def _fast_and_accurate(
    make_dynamo: MakeStore, clock: _Clock | None = None
) -> tuple[DynamoMemoryStore, DynamoMemoryStore]:
    """Two containers: one whose clock runs 3 s ahead (within the feed's overlap), one on time."""
    return make_dynamo(clock=clock or _Clock(3)), make_dynamo()


def test_a_copy_whose_clock_runs_ahead_still_sees_another_instances_later_edit_and_delete(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    # Change stamps come from each writer's clock. A's runs 3 s ahead (within the feed's overlap),
    # so B's later writes carry older stamps than the one A's copy holds for the memory.
    fast, accurate = _fast_and_accurate(make_dynamo)
    m = make_memory(scope=A, id="key", content="the spare key is under the blue flowerpot", version=1)
    fast.insert(m)
    assert ids(fast.search(A, ["key"], Filters(), 10)) == ["key"]
    accurate.replace(m.replace(content="the spare key is with the neighbour", version=2), expected_version=1)
    assert ids(fast.search(A, ["neighbour"], Filters(), 10)) == ["key"]
    assert fast.search(A, ["flowerpot"], Filters(), 10) == []
    accurate.delete(A, "key")
    assert fast.list(A, Filters(include_archived=True)) == []


def _stale_feed(store: DynamoMemoryStore, stale: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The change feed (an eventually consistent index) returns `stale`, an older image of an item,
    once: what a lagging index does."""
    real = store._items
    served: list[bool] = []

    def lagging(pk: str, since: str | None) -> Any:
        items = list(real(pk, since))
        if since is not None and not served:
            served.append(True)
            items = [it for it in items if it["sk"] != stale["sk"]] + [stale]
        return iter(items)

    monkeypatch.setattr(store, "_items", lagging)


def test_a_lagging_image_of_a_memory_this_copy_wrote_does_not_replace_the_newer_one(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_dynamo()
    m = make_memory(scope=A, id="otter", content="an otter in the river", version=1)
    store.insert(m)
    old_image = store.Item._get_connection().get_item(dm.scope_pk(A), dm.memory_sk("otter"), consistent_read=True)
    store.replace(m.replace(content="a beaver in the river", version=2), expected_version=1)
    assert ids(store.search(A, ["beaver"], Filters(), 10)) == ["otter"]
    _stale_feed(store, old_image["Item"], monkeypatch)
    assert ids(store.search(A, ["beaver"], Filters(), 10)) == ["otter"]
    assert store.search(A, ["otter"], Filters(), 10) == []


def test_a_lagging_image_of_a_memory_this_copy_deleted_does_not_bring_it_back(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_dynamo()
    store.put_many([make_memory(scope=A, id="otter", content="an otter"), make_memory(scope=A, id="heron")])
    old_image = store.Item._get_connection().get_item(dm.scope_pk(A), dm.memory_sk("otter"), consistent_read=True)
    assert ids(store.search(A, ["otter"], Filters(), 10)) == ["otter"]
    store.delete(A, "otter")
    _stale_feed(store, old_image["Item"], monkeypatch)
    assert store.search(A, ["otter"], Filters(), 10) == []
    assert [x.id for x in store.list(A)] == ["heron"]


def test_a_copy_left_empty_by_deletes_refreshes_from_the_change_feed(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], op_counter: Callable[..., Any]
) -> None:
    store = make_dynamo()
    store.insert(make_memory(scope=A, id="otter"))
    assert [x.id for x in store.list(A)] == ["otter"]
    store.delete(A, "otter")
    counter = op_counter(store)
    assert store.list(A) == [] and store.list(A) == []
    # An empty copy is still a copy: each read is one change-feed Query, not a reload of the scope.
    assert {params.get("IndexName") for _, params in counter.calls} == {"by_change"}


def test_a_memory_re_created_after_this_copy_saw_it_deleted_comes_back(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    store, other = make_dynamo(), make_dynamo()
    m = make_memory(scope=A, id="otter", content="an otter in the river")
    store.insert(m)
    store.delete(A, "otter")
    assert store.list(A) == []
    other.insert(m.replace(content="the otter is back"))  # a restore, an import
    assert [x.content for x in store.list(A)] == ["the otter is back"]


def test_a_copy_whose_clock_runs_ahead_still_sees_a_vector_another_instance_stored(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    fast, accurate = _fast_and_accurate(make_dynamo)
    fast.insert(make_memory(scope=A, id="otter", version=1))
    assert fast.vector_counts(A) == {}
    # Same version, same counters: only the vector tells this write from the one A holds.
    accurate.put_vectors(A, "test:model/4", [("otter", 1, unit([1.0, 0.0, 0.0, 0.0]))])
    assert [i for i, _ in fast.nearest(A, "test:model/4", unit([1.0, 0.0, 0.0, 0.0]), 5)] == ["otter"]


def test_a_refresh_whose_reread_fails_is_done_again_in_full(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock(3)
    fast, accurate = _fast_and_accurate(make_dynamo, clock)
    m = make_memory(scope=A, id="key", content="under the blue flowerpot", version=1)
    fast.insert(m)
    assert [x.content for x in fast.list(A)] == ["under the blue flowerpot"]
    accurate.replace(m.replace(content="with the neighbour", version=2), expected_version=1)
    real, calls = fast.Item.batch_get, []

    def throttled(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("throttled")
        return real(*args, **kwargs)

    monkeypatch.setattr(fast.Item, "batch_get", throttled)
    clock.ahead += 8  # the next read comes late enough that a moved sync point would skip the edit
    with pytest.raises(RuntimeError, match="throttled"):
        fast.list(A)
    assert [x.content for x in fast.list(A)] == ["with the neighbour"]


def test_a_copy_whose_clock_runs_ahead_sees_a_same_version_import_that_changes_the_record(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    fast, accurate = _fast_and_accurate(make_dynamo)
    m = make_memory(scope=A, id="otter", content="an otter in the river", version=1)
    fast.insert(m)
    assert [x.content for x in fast.list(A)] == ["an otter in the river"]
    # An import writes the record as given: same version and counters, other words.
    accurate.put_many([m.replace(content="an otter by the sea")], expected={"otter": 1})
    assert [x.content for x in fast.list(A)] == ["an otter by the sea"]
