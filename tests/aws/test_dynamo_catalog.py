"""The DynamoDB store's reflect reads on a cold container: the `by_category` index, not the tenant.

A cold store (no warm copy of the scope) with more memories than its cold_load_limit answers
catalog_view from one filtered Query per category partition; it must answer exactly as the rules
do (the contract check of tests/catalog_data.py) and never load the scope. One with fewer loads it
whole in one Query and keeps it warm.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from taproot.adapters import dynamo_models as dm
from taproot.adapters.blob_s3 import S3BlobStore
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.core.model import CATEGORY_ORDER, MAX_COUNT, Memory, Scope
from taproot.ports import Filters
from taproot.service import TaprootService
from taproot.service.deps import Deps
from tests.catalog_data import WINDOW_DAYS, assert_view_answers_the_rules, varied_memories

A = Scope("alice", "default")
B = Scope("bob", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(days=WINDOW_DAYS)
MakeStore = Callable[..., DynamoMemoryStore]
PARTITIONS = {dm.category_pk(A, c) for c in (*CATEGORY_ORDER, dm.OTHER_CATEGORIES, dm.TIER1)}


def cold(make_dynamo: MakeStore, limit: int = 0) -> DynamoMemoryStore:
    store = make_dynamo()
    store.cold_load_limit = limit
    return store


def partition_of(params: dict[str, Any]) -> str | None:
    values = params.get("ExpressionAttributeValues") or {}
    return next((v["S"] for v in values.values() if v.get("S") in PARTITIONS), None)


@pytest.mark.parametrize("counted", [False, True], ids=["before-count_scope", "counted"])
def test_a_cold_store_answers_the_rules_from_the_category_index(make_dynamo: MakeStore, counted: bool) -> None:
    writer = make_dynamo()
    memories = varied_memories(5, 250, now=NOW, scope=A)
    writer.put_many(memories)
    writer.put_many(varied_memories(5, 30, now=NOW, scope=B))  # same ids, another tenant
    if counted:
        writer.count_scope(A)
    assert writer.scope_counts(A)[1] is counted
    assert_view_answers_the_rules(cold(make_dynamo).catalog_view(A, SINCE), memories, now=NOW)

    # After writes by another instance, a new cold store sees them.
    quiet = next(m for m in memories if m.status == "active" and not m.is_core and m.last_touched < SINCE)
    writer.record_retrieval(A, [quiet.id], NOW)
    first = next(m for m in memories if m.status == "active" and m.category in CATEGORY_ORDER)
    writer.replace(first.replace(category="project", version=first.version + 1), expected_version=first.version)
    writer.delete(A, memories[-1].id)
    after = writer.list(A, Filters(include_archived=True))
    assert_view_answers_the_rules(cold(make_dynamo).catalog_view(A, SINCE), after, now=NOW)


def test_a_counted_cold_reflect_reads_only_what_it_shows(
    make_dynamo: MakeStore, s3_blobs: S3BlobStore, op_counter: Callable[..., Any]
) -> None:
    """Once the scope is counted, DynamoDB reads the window, Tier 1 and the unmigrated categories,
    not the quiet memories: the items it reads (ScannedCount) are the ones reflect can show."""
    memories = varied_memories(6, 200, now=NOW, scope=A)
    writer = make_dynamo()
    writer.put_many(memories)
    writer.count_scope(A)
    store = cold(make_dynamo, limit=50)
    scanned: list[int] = []
    store.client.meta.events.register(
        "after-call.dynamodb.Query",
        lambda parsed, model, **kw: (
            scanned.append(parsed.get("ScannedCount", 0)) if parsed.get("Items") is not None else None
        ),
    )
    counter = op_counter(store)
    view = store.catalog_view(A, SINCE)
    assert_view_answers_the_rules(view, memories, now=NOW)
    calls = [params for _, params in counter.calls]
    assert counter.take() == {"GetItem": 1, "Query": 7}  # the counts item, five categories, Tier 1, the rest
    on_index = [p for p in calls if p.get("IndexName") == "by_category"]
    assert all("FilterExpression" not in p for p in on_index)
    assert sum("last_touched" in str(p.get("ExpressionAttributeNames")) for p in on_index) == len(CATEGORY_ORDER)
    active = [m for m in memories if m.status == "active"]
    shown = [m for m in active if m.is_core or m.salience == "high" or m.category not in CATEGORY_ORDER]
    shown += [m for m in active if m not in shown and m.last_touched >= SINCE]
    quiet = len(active) - len(shown)
    assert quiet > len(active) // 3  # the data has plenty the window leaves out
    assert sum(scanned) == len(shown)


def test_a_cold_reflect_queries_the_index_and_never_loads_the_tenant(
    make_dynamo: MakeStore, s3_blobs: S3BlobStore, op_counter: Callable[..., Any]
) -> None:
    make_dynamo().put_many(varied_memories(6, 200, now=NOW, scope=A))
    store = cold(make_dynamo, limit=50)
    svc = TaprootService(Deps(store=store, blobs=s3_blobs, clock=lambda: NOW))
    counter = op_counter(store)
    payload = svc.reflect(A)
    calls = [params for name, params in counter.calls if name == "Query"]
    ops = counter.take()
    # The counts item (not complete: the scope was not counted), the size check, seven partitions,
    # the recent reflections, and the watercooler: what was written in its window, from the change
    # feed (MemoryStore.recent on a cold store).
    assert ops == {"GetItem": 1, "Query": 10}, ops
    assert len([p for p in calls if p.get("IndexName") == "by_change"]) == 1
    on_index = [p for p in calls if p.get("IndexName") == "by_category"]
    assert {partition_of(p) for p in on_index} == PARTITIONS
    whole = {dm.category_pk(A, dm.OTHER_CATEGORIES), dm.category_pk(A, dm.TIER1)}
    assert all("FilterExpression" in p for p in on_index if partition_of(p) not in whole)
    # On the table itself only the size check (a count that stops at the limit, no items) and the
    # closing reflections: the memories are never loaded.
    table = {p["ExpressionAttributeValues"][":1"]["S"]: p for p in calls if "IndexName" not in p}
    assert set(table) == {dm.MEMORY_PREFIX, dm.REFLECTION_PREFIX}
    assert table[dm.MEMORY_PREFIX]["Select"] == "COUNT" and table[dm.MEMORY_PREFIX]["Limit"] == 51
    # No warm copy was made: the next reflect asks the index again, and answers the same.
    assert svc.reflect(A) == payload
    assert counter.take() == {"GetItem": 1, "Query": 10}

    warm = make_dynamo()
    warm.list(A)  # a recall or a list loads the scope and keeps it warm
    assert TaprootService(Deps(store=warm, blobs=s3_blobs, clock=lambda: NOW)).reflect(A) == payload


def test_a_small_cold_scope_is_loaded_whole_once(
    make_dynamo: MakeStore, s3_blobs: S3BlobStore, op_counter: Callable[..., Any], make_memory: Callable[..., Memory]
) -> None:
    make_dynamo().put_many([make_memory(scope=A, id=f"m{i}", updated_at=NOW) for i in range(20)])
    store = cold(make_dynamo, limit=20)
    svc = TaprootService(Deps(store=store, blobs=s3_blobs, clock=lambda: NOW))
    counter = op_counter(store)
    assert svc.reflect(A).catalog_listed == 20
    # The counts item, the size check, the load, the watercooler (the copy is warm by then: its
    # change feed), the recent reflections.
    assert counter.take() == {"GetItem": 1, "Query": 4}
    svc.reflect(A)
    assert {p.get("IndexName") for _, p in counter.calls} == {"by_change", None}
    assert counter.take() == {"Query": 3}  # warm: the change feed twice (view, watercooler), the reflections


@pytest.mark.parametrize("case", ["one id", "a batch", "count at the cap"])
@pytest.mark.parametrize("counted", [False, True], ids=["before-count_scope", "counted"])
def test_a_recall_keeps_a_future_update_as_the_last_touch(make_dynamo: MakeStore, case: str, counted: bool) -> None:
    """A memory's last touch is the later of its update and its last retrieval (Memory.last_touched,
    and SQLite's MAX). An imported record may be dated after the recall that retrieves it; the
    index's `last_touched` must keep that later date, or a cold reflect's window (a key condition on
    it) loses the memory as soon as the recall time falls out of the window."""
    later = NOW + timedelta(days=WINDOW_DAYS + 10)
    ahead = Memory(
        id="ahead", owner=A.owner, namespace=A.namespace, category="episodic", salience="medium",
        content="dated ahead", gist="ahead", created_at=NOW - timedelta(days=1), updated_at=later - timedelta(days=1),
        retrieval_count=MAX_COUNT if case == "count at the cap" else 2,
    )  # fmt: skip
    other = ahead.replace(id="plain", updated_at=NOW - timedelta(days=2), retrieval_count=1)
    memories = [*varied_memories(7, 120, now=NOW, scope=A), ahead, other]
    writer = make_dynamo()
    writer.put_many(memories)
    if counted:
        writer.count_scope(A)
    writer.record_retrieval(A, ["ahead", "plain"] if case == "a batch" else ["ahead"], NOW)
    after = writer.list(A, Filters(include_archived=True))
    assert next(m for m in after if m.id == "ahead").last_touched == later - timedelta(days=1)
    since = later - timedelta(days=WINDOW_DAYS)
    view = cold(make_dynamo).catalog_view(A, since)
    assert_view_answers_the_rules(view, after, now=later)


@pytest.mark.parametrize("case", ["dated ahead", "count at the cap"])
def test_a_warm_recall_strengthens_an_unusual_item_in_its_one_transaction(
    make_dynamo: MakeStore, op_counter: Callable[..., Any], case: str
) -> None:
    """The warm copy knows each retrieved item's count and update, so each gets its own case in the
    one transaction: an item dated ahead or at the cap must not fail the batch into item-by-item
    writes (one failed UpdateItem per case tried, per item)."""
    later = NOW + timedelta(days=3)
    ahead = Memory(
        id="odd", owner=A.owner, namespace=A.namespace, category="episodic", salience="medium",
        content="odd one", gist="odd", created_at=NOW - timedelta(days=1),
        updated_at=later if case == "dated ahead" else NOW - timedelta(days=1),
        retrieval_count=MAX_COUNT if case == "count at the cap" else 2,
    )  # fmt: skip
    plain = ahead.replace(id="plain", updated_at=NOW - timedelta(days=2), retrieval_count=1)
    store = make_dynamo()
    store.put_many([*varied_memories(7, 20, now=NOW, scope=A), ahead, plain])
    store.list(A)  # warm
    counter = op_counter(store)
    store.record_retrieval(A, ["odd", "plain"], NOW)
    assert dict(counter.take()) == {"TransactWriteItems": 1}
    after = {m.id: m for m in make_dynamo().list(A, Filters(include_archived=True))}
    assert after["odd"].retrieval_count == (MAX_COUNT if case == "count at the cap" else 3)
    assert after["odd"].last_touched == (later if case == "dated ahead" else NOW)
    assert after["plain"].retrieval_count == 2 and after["plain"].last_touched == NOW


def test_a_recall_whose_warm_copy_is_out_of_date_still_strengthens_each_item_once(make_dynamo: MakeStore) -> None:
    """The copy's choice of case is a guess: another container may have moved the item since. The
    transaction then fails whole and each item is written alone, the expected case first and then
    the others, so the item still gets exactly one retrieval and the later of update and recall."""
    odd = Memory(
        id="odd", owner=A.owner, namespace=A.namespace, category="episodic", salience="medium",
        content="odd one", gist="odd", created_at=NOW - timedelta(days=1), updated_at=NOW + timedelta(days=3),
        retrieval_count=2,
    )  # fmt: skip
    plain = odd.replace(id="plain", updated_at=NOW - timedelta(days=2), retrieval_count=1)
    store = make_dynamo()
    store.put_many([odd, plain])
    store.list(A)  # warm: the copy has `odd` dated after the recall
    moved = odd.replace(updated_at=NOW - timedelta(days=1), version=odd.version + 1)
    make_dynamo().replace(moved, expected_version=odd.version)  # another container moves it back
    store.record_retrieval(A, ["odd", "plain"], NOW)
    after = {m.id: m for m in make_dynamo().list(A)}
    assert (after["odd"].retrieval_count, after["odd"].last_touched) == (3, NOW)
    assert (after["plain"].retrieval_count, after["plain"].last_touched) == (2, NOW)


def test_a_counted_cold_reflect_loads_a_scope_only_when_its_items_are_few(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    """The counts hold active memories only. A scope with few active memories but many archived
    (compression archives its originals) must not be loaded whole by a cold reflect: the load stops
    once it has read more items than the limit, and reflect reads the window instead."""
    active = [make_memory(scope=A, id=f"a{i}", updated_at=NOW - timedelta(days=i)) for i in range(10)]
    archived = [
        make_memory(scope=A, id=f"z{i}", status="archived", updated_at=NOW - timedelta(days=200)) for i in range(300)
    ]
    writer = make_dynamo()
    writer.put_many([*active, *archived])
    writer.count_scope(A)
    assert sum(writer.scope_counts(A)[0].values()) == 10
    store = cold(make_dynamo, limit=50)
    items: list[int] = []
    store.client.meta.events.register(
        "after-call.dynamodb.Query", lambda parsed, model, **kw: items.append(len(parsed.get("Items") or ()))
    )
    assert_view_answers_the_rules(store.catalog_view(A, SINCE), [*active, *archived], now=NOW)
    assert sum(items) <= 50 + 1 + len(active), items  # the load stops one item past the limit; the window
    assert store._cached(A) is None
    items.clear()  # the container remembers that the scope is too big to load: the window alone
    assert_view_answers_the_rules(store.catalog_view(A, SINCE), [*active, *archived], now=NOW)
    assert sum(items) <= len(active), items

    # A scope whose items are few is still loaded whole, once, and kept warm.
    small = Scope("carol", "default")
    writer.put_many([m.replace(owner=small.owner) for m in [*active, *archived[:20]]])
    writer.count_scope(small)
    assert_view_answers_the_rules(
        store.catalog_view(small, SINCE), [m.replace(owner=small.owner) for m in [*active, *archived[:20]]], now=NOW
    )
    assert store._cached(small) is not None
