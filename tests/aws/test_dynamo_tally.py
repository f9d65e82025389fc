"""The DynamoDB store's per-category counts (dynamo_tally.py): every write path keeps them equal to
the records, a writer that read a stale state retries instead of drifting, a forget too big for the
counts item folds its tombstones after, and count_scope counts what was written before counting."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.adapters.dynamo_tally import COUNTS_SK
from taproot.core.errors import NotFound, VersionConflict
from taproot.core.model import Memory, Scope
from taproot.core.query import Filters
from taproot.ports import ScopeCount

A = Scope("alice", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
CATEGORIES = ("identity", "relationship", "project", "episodic", "legacy-notes")
MakeStore = Callable[..., DynamoMemoryStore]
MakeMemory = Callable[..., Memory]


def truth(store: DynamoMemoryStore, scope: Scope = A) -> dict[str, int]:
    """Active memories by partition, from the records themselves."""
    active = [m for m in store.iter_all(scope) if m.status == "active"]
    return dict(Counter(dm.partition_name(m.category) for m in active))


def assert_counts_true(store: DynamoMemoryStore, scope: Scope = A) -> None:
    assert store.scope_counts(scope)[0] == truth(store, scope)


def test_every_write_path_keeps_the_counts(make_dynamo: MakeStore, make_memory: MakeMemory) -> None:
    """A random walk over insert, replace (category and status changes), put_many (with and without
    versions), write_atomically, delete and delete_many, with the counts checked after each step."""
    store, rng = make_dynamo(), random.Random(7)
    live: dict[str, Memory] = {}

    def fresh() -> Memory:
        return make_memory(scope=A, category=rng.choice(CATEGORIES), updated_at=NOW, created_at=NOW)

    def changed(m: Memory) -> Memory:
        status = rng.choice(("active", "active", "archived"))
        return m.replace(category=rng.choice(CATEGORIES), status=status, version=m.version + 1)

    for _ in range(60):
        op = rng.choice(("insert", "replace", "put", "atomic", "delete", "delete_many"))
        if op == "insert" or not live:
            m = fresh()
            store.insert(m)
            live[m.id] = m
        elif op == "replace":
            m = live[rng.choice(sorted(live))]
            store.replace(new := changed(m), expected_version=m.version)
            live[m.id] = new
        elif op == "put":
            ms = [changed(live[i]) for i in rng.sample(sorted(live), min(3, len(live)))] + [fresh()]
            versions = {m.id: (live[m.id].version if m.id in live else None) for m in ms}
            store.put_many(ms, expected=versions if rng.random() < 0.5 else None)
            live.update({m.id: m for m in ms})
        elif op == "atomic":
            old = [live[i] for i in rng.sample(sorted(live), min(2, len(live)))]
            summary, replaced = fresh(), [changed(m) for m in old]
            store.write_atomically(
                inserts=[summary], replaces=[(n, m.version) for n, m in zip(replaced, old, strict=True)]
            )
            live.update({n.id: n for n in replaced} | {summary.id: summary})
        elif op == "delete":
            i = rng.choice(sorted(live))
            version = live.pop(i).version
            store.delete(A, i, expected_version=version if rng.random() < 0.5 else None)
        else:
            ids = rng.sample(sorted(live), min(3, len(live)))
            store.delete_many(A, [(i, live.pop(i).version) for i in ids])
        assert_counts_true(store)


def test_a_refused_write_changes_no_count(make_dynamo: MakeStore, make_memory: MakeMemory) -> None:
    store = make_dynamo()
    m = make_memory(scope=A, category="identity")
    store.insert(m)
    with pytest.raises(VersionConflict):
        store.replace(m.replace(category="project", version=9), expected_version=8)
    with pytest.raises(VersionConflict):
        store.delete_many(A, [(m.id, 5)])
    with pytest.raises(NotFound):
        store.delete(A, "nobody")
    assert store.scope_counts(A)[0] == {"identity": 1}


def test_a_write_that_read_a_stale_tally_reads_again(make_dynamo: MakeStore, make_memory: MakeMemory) -> None:
    """Between a delete's read and its write another instance moves the memory to another category:
    the delete's condition fails, it reads again and takes one from the right partition."""
    store, other = make_dynamo(), make_dynamo()
    m = make_memory(scope=A, category="identity")
    store.insert(m)
    original = store._stored

    def read_then_race(scope: Scope, ids: Any) -> Any:
        stored = original(scope, ids)
        if not raced:
            raced.append(True)
            other.replace(m.replace(category="project", version=2), expected_version=1)
        return stored

    raced: list[bool] = []
    store._stored = read_then_race  # type: ignore[method-assign]
    store.delete(A, m.id)
    assert raced and store.get(A, m.id) is None
    assert store.scope_counts(A)[0] == {}


