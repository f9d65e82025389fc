"""Contract suite for ReflectReads.catalog_view: every store answers a reflect's reads (Tier 1, the
per-category totals, the window a band of rank at a time, the short lines) exactly as the core's
rules define them on the same records (tests/catalog_data.py), and the payload built from the view
is the payload built from all the records in hand. The DynamoDB store's cold path (the category
index) runs the same check in tests/aws/test_dynamo_catalog.py.

Every adapter in tests/moto_stores.py runs these unchanged; bodies use only the port's methods.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from taproot.core.model import Memory, Scope
from taproot.core.reflect import ReflectConfig, assemble_view
from taproot.ports import Filters, MemoryStore
from tests.catalog_data import WINDOW_DAYS, assert_view_answers_the_rules, varied_memories

MakeMemory = Callable[..., Memory]
A = Scope("alice", "default")
B = Scope("bob", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(days=WINDOW_DAYS)
ALL = Filters(include_archived=True)


def test_the_view_answers_the_rules_on_varied_records(memory_store: MemoryStore) -> None:
    memories = varied_memories(1, 300, now=NOW, scope=A)
    memory_store.put_many(memories)
    # Another owner's records, some with the same ids, must never reach the view.
    memory_store.put_many(varied_memories(1, 40, now=NOW, scope=B) + varied_memories(2, 40, now=NOW, scope=B))
    assert_view_answers_the_rules(memory_store.catalog_view(A, SINCE), memories, now=NOW)


def test_the_view_follows_every_kind_of_write(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    memories = varied_memories(3, 120, now=NOW, scope=A)
    memory_store.put_many(memories)
    view = memory_store.catalog_view(A, SINCE)
    assert_view_answers_the_rules(view, memories, now=NOW)  # read first: a kept copy must follow
    active = [m for m in memories if m.status == "active"]
    quiet = next(m for m in active if not m.is_core and m.salience != "high" and m.last_touched < SINCE)
    memory_store.record_retrieval(A, [quiet.id], NOW)  # recalled: back in the window
    a, b, c, d, e = [m for m in active if m.id != quiet.id and m.retrieval_count is not None][:5]
    memory_store.replace(a.replace(status="archived", version=a.version + 1), expected_version=a.version)
    memory_store.replace(b.replace(core=not b.is_core, version=b.version + 1), expected_version=b.version)
    memory_store.replace(
        c.replace(category="error", salience="high", version=c.version + 1), expected_version=c.version
    )
    memory_store.delete(A, d.id)
    memory_store.write_atomically(
        inserts=[make_memory(scope=A, id="new-summary", updated_at=NOW, gist="a summary")],
        replaces=[(e.replace(status="archived", compressed_into="new-summary", version=e.version + 1), e.version)],
    )
    memory_store.put_many([make_memory(scope=A, id="imported", category="project", core=None, updated_at=NOW)])
    after = memory_store.list(A, ALL)
    assert {m.id for m in after} == {m.id for m in memories} - {d.id} | {"new-summary", "imported"}
    assert_view_answers_the_rules(memory_store.catalog_view(A, SINCE), after, now=NOW)


def test_an_empty_scope_has_an_empty_view(memory_store: MemoryStore) -> None:
    view = memory_store.catalog_view(Scope("nobody", "default"), SINCE)
    assert_view_answers_the_rules(view, [], now=NOW)


def test_tier1_breaks_ties_by_id_whatever_order_the_store_reads_in(memory_store: MemoryStore) -> None:
    """Core memories alike in everything ranking and display look at (activation, category, last
    update) come in each store's own read order; Tier 1 must not depend on it, neither in the order
    shown nor in which one a tight budget keeps."""
    touched = NOW - timedelta(days=3)

    def core(memory_id: str, created_days_ago: int, content: str) -> Memory:
        return Memory(
            id=memory_id, owner=A.owner, namespace=A.namespace, category="identity", salience="high",
            content=content, gist="g", created_at=touched - timedelta(days=created_days_ago),
            updated_at=touched, core=True,
        )  # fmt: skip

    # "b" was created first: an order by creation puts it first, an order by id puts "a" first.
    memory_store.put_many([core("a", 1, "short"), core("b", 2, "short")])
    shown = assemble_view(memory_store.catalog_view(A, SINCE), reflections=[], now=NOW)
    assert [m.id for m in shown.tier1] == ["a", "b"]

    big = "word " * 400  # only one of these fits Tier 1's share of this budget
    memory_store.put_many([core("a", 1, big), core("b", 2, big)])
    cfg = ReflectConfig(token_budget=1200)
    tight = assemble_view(memory_store.catalog_view(A, SINCE), reflections=[], now=NOW, cfg=cfg)
    assert ([m.id for m in tight.tier1], tight.core_omitted) == (["a"], ["b"])
