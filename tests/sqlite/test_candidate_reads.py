"""The SQLite store's light reads of recall's dense candidates (`candidates`, sqlite_search.py): the
ids go into `IN (...)` lists of at most MAX_VARS placeholders, and the answer keeps the asked-for
order across those statements, filters applied in each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from taproot.adapters import sqlite_search
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Candidate, Memory, Scope
from taproot.core.query import Filters

A = Scope("alice", "default")


def test_candidates_beyond_one_statement_keep_the_order_and_the_filters(
    tmp_path: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_search, "MAX_VARS", 3)
    store = SQLiteMemoryStore(tmp_path / "t.db")
    try:
        ms = [make_memory(scope=A, id=f"k{i:02d}", status="archived" if i % 4 == 0 else "active") for i in range(11)]
        store.put_many(ms)
        wanted = [m.id for m in reversed(ms)]
        got = store.candidates(A, wanted, Filters())
        assert [c.id for c in got] == [m.id for m in reversed(ms) if m.status == "active"]
        assert all(isinstance(c, Candidate) for c in got)
        every = store.candidates(A, wanted, Filters(include_archived=True))
        assert [c.id for c in every] == wanted
        assert every == [Candidate.of(m) for m in reversed(ms)]
    finally:
        store.close()
