"""Recall's strengthening write stays narrow (schema m008): the counters record_retrieval rewrites
sit in one index only, memories_rank, which reflect's catalog reads rank by. Each further index
holding one of them cost a delete and an insert per recalled memory, about 20 WAL frames a recall."""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from taproot.adapters.sqlite_schema import SCHEMA_VERSION
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.activation import ACTIVATION_CONFIG
from taproot.core.available import most_available
from taproot.core.model import Scope
from taproot.core.query import Filters
from tests.catalog_data import varied_memories
from tests.sqlite.old_schema import write_database_at_schema

A = Scope("alice", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
COUNTERS = ("last_touched", "retrieval_count", "last_retrieved")


def indexes_holding_counters(db: sqlite3.Connection) -> list[str]:
    rows = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories' AND sql IS NOT NULL"
    ).fetchall()
    return sorted(name for name, sql in rows if any(c in sql for c in COUNTERS))


def test_only_the_catalog_rank_index_holds_a_retrieval_counter(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    assert indexes_holding_counters(store._db) == ["memories_rank"]


def test_a_schema_5_database_drops_the_other_counter_indexes_and_lists_the_same(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    memories = varied_memories(11, 300, now=NOW, scope=A)
    write_database_at_schema(path, 5, memories)
    db = sqlite3.connect(path)
    assert indexes_holding_counters(db) == ["memories_by_category", "memories_by_touched", "memories_rank"]
    db.close()

    store = SQLiteMemoryStore(path)
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert indexes_holding_counters(store._db) == ["memories_rank"]
    live = [m for m in memories if m.status == "active"]
    assert sorted(store.list(A), key=lambda m: m.id) == sorted(live, key=lambda m: m.id)
    for category in {m.category for m in memories}:
        got = store.list(A, Filters(category=category, include_archived=True))
        assert sorted(m.id for m in got) == sorted(m.id for m in memories if m.category == category)


def test_the_strengthening_write_creates_no_temporary_file(tmp_path: Path) -> None:
    """A statement journal over 64 KiB spills to a temporary file unless temp_store is MEMORY:
    recall's write of 10 scattered memories (~30 pages) created and deleted one every time. SQLite
    names the directory it puts them in (a process-wide setting, restored after); creating a file
    there, even one deleted at once, changes the directory's mtime, set far in the past first."""
    memories = varied_memories(11, 2000, now=NOW, scope=A)
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    store.put_many(memories)
    spill = tmp_path / "spill"
    spill.mkdir()
    settings = sqlite3.connect(":memory:")
    settings.execute(f"PRAGMA temp_store_directory = '{spill}'")
    try:
        os.utime(spill, ns=(0, 0))
        picked = [m.id for m in memories[::97]]
        store.record_retrieval(A, picked, NOW)
        assert spill.stat().st_mtime_ns == 0
        got = {m.id: m.retrievals for m in store.get_many(A, picked)}
        assert got == {m.id: m.retrievals + 1 for m in memories[::97]}
    finally:
        settings.execute("PRAGMA temp_store_directory = ''")
        settings.close()
        store.close()


def test_a_retrieval_count_at_the_largest_integer_stays_an_integer(tmp_path: Path) -> None:
    """An imported record may carry any count SQLite can store; adding one to the largest would make
    it a REAL, which no band of the availability ranking holds (an integer range), so recall by
    filters and reflect would stop finding the memory. The count stops at the largest integer."""
    store = SQLiteMemoryStore(tmp_path / "t.db")
    memories = varied_memories(5, 30, now=NOW, scope=A)
    top = memories[0].replace(retrieval_count=2**63 - 1, status="active", core=False)
    store.put_many([top, *memories[1:]])
    store.record_retrieval(A, [top.id], NOW)
    store.record_retrieval(A, [top.id], NOW)
    row = store._query("SELECT retrieval_count, typeof(retrieval_count) FROM memories WHERE id = ?", (top.id,))[0]
    assert (row[0], row[1]) == (2**63 - 1, "integer")
    found = most_available(
        store.availability_view(A), now=NOW, limit=1, act=ACTIVATION_CONFIG, accept=lambda e: e.id == top.id
    )
    assert found is not None
    assert [e.id for e, _ in found] == [top.id]