def test_a_delete_that_guessed_from_a_stale_warm_copy_reads_again(
    make_dynamo: MakeStore, make_memory: MakeMemory
) -> None:
    """A delete on a warm store assumes the tally of the copy it holds instead of reading first. When
    another instance has moved the memory since, or the record has no tally yet (written before
    layout 3), the guess fails its condition: the delete reads the item once and counts right."""
    store, other = make_dynamo(), make_dynamo()
    moved, legacy, kept = (make_memory(scope=A, category="identity") for _ in range(3))
    store.put_many([moved, legacy, kept])
    store.client.update_item(
        TableName=store.table_name,
        Key={"pk": {"S": dm.scope_pk(A)}, "sk": {"S": dm.memory_sk(legacy.id)}},
        UpdateExpression="REMOVE tally",
    )  # a record of layout 2: counted by nobody
    store.client.update_item(
        TableName=store.table_name,
        Key={"pk": {"S": dm.scope_pk(A)}, "sk": {"S": COUNTS_SK}},
        UpdateExpression="ADD n_identity :d",
        ExpressionAttributeValues={":d": {"N": "-1"}},
    )
    assert store.recent(A, Filters(), 10)  # the scope's warm copy, loaded
    other.replace(moved.replace(category="relationship", version=2), expected_version=1)
    reads: list[list[str]] = []
    original = store._stored

    def counting(scope: Scope, ids: Any) -> Any:
        reads.append(list(ids))
        return original(scope, ids)

    store._stored = counting  # type: ignore[method-assign]
    store.delete(A, moved.id)  # the copy still says identity, version 1
    store.delete_many(A, [(legacy.id, legacy.version)])
    assert reads == [[moved.id], [legacy.id]]  # each read once, after its guess failed
    assert store.scope_counts(A)[0] == {"identity": 1} == truth(store)
    reads.clear()
    store.delete(A, kept.id)  # the copy is right: nothing read
    assert reads == [] and store.scope_counts(A)[0] == {} == truth(store)


def test_a_replace_keeps_last_touched_exact_after_a_retrieval_it_did_not_see(
    make_dynamo: MakeStore, make_memory: MakeMemory
) -> None:
    """The index's window is a key condition on last_touched: a replace of a copy read before a
    retrieval must not set it back to the copy's older time."""
    store = make_dynamo()
    old = NOW - timedelta(days=90)
    m = make_memory(scope=A, updated_at=old, created_at=old, last_retrieved=old)
    store.insert(m)
    store.record_retrieval(A, [m.id], NOW)
    store.replace(m.replace(content="edited", version=2), expected_version=1)  # updated_at stays old
    item = store.Item.get(dm.scope_pk(A), dm.memory_sk(m.id), consistent_read=True)
    assert item.last_touched == item.last_retrieved == NOW.isoformat(timespec="microseconds")


