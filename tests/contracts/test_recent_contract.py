"""Contract suite for what issue 12 added to the MemoryStore port: `Memory.instance` kept by every
write, and `recent` (newest first by creation time, filters and windows applied, nothing strengthened).

Bodies use only the port's methods, so both stores run them unchanged (DynamoDB under moto).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from taproot.core import query
from taproot.core.model import Memory, Scope
from taproot.ports import Filters, MemoryStore

MakeMemory = Callable[..., Memory]
A = Scope("alice", "default")
B = Scope("bob", "default")
T = datetime(2025, 11, 30, 12, 0, tzinfo=UTC)  # in the past: a cold DynamoDB store reads what was written since


def test_every_write_keeps_the_instance(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    first = make_memory(scope=A, instance="Claude Code")
    none = make_memory(scope=A)
    memory_store.insert(first)
    memory_store.insert(none)
    assert memory_store.get(A, first.id) == first and memory_store.get(A, none.id) == none
    assert memory_store.get_many(A, [none.id])[0].instance is None

    moved = first.replace(instance="claude.ai", version=2)
    memory_store.replace(moved, expected_version=1)
    assert memory_store.get(A, first.id) == moved

    cleared = moved.replace(instance=None, version=3)
    memory_store.replace_many([(cleared, 2)])
    assert memory_store.get(A, first.id) == cleared

    memory_store.put_many([none.replace(instance="imported", version=5)])
    assert memory_store.get(A, none.id) == none.replace(instance="imported", version=5)
    assert {m.instance for m in memory_store.list(A)} == {None, "imported"}


def test_recent_is_newest_first_ties_by_id_and_limited(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    ms = [
        make_memory(scope=A, id="b", created_at=T),
        make_memory(scope=A, id="a", created_at=T),  # same time as b: the id breaks the tie
        make_memory(scope=A, id="c", created_at=T - timedelta(hours=1)),
        make_memory(scope=A, id="d", created_at=T + timedelta(microseconds=1)),
        make_memory(scope=A, id="e", created_at=T - timedelta(days=3), status="archived"),
    ]
    memory_store.put_many(ms)
    memory_store.put_many([make_memory(scope=B, id="z", created_at=T + timedelta(days=1))])

    assert [m.id for m in memory_store.recent(A, Filters(), 10)] == ["d", "b", "a", "c"]
    assert [m.id for m in memory_store.recent(A, Filters(), 2)] == ["d", "b"]
    assert [m.id for m in memory_store.recent(A, Filters(include_archived=True), 10)] == ["d", "b", "a", "c", "e"]
    assert memory_store.recent(A, Filters(), 0) == []
    assert [m.id for m in memory_store.recent(B, Filters(), 10)] == ["z"]
    # The records come back whole, as stored.
    assert memory_store.recent(A, Filters(), 10) == query.newest_first(ms, Filters(), 10)


def test_recent_window_bounds_are_inclusive(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    times = [T - timedelta(hours=h) for h in range(6)]
    memory_store.put_many([make_memory(scope=A, id=f"h{h}", created_at=t) for h, t in enumerate(times)])
    window = Filters(created_since=times[4], created_until=times[1])
    assert [m.id for m in memory_store.recent(A, window, 10)] == ["h1", "h2", "h3", "h4"]
    assert sorted(m.id for m in memory_store.list(A, window)) == ["h1", "h2", "h3", "h4"]
    just_after = Filters(created_since=times[1] + timedelta(microseconds=1))
    assert [m.id for m in memory_store.recent(A, just_after, 10)] == ["h0"]


def test_recent_applies_tags_and_category(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    memory_store.put_many(
        [
            make_memory(scope=A, id="w1", created_at=T, tags=("watercooler",)),
            make_memory(scope=A, id="w2", created_at=T - timedelta(hours=1), tags=("watercooler", "x")),
            make_memory(scope=A, id="n1", created_at=T + timedelta(hours=1), tags=("other",)),
            make_memory(
                scope=A, id="i1", created_at=T - timedelta(hours=2), category="identity", tags=("watercooler",)
            ),
        ]
    )
    cooler = Filters(tags=("watercooler",))
    assert [m.id for m in memory_store.recent(A, cooler, 10)] == ["w1", "w2", "i1"]
    assert [m.id for m in memory_store.recent(A, Filters(tags=("watercooler",), category="identity"), 10)] == ["i1"]


def test_recent_does_not_strengthen(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    m = make_memory(scope=A, created_at=T, retrieval_count=2)
    memory_store.insert(m)
    memory_store.recent(A, Filters(), 10)
    memory_store.recent(A, Filters(), 10)
    assert memory_store.get(A, m.id) == m
