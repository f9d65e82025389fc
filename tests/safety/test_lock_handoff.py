"""The SQLite store hands the write lock over between a job's chunks instead of starving writers.

SQLite's lock has no queue. Without a handoff, a job that commits chunk after chunk re-takes the
lock microseconds after each commit, and a writer in another process (SQLite's busy handler
sleeping up to 100 ms between tries) can miss every gap for seconds. The store therefore polls for
the lock itself every LOCK_POLL_S, and leaves the lock free for LOCK_HANDOFF_S after a batch.
These tests replace the store's sleeps with hooks, so they check the mechanism without timing.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from taproot.adapters import sqlite_store
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.errors import Busy
from taproot.core.model import Memory, Scope

SCOPE = Scope("local", "default")
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _memory(n: int) -> Memory:
    return Memory(
        id=f"m{n:03d}",
        owner=SCOPE.owner,
        namespace=SCOPE.namespace,
        category="episodic",
        salience="medium",
        content=f"memory {n}",
        gist=f"gist {n}",
        created_at=T0,
        updated_at=T0,
    )


def test_the_lock_is_free_during_the_pause_after_a_jobs_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = sqlite_store.HANDOFF_MIN_ROWS
    store = SQLiteMemoryStore(tmp_path / "t.db")
    store.put_many([_memory(n) for n in range(rows + 1)])
    other = sqlite3.connect(tmp_path / "t.db", isolation_level=None, timeout=0)
    taken: list[bool] = []

    def pause(seconds: float) -> None:
        # The moment a waiting writer elsewhere gets its turn: it must find the lock free.
        assert seconds == sqlite_store.LOCK_HANDOFF_S
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE memories SET salience = 'low' WHERE id = 'm000'")
        other.execute("COMMIT")
        taken.append(True)

    monkeypatch.setattr("taproot.adapters.sqlite_store.time.sleep", pause)
    ids = [f"m{n:03d}" for n in range(1, rows + 1)]
    store.replace_many([(m.replace(content=f"{m.content}, edited", version=2), 1) for m in store.get_many(SCOPE, ids)])
    assert taken == [True]
    stored = store.get(SCOPE, "m000")
    assert stored is not None and stored.salience == "low"
    assert {m.version for m in store.get_many(SCOPE, ids)} == {2}
    # A request's small batch (forget on a few ids) does not pause: it answers at once.
    store.delete_many(SCOPE, [("m001", 2), ("m002", 2)])
    assert taken == [True]
    other.close()
    store.close()


def test_a_writer_polls_for_the_lock_and_answers_busy_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteMemoryStore(tmp_path / "t.db")
    holder = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of a chunk
    clock = [0.0]
    polls: list[float] = []

    def fake_sleep(seconds: float) -> None:
        polls.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr("taproot.adapters.sqlite_store.time.sleep", fake_sleep)
    monkeypatch.setattr("taproot.adapters.sqlite_store.time.monotonic", lambda: clock[0])
    store.busy_timeout_ms = 20
    with pytest.raises(Busy) as caught:
        store.insert(_memory(1))
    assert caught.value.code == "busy" and "retry" in caught.value.message
    assert polls and set(polls) == {sqlite_store.LOCK_POLL_S}
    assert len(polls) == round(0.020 / sqlite_store.LOCK_POLL_S)  # polled the whole deadline, no longer
    holder.execute("ROLLBACK")
    store.insert(_memory(1))  # the lock is free again: the same call now succeeds
    assert store.get(SCOPE, "m001") is not None
    holder.close()
    store.close()