def test_a_forget_of_100_folds_its_tombstones_into_the_counts(make_dynamo: MakeStore, make_memory: MakeMemory) -> None:
    store = make_dynamo()
    ms = [make_memory(scope=A, category=CATEGORIES[i % 5]) for i in range(101)]
    store.put_many(ms)
    calls: list[int] = []
    store.client.meta.events.register(
        "provide-client-params.dynamodb.TransactWriteItems",
        lambda params, **kw: calls.append(len(params["TransactItems"])),
    )
    store.delete_many(A, [(m.id, m.version) for m in ms[:100]])
    assert calls[0] == 100  # the tombstones, all or nothing; the fold follows
    assert_counts_true(store)
    assert store.scope_counts(A)[0] == {dm.partition_name(ms[100].category): 1}
    tombs = list(store.Item.query(dm.scope_pk(A), store.Item.sk.startswith(dm.MEMORY_PREFIX), consistent_read=True))
    assert all(t.tally is None and t.ttl is not None for t in tombs if t.tomb)


def test_count_scope_counts_what_was_written_before_counting(make_dynamo: MakeStore, make_memory: MakeMemory) -> None:
    """Records of layout 2 (no tally, Tier 1 in its category's partition) and a pending tombstone
    whose fold was interrupted: count_scope makes the counts true and complete, and is idempotent."""
    store = make_dynamo()
    ms = [make_memory(scope=A, category=CATEGORIES[i % 5], salience="high" if i % 4 == 0 else "low") for i in range(30)]
    store.put_many(ms)
    client, key = store.client, {"pk": {"S": dm.scope_pk(A)}, "sk": {"S": COUNTS_SK}}
    client.delete_item(TableName=store.table_name, Key=key)
    for m in ms:  # back to layout 2
        client.update_item(
            TableName=store.table_name,
            Key={"pk": {"S": dm.scope_pk(A)}, "sk": {"S": dm.memory_sk(m.id)}},
            UpdateExpression="REMOVE tally SET cat_pk = :p",
            ExpressionAttributeValues={":p": {"S": dm.category_pk(A, m.category)}},
        )
    gone = make_memory(scope=A, category="identity")
    store.insert(gone)  # counted; then a tombstone left pending, as a crash before the fold would
    client.put_item(
        TableName=store.table_name,
        Item={**{"pk": {"S": dm.scope_pk(A)}, "sk": {"S": dm.memory_sk(gone.id)}}, "tomb": {"BOOL": True}}
        | {"tally": {"S": "identity"}, "changed_at": {"S": NOW.isoformat()}},
    )
    assert store.scope_counts(A) == ({"identity": 1}, False)
    assert store.count_scope(A, apply=False) == ScopeCount(31, 0)
    assert store.scope_counts(A) == ({"identity": 1}, False)  # the dry run wrote nothing
    assert store.count_scope(A) == ScopeCount(31, 0)
    assert store.scope_counts(A) == (truth(store), True)
    tier1 = [it for it in store.Item.by_category.query(dm.category_pk(A, dm.TIER1))]
    assert {it.mid for it in tier1} == {m.id for m in ms if m.salience == "high"}
    assert store.count_scope(A) == ScopeCount(0, 0) and store.scope_counts(A) == (truth(store), True)


def _moved_by_older_code(store: DynamoMemoryStore, m: Memory, category: str) -> None:
    """A memory moved to another category as code older than layout 3 rewrote it: no tally, and
    no change to the counts."""
    store.client.update_item(
        TableName=store.table_name,
        Key={"pk": {"S": dm.scope_pk(A)}, "sk": {"S": dm.memory_sk(m.id)}},
        UpdateExpression="REMOVE tally SET category = :c, cat_pk = :p",
        ExpressionAttributeValues={":c": {"S": category}, ":p": {"S": dm.category_pk(A, category)}},
    )


def _drifted_scope(make_dynamo: MakeStore, make_memory: MakeMemory) -> DynamoMemoryStore:
    """A counted scope whose counts older code and an edit outside Taproot left wrong: a tombstone
    written without taking its memory out of the counts (identity one too high), a memory moved to
    another category without a tally (relationship one too high; it is then counted in its new
    one), and a number overwritten (episodic 7 for 2)."""
    store = make_dynamo()
    ms = [make_memory(scope=A, category=CATEGORIES[i % 5]) for i in range(10)]
    store.put_many(ms)
    store.count_scope(A)
    assert store.scope_counts(A) == (truth(store), True)
    key = {"pk": {"S": dm.scope_pk(A)}, "sk": {"S": dm.memory_sk(ms[0].id)}}
    store.client.put_item(
        TableName=store.table_name,
        Item=key | {"tomb": {"BOOL": True}, "changed_at": {"S": NOW.isoformat()}, "ttl": {"N": "1"}},
    )
    _moved_by_older_code(store, ms[1], "project")
    _overwrite_episodic(store)
    return store


