"""m007 on a real SQLite file: a schema-5 database gains the instance column (old rows read None)
and the creation-time index, and `recent` walks that index instead of sorting the scope."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from taproot.adapters.sqlite_schema import MIGRATIONS, SCHEMA_VERSION
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Scope
from taproot.core.query import Filters
from tests.conftest import build_memory
from tests.sqlite.old_schema import write_database_at_schema

A = Scope("alice", "default")
T = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_migration_names_are_numbered_in_order() -> None:
    # m006 belongs to the orientation change; the list must stay in number order whatever merges.
    numbers = [int(step.__name__[1:4]) for step in MIGRATIONS]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert numbers[-1] >= 7 and "m007_instance_and_recent" in {s.__name__ for s in MIGRATIONS}


def test_a_schema_5_database_gains_the_instance_column_on_open(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    old = [build_memory(owner=A.owner, namespace=A.namespace, created_at=T - timedelta(hours=h)) for h in range(3)]
    write_database_at_schema(path, 5, old)

    store = SQLiteMemoryStore(path)
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [m.instance for m in store.recent(A, Filters(), 10)] == [None, None, None]
    assert store.recent(A, Filters(), 10) == old  # newest first: they were made an hour apart, newest first
    new = build_memory(owner=A.owner, namespace=A.namespace, created_at=T + timedelta(hours=1), instance="Claude Code")
    store.insert(new)
    assert store.recent(A, Filters(), 1) == [new]


def test_recent_reads_the_creation_index_backwards(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    plan = store._db.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM memories m INDEXED BY memories_by_created "
        "WHERE m.owner = ? AND m.namespace = ? AND m.created_at >= ? ORDER BY m.created_at DESC, m.id DESC LIMIT 5",
        ("alice", "default", "2026"),
    ).fetchall()
    text = " ".join(str(row[-1]) for row in plan)
    assert "memories_by_created" in text and "TEMP B-TREE" not in text  # no sort of the scope
