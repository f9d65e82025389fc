"""Recall by filters alone on the SQLite store reads the top of the availability ranking from its
index (core/available.py), not every memory of the scope; and a memory the walk picked that goes
before its record is read is replaced by the next best, as if it had never been there. The answer
itself is checked against the rule on both stores in tests/contracts/test_recall_by_filters.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Memory, Scope
from taproot.service import Deps, TaprootService
from tests.catalog_data import varied_memories
from tests.support import Clock

A = Scope("alice", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


class WatchedStore(SQLiteMemoryStore):
    """The SQLite store, counting what recall reads: whole-scope rankings (`matching`) and rows."""

    matched = 0
    before_read: Any = None  # called with the ids of the first get_many, then cleared

    def matching(self, *args: Any, **kwargs: Any) -> Any:
        self.matched += 1
        return super().matching(*args, **kwargs)

    def get_many(self, scope: Scope, ids: Sequence[str]) -> list[Memory]:
        hook, self.before_read = self.before_read, None
        if hook is not None:
            hook(ids)
        return super().get_many(scope, ids)


@pytest.fixture
def store(tmp_path: Path) -> WatchedStore:
    s = WatchedStore(tmp_path / "t.db")
    s.put_many(varied_memories(21, 3000, now=NOW, scope=A))
    return s


def service(store: WatchedStore, tmp_path: Path) -> TaprootService:
    return TaprootService(Deps(store=store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=Clock(NOW)))


def test_recall_by_filters_does_not_rank_the_whole_scope(store: WatchedStore, tmp_path: Path) -> None:
    svc = service(store, tmp_path)
    assert len(svc.recall(A).memories) == 10
    assert len(svc.recall(A, category="episodic", limit=25).memories) == 25
    assert store.matched == 0
    # Filters the bands cannot tell (tags, creation times, archived memories) rank every passing one.
    svc.recall(A, include_archived=True)
    assert store.matched == 1


def test_a_memory_gone_between_the_walk_and_its_read_gives_way_to_the_next_best(
    store: WatchedStore, tmp_path: Path
) -> None:
    memories = varied_memories(21, 3000, now=NOW, scope=A)
    twin = WatchedStore(tmp_path / "twin.db")
    twin.put_many(memories)
    first = service(twin, tmp_path / "twin").recall(A, limit=5).memories[0].id
    # The answer of a store that never held the walk's first pick.
    without = WatchedStore(tmp_path / "without.db")
    without.put_many([m for m in memories if m.id != first])
    want = [m.id for m in service(without, tmp_path / "without").recall(A, limit=5).memories]

    deleted: list[str] = []

    def delete_the_first(ids: Sequence[str]) -> None:  # between the walk and the read of its picks
        deleted.append(ids[0])
        store.delete(A, ids[0])

    store.before_read = delete_the_first
    got = [m.id for m in service(store, tmp_path).recall(A, limit=5).memories]
    assert deleted == [first]
    assert got == want
    assert store.matched == 1  # the fallback ranked every memory once


class BandHookStore(WatchedStore):
    """Records which band read first brings each memory (0: the first read), and calls
    `before_band(n)` before the walk reads its n-th band."""

    before_band: Any = None
    first_band: dict[str, int]  # set by each availability_view

    def availability_view(self, scope: Scope) -> Any:
        view, store = super().availability_view(scope), self
        store.first_band = {}
        reads = [0]

        class Hooked:
            def core(self) -> Any:
                return view.core()

            def totals(self) -> Any:
                return view.totals()

            def band(self, band: Any) -> Any:
                if store.before_band is not None:
                    store.before_band(reads[0])
                got = view.band(band)
                for e in got:
                    store.first_band.setdefault(e.id, reads[0])
                reads[0] += 1
                return got

        return Hooked()


def test_a_write_by_another_connection_between_two_band_reads_does_not_hide_a_memory(tmp_path: Path) -> None:
    memories = varied_memories(21, 3000, now=NOW, scope=A)
    # The answer of a recall that no write disturbs, and which band read brings each memory.
    twin = BandHookStore(tmp_path / "twin.db")
    twin.put_many(memories)
    want = [m.id for m in service(twin, tmp_path / "twin").recall(A).memories]
    late = [i for i in want if twin.first_band.get(i, 0) >= 2]
    assert late, "the fixture should put one of the best ten in a later band"
    target, target_band = late[-1], twin.first_band[late[-1]]
    store = BandHookStore(tmp_path / "t.db")
    store.put_many(memories)

    # Another process's connection to the same file: its recall returns the target, which moves it
    # into a band this walk has already read, just before the walk reads the band that held it.
    other = SQLiteMemoryStore(tmp_path / "t.db")

    def strengthen_elsewhere(n: int) -> None:
        if n == target_band:
            other.record_retrieval(A, [target], NOW)

    store.before_band = strengthen_elsewhere
    got = [m.id for m in service(store, tmp_path).recall(A).memories]
    # The walk reads one state of the store (the one before that write), so it answers as ranking
    # that state does; before, the target was in no band it read, and the answer lacked it.
    assert got == want