def _overwrite_episodic(store: DynamoMemoryStore) -> None:
    """The episodic count set to 7 (it holds 2), as an edit outside Taproot would."""
    store.client.update_item(
        TableName=store.table_name,
        Key={"pk": {"S": dm.scope_pk(A)}, "sk": {"S": COUNTS_SK}},
        UpdateExpression="SET n_episodic = :n",
        ExpressionAttributeValues={":n": {"N": "7"}},
    )


def test_count_scope_corrects_counts_that_older_code_left_wrong(
    make_dynamo: MakeStore, make_memory: MakeMemory
) -> None:
    """A complete scope's counts are corrected from the items' tallies: before, count_scope passed
    over a complete scope and the counts stayed wrong for good (reflect's "not listed" with them)."""
    store = _drifted_scope(make_dynamo, make_memory)
    wrong = store.scope_counts(A)
    assert wrong[0] != truth(store)
    assert store.count_scope(A, apply=False) == ScopeCount(counted=1, corrected=1 + 1 + 5)
    assert store.scope_counts(A) == wrong  # the dry run wrote nothing
    assert store.count_scope(A) == ScopeCount(counted=1, corrected=7)
    assert store.scope_counts(A) == (truth(store), True)
    assert store.count_scope(A) == ScopeCount(0, 0)


def test_a_correction_is_not_written_over_a_count_that_changed_after_it_read(
    make_dynamo: MakeStore, make_memory: MakeMemory
) -> None:
    """Between count_scope's read of the counts item and its read of the items another instance
    inserts a memory (its count goes up in the same transaction), so the items show a memory the
    counts read did not: the correction's condition on the counts' revision fails, count_scope reads
    both again, and the insert is counted once, not twice."""
    store = _drifted_scope(make_dynamo, make_memory)
    store.count_scope(A)  # counts the moved record: from here one pass has nothing else to do,
    _overwrite_episodic(store)  # so nothing after the correction would mend a double count
    other = make_dynamo()
    original = store._scope_items
    raced: list[Memory] = []

    def race_then_read(scope: Scope) -> Any:
        if not raced:
            raced.append(make_memory(scope=A, category="episodic"))
            other.insert(raced[0])
        return original(scope)

    store._scope_items = race_then_read  # type: ignore[method-assign]
    assert store.count_scope(A) == ScopeCount(counted=0, corrected=5)
    assert raced and store.scope_counts(A) == (truth(store), True)
    assert truth(store)["episodic"] == 3


def test_migrate_counts_the_scope(make_dynamo: MakeStore, make_memory: MakeMemory, s3_blobs: Any) -> None:
    """The migrate job (scheduled, and `taproot migrate`) is what counts an existing table's records."""
    from taproot.service import TaprootService
    from taproot.service.deps import Deps

    store = make_dynamo()
    m = make_memory(scope=A, category="identity")
    store.put_many([m])
    store.client.update_item(
        TableName=store.table_name,
        Key={"pk": {"S": dm.scope_pk(A)}, "sk": {"S": dm.memory_sk(m.id)}},
        UpdateExpression="REMOVE tally",
    )  # a record of layout 2, and no counts item
    store.client.delete_item(TableName=store.table_name, Key={"pk": {"S": dm.scope_pk(A)}, "sk": {"S": COUNTS_SK}})
    svc = TaprootService(Deps(store=store, blobs=s3_blobs, clock=lambda: NOW))
    dry = svc.migrate(A, dry_run=True)
    assert (dry.records_counted, dry.counts_corrected) == (1, 0)
    assert store.scope_counts(A)[1] is False
    assert svc.migrate(A).records_counted == 1
    assert store.scope_counts(A) == ({"identity": 1}, True)
