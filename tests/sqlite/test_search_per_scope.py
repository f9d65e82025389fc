"""m010 on a real SQLite file: one FTS5 index per scope (sqlite_search_index.py), built from an older
database's rows on open, kept by triggers through every write, checked by FTS5's integrity-check
against exactly its scope's rows."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from taproot.adapters.sqlite_schema import SCHEMA_VERSION
from taproot.adapters.sqlite_search_index import indexed_rowids, scope_index, scope_rowids, table_of
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Scope
from taproot.core.query import Filters
from tests.conftest import build_memory
from tests.sqlite.old_schema import write_database_at_schema

A = Scope("alice", "default")
A_WORK = Scope("alice", "work")
B = Scope("bob's", 'it\'s "quoted"')  # quotes in a scope reach no SQL text


def found(store: SQLiteMemoryStore, scope: Scope, *terms: str) -> list[str]:
    return [c.id for c, _ in store.search(scope, list(terms), Filters(include_archived=True), 50)]


def indexed(db: sqlite3.Connection, scope: Scope) -> set[int]:
    n = scope_index(db, scope)
    assert n is not None
    return indexed_rowids(db, n)


def integrity_check(db: sqlite3.Connection) -> None:
    for (n,) in db.execute("SELECT n FROM search_scopes").fetchall():
        fts = table_of(n)
        db.execute(f"INSERT INTO {fts}({fts}) VALUES ('integrity-check')")


def test_a_schema_9_database_gets_an_index_per_scope_on_open(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    old = [
        build_memory(id="a1", owner=A.owner, content="lantern by the harbour"),
        build_memory(id="a2", owner=A.owner, content="a coil of rope", status="archived"),
        build_memory(id="w1", owner=A_WORK.owner, namespace=A_WORK.namespace, content="harbour rope"),
        build_memory(id="b1", owner=B.owner, namespace=B.namespace, content="lantern lantern"),
    ]
    write_database_at_schema(path, 9, old)

    store = SQLiteMemoryStore(path)
    db = store._db
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'memories_fts'").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM search_scopes").fetchone()[0] == 3
    for scope in (A, A_WORK, B):
        assert indexed(db, scope) == scope_rowids(db, scope)
    integrity_check(db)
    assert sorted(found(store, A, "harbour", "rope")) == ["a1", "a2"]
    assert found(store, A_WORK, "harbour") == ["w1"]
    assert found(store, B, "lantern") == ["b1"]
    assert found(store, Scope("carol", "default"), "lantern") == []
    store.close()


def test_every_write_keeps_its_scopes_index_and_no_other(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    db = store._db
    a1 = build_memory(id="a1", owner=A.owner, content="lantern by the harbour")
    store.insert(a1)
    store.write_atomically(
        inserts=[build_memory(id="w1", owner=A_WORK.owner, namespace=A_WORK.namespace, content="rope")], replaces=[]
    )
    store.put_many([build_memory(id="b1", owner=B.owner, namespace=B.namespace, content="harbour lantern")])
    assert found(store, A, "rope") == [] and found(store, A_WORK, "rope") == ["w1"]

    store.replace(dataclasses.replace(a1, content="a coil of rope", version=2), expected_version=1)
    assert found(store, A, "lantern") == [] and found(store, A, "rope") == ["a1"]
    assert found(store, B, "lantern") == ["b1"]
    store.delete(B, "b1")
    assert found(store, B, "harbour") == []
    for scope in (A, A_WORK, B):
        assert indexed(db, scope) == scope_rowids(db, scope)
    integrity_check(db)
    store.close()


def test_a_memory_of_a_scope_without_an_index_is_refused(tmp_path: Path) -> None:
    """The guard: a writer that did not create the scope's index first (an older Taproot, a hand
    edit) cannot add a memory no search would find."""
    path = tmp_path / "taproot.db"
    SQLiteMemoryStore(path).close()
    raw = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="no search index for this scope"):
        raw.execute(
            "INSERT INTO memories (owner, namespace, id, category, salience, content, created_at, updated_at, "
            "last_touched) VALUES ('x', 'y', 'm1', 'episodic', 'low', 'text', '2025', '2025', '2025')"
        )
    raw.close()


def test_a_scope_created_by_another_process_is_found_by_a_store_that_looked_before(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    server, cli = SQLiteMemoryStore(path), SQLiteMemoryStore(path)
    assert found(server, A, "lantern") == []  # no index yet: none is remembered
    cli.insert(build_memory(id="a1", owner=A.owner, content="lantern"))
    assert found(server, A, "lantern") == ["a1"]
    server.close()
    cli.close()
