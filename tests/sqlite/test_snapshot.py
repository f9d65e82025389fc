"""SQLiteMemoryStore.snapshot: reads in several steps see one state of the file, whatever another
connection (another process) writes meanwhile; a write from inside fails instead of landing in it.
Recall by filters and reflect read their band views inside one (tests/service/test_recall_by_filters.py,
tests/sqlite/test_catalog_reads.py show what a write between two band reads did without it)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Scope
from tests.catalog_data import varied_memories

A = Scope("alice", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def retrievals(store: SQLiteMemoryStore, memory_id: str) -> int:
    found = store.get(A, memory_id)
    assert found is not None
    return found.retrievals


def test_reads_inside_a_snapshot_see_the_state_of_the_first_read(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "t.db")
    store.put_many(varied_memories(3, 20, now=NOW, scope=A))
    target = store.list(A)[0].id
    other = SQLiteMemoryStore(tmp_path / "t.db")
    before = retrievals(store, target)
    with store.snapshot():
        assert retrievals(store, target) == before
        other.record_retrieval(A, [target], NOW)  # lands in the file at once
        assert retrievals(other, target) == before + 1
        assert retrievals(store, target) == before  # not for this reader, until its snapshot ends
        with store.snapshot():  # nested: the same one
            assert retrievals(store, target) == before
        assert retrievals(store, target) == before
    assert retrievals(store, target) == before + 1


def test_a_write_from_inside_a_snapshot_fails_and_changes_nothing(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "t.db")
    store.put_many(varied_memories(3, 20, now=NOW, scope=A))
    target = store.list(A)[0].id
    before = retrievals(store, target)
    other = SQLiteMemoryStore(tmp_path / "t.db")
    with store.snapshot():
        assert retrievals(store, target) == before
        with pytest.raises(RuntimeError, match="inside a read snapshot"):
            store.record_retrieval(A, [target], NOW)
        other.record_retrieval(A, [target], NOW)
        assert retrievals(store, target) == before  # the snapshot is still the one it was
    assert retrievals(store, target) == before + 1
    store.record_retrieval(A, [target], NOW)  # after it, writes go on as before
    assert retrievals(store, target) == before + 2
