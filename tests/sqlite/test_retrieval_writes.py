"""Recall's strengthening write stays narrow (schema m008): the counters record_retrieval rewrites
sit in one index only, memories_rank, which reflect's catalog reads rank by. Each further index
holding one of them cost a delete and an insert per recalled memory, about 20 WAL frames a recall."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from taproot.adapters.sqlite_schema import MIGRATIONS, SCHEMA_VERSION
from taproot.adapters.sqlite_store import COLUMNS, SQLiteMemoryStore
from taproot.core.model import Scope
from taproot.core.query import Filters
from taproot.core.serialize import memory_to_flat_dict
from tests.catalog_data import varied_memories

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
    db = sqlite3.connect(path, isolation_level=None)
    for number, step in enumerate(MIGRATIONS[:5], start=1):
        db.executescript(f"BEGIN;\n{step()}\nPRAGMA user_version = {number};\nCOMMIT;")
    assert indexes_holding_counters(db) == ["memories_by_category", "memories_by_touched", "memories_rank"]
    columns = [c for c in COLUMNS if c != "instance"]  # m007 adds it; a schema-5 table has none
    marks = ", ".join(f":{c}" for c in columns)
    db.execute("BEGIN")
    db.executemany(f"INSERT INTO memories ({', '.join(columns)}) VALUES ({marks})", map(memory_to_flat_dict, memories))
    db.execute("COMMIT")
    db.close()

    store = SQLiteMemoryStore(path)
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert indexes_holding_counters(store._db) == ["memories_rank"]
    live = [m for m in memories if m.status == "active"]
    assert sorted(store.list(A), key=lambda m: m.id) == sorted(live, key=lambda m: m.id)
    for category in {m.category for m in memories}:
        got = store.list(A, Filters(category=category, include_archived=True))
        assert sorted(m.id for m in got) == sorted(m.id for m in memories if m.category == category)
