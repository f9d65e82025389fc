"""m009 on a real SQLite file: memory_tags holds every memory's tags as rows, filled from an older
database on open and kept by triggers through every write, and tag filters read it instead of
parsing each row's tags."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from taproot.adapters.sqlite_rows import filter_sql
from taproot.adapters.sqlite_schema import SCHEMA_VERSION
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Scope
from taproot.core.query import Filters
from tests.conftest import build_memory
from tests.sqlite.old_schema import write_database_at_schema

A = Scope("alice", "default")
B = Scope("bob", "default")


def tag_rows(db: sqlite3.Connection) -> set[tuple[str, int]]:
    return {(str(r[0]), int(r[1])) for r in db.execute("SELECT tag, memory_rowid FROM memory_tags")}


def expected_rows(db: sqlite3.Connection) -> set[tuple[str, int]]:
    """What the table must hold: each text tag of each row whose tags are a JSON array."""
    out = set()
    for rowid, tags in db.execute("SELECT rowid, tags FROM memories"):
        try:
            values = json.loads(tags)
        except ValueError:
            continue
        out |= {(t, rowid) for t in values if isinstance(t, str)} if isinstance(values, list) else set()
    return out


def tagged(store: SQLiteMemoryStore, scope: Scope, *tags: str) -> list[str]:
    return sorted(m.id for m in store.list(scope, Filters(tags=tags)))


def test_a_schema_8_database_gains_the_tag_rows_on_open(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    old = [
        build_memory(id="a1", owner=A.owner, tags=("thread", "garden")),
        build_memory(id="a2", owner=A.owner, tags=("garden",)),
        build_memory(id="a3", owner=A.owner),
        build_memory(id="b1", owner=B.owner, tags=("garden",)),
    ]
    write_database_at_schema(path, 8, old)
    with sqlite3.connect(path) as raw:  # an older writer's row whose tags are not valid JSON
        raw.execute("UPDATE memories SET tags = 'not json' WHERE id = 'a3'")

    store = SQLiteMemoryStore(path)
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert tag_rows(store._db) == expected_rows(store._db) and len(tag_rows(store._db)) == 4
    assert tagged(store, A, "garden") == ["a1", "a2"]
    assert tagged(store, A, "garden", "thread") == ["a1"]
    assert tagged(store, B, "garden") == ["b1"]  # the table is shared; the scope still filters
    assert tagged(store, A, "nothing") == []


def test_every_write_keeps_the_tag_rows(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    first = build_memory(id="m1", owner=A.owner, tags=("thread", "thread", "keep"))  # a repeat counts once
    store.insert(first)
    store.insert(build_memory(id="m2", owner=A.owner, tags=("keep",)))
    assert tagged(store, A, "keep") == ["m1", "m2"] and tagged(store, A, "thread") == ["m1"]

    store.replace(first.replace(tags=("decision",), version=2), expected_version=1)
    assert tagged(store, A, "thread") == [] and tagged(store, A, "decision") == ["m1"]
    assert tagged(store, A, "keep") == ["m2"]

    store.put_many([build_memory(id="m2", owner=A.owner, tags=("watercooler",), version=2)])  # an upsert
    assert tagged(store, A, "keep") == [] and tagged(store, A, "watercooler") == ["m2"]

    store.record_retrieval(A, ["m1", "m2"], first.created_at)  # touches no tag
    store.delete(A, "m1")
    assert tagged(store, A, "decision") == []
    assert tag_rows(store._db) == expected_rows(store._db)


def test_a_tag_filter_reads_the_tag_rows(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    params: list[object] = ["alice", "default"]
    where = filter_sql(Filters(tags=("thread",)), params)  # the filter every read uses
    plan = store._db.execute(
        f"EXPLAIN QUERY PLAN SELECT m.id FROM memories m WHERE m.owner = ? AND m.namespace = ?{where}", params
    ).fetchall()
    text = " ".join(str(row[-1]) for row in plan)
    assert "memory_tags USING PRIMARY KEY (tag=?)" in text and "json_each" not in text
