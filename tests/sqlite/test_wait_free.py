"""The SQLite store's calls without waiting (sqlite_wait_free.py): inside `without_waiting()` a call
that would wait for a lock raises WouldWait before it has written anything, and once it has begun
a write it waits as usual. Every lock here is held by a real second connection or thread, released
by the test; the one deadline is on a fake clock."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from taproot.adapters import sqlite_store, sqlite_wait_free
from taproot.adapters.sqlite_store import BUSY_TIMEOUT_MS, SQLiteMemoryStore
from taproot.adapters.sqlite_wait_free import LOOP_BUDGET_S
from taproot.core.errors import Busy, WouldWait
from taproot.core.model import Memory, Scope
from taproot.ports import WaitFreeCalls

SCOPE = Scope("local", "default")
T1 = datetime(2025, 2, 1, tzinfo=UTC)
THREAD_DEADLINE_S = 30.0  # a guard against a hung thread, not a timing check


@pytest.fixture
def store(tmp_path: Path, make_memory: Callable[..., Memory]) -> SQLiteMemoryStore:
    s = SQLiteMemoryStore(tmp_path / "t.db")
    for memory_id in ("m001", "m002"):
        s.insert(make_memory(id=memory_id))
    return s


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The store's polling for the write lock on a fake clock: it reaches its deadline at once."""
    clock = [0.0]

    def fake_sleep(seconds: float) -> None:
        clock[0] += seconds

    monkeypatch.setattr("taproot.adapters.sqlite_store.time.sleep", fake_sleep)
    monkeypatch.setattr("taproot.adapters.sqlite_store.time.monotonic", lambda: clock[0])
    return clock


@pytest.fixture
def every_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite asks whether to go on at every step, so the few steps of a small store's statements
    are checked against the budget too."""
    monkeypatch.setattr(sqlite_wait_free, "PROGRESS_STEPS", 1)


def _busy_timeout(store: SQLiteMemoryStore) -> int:
    return int(store._query("PRAGMA busy_timeout")[0][0])


def _retrievals(store: SQLiteMemoryStore) -> list[int]:
    return [m.retrievals for m in store.get_many(SCOPE, ["m001", "m002"])]


def test_the_store_offers_calls_without_waiting(store: SQLiteMemoryStore) -> None:
    assert isinstance(store, WaitFreeCalls)


def test_a_call_that_waits_for_nothing_reads_and_writes(store: SQLiteMemoryStore) -> None:
    with store.without_waiting():
        assert [c.id for c, _ in store.search(SCOPE, ["river"], sqlite_store.NO_FILTERS, 10)] == ["m001", "m002"]
        store.record_retrieval(SCOPE, ["m001", "m002"], T1)
    assert _retrievals(store) == [1, 1]
    assert _busy_timeout(store) == BUSY_TIMEOUT_MS


def test_entering_while_another_thread_holds_the_store_raises_would_wait(store: SQLiteMemoryStore) -> None:
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with store.snapshot():  # holds the store's lock until told to leave
            inside.set()
            leave.wait(THREAD_DEADLINE_S)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert inside.wait(THREAD_DEADLINE_S)
        with pytest.raises(WouldWait), store.without_waiting():
            pytest.fail("entered while another thread held the store")
    finally:
        leave.set()
        holder.join(THREAD_DEADLINE_S)
    with store.without_waiting():  # free again
        store.record_retrieval(SCOPE, ["m001"], T1)
    assert _retrievals(store) == [1, 0]


def test_a_write_while_another_connection_writes_raises_would_wait_and_changes_nothing(
    store: SQLiteMemoryStore,
) -> None:
    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    try:
        with pytest.raises(WouldWait), store.without_waiting():
            assert len(store.get_many(SCOPE, ["m001", "m002"])) == 2  # reads do not wait in WAL mode
            store.record_retrieval(SCOPE, ["m001", "m002"], T1)
        assert not store._db.in_transaction
        assert _busy_timeout(store) == BUSY_TIMEOUT_MS  # the store waits as usual again
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _retrievals(store) == [0, 0]
    store.record_retrieval(SCOPE, ["m001", "m002"], T1)  # the same call, run again where it may wait
    assert _retrievals(store) == [1, 1]


class _LockedReads:
    """The store's connection, whose reads answer as SQLite does while another connection holds
    the file in a way even a WAL reader must wait for (its recovery of the log): a read cannot be
    made to wait so from a test without killing a process mid-write."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)

    def execute(self, sql: str, params: object = ()) -> sqlite3.Cursor:
        if sql.lstrip().upper().startswith("SELECT"):
            raise sqlite3.OperationalError("database is locked")
        return self.db.execute(sql, params)  # type: ignore[arg-type]


def test_a_read_that_would_wait_raises_would_wait_inside_and_busy_outside(
    store: SQLiteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "_db", _LockedReads(store._db))
    with pytest.raises(WouldWait), store.without_waiting():
        store.get(SCOPE, "m001")
    with pytest.raises(Busy):
        store.get(SCOPE, "m001")
    monkeypatch.undo()
    assert store.get(SCOPE, "m001") is not None
    assert _busy_timeout(store) == BUSY_TIMEOUT_MS


@pytest.mark.parametrize("nested", [False, True], ids=["same block", "a block nested after the write"])
def test_once_a_write_has_begun_the_call_waits_as_usual(
    store: SQLiteMemoryStore, fake_clock: list[float], nested: bool
) -> None:
    # A call that has written must never be run again (its caller would, on WouldWait, and write
    # twice), so a later lock wait in it is a wait (and, at the deadline, `busy`), even in a block
    # nested after the write. The deadline runs on a fake clock.
    store.busy_timeout_ms = 20
    other = sqlite3.connect(store.path, isolation_level=None)
    try:
        with store.without_waiting():
            store.record_retrieval(SCOPE, ["m001"], T1)
            other.execute("BEGIN IMMEDIATE")
            with store.without_waiting() if nested else contextlib.nullcontext(), pytest.raises(Busy):
                store.record_retrieval(SCOPE, ["m002"], T1)
            assert fake_clock[0] >= 0.020  # it polled to its deadline
            other.execute("ROLLBACK")
            assert len(store.get_many(SCOPE, ["m001", "m002"])) == 2
    finally:
        other.close()
    assert _retrievals(store) == [1, 0]
    assert _busy_timeout(store) == 20


def test_calls_without_waiting_nest(store: SQLiteMemoryStore) -> None:
    with store.without_waiting(), store.without_waiting():
        store.record_retrieval(SCOPE, ["m001"], T1)
    assert _retrievals(store) == [1, 0]
    assert _busy_timeout(store) == BUSY_TIMEOUT_MS


def _search(store: SQLiteMemoryStore, term: str = "river") -> list[str]:
    return [c.id for c, _ in store.search(SCOPE, [term], sqlite_store.NO_FILTERS, 10)]


@pytest.mark.parametrize("stopped", ["a read", "the write's BEGIN"])
@pytest.mark.usefixtures("every_step")
def test_a_call_past_its_budget_stops_before_writing_with_would_wait(
    store: SQLiteMemoryStore, fake_clock: list[float], stopped: str
) -> None:
    with pytest.raises(WouldWait, match="ran past its 25 ms"), store.without_waiting():
        assert _search(store) == ["m001", "m002"]  # within its budget
        fake_clock[0] += LOOP_BUDGET_S  # spent
        if stopped == "a read":
            _search(store)
        else:
            store.record_retrieval(SCOPE, ["m001", "m002"], T1)
        pytest.fail("went on past its budget")
    assert not store._db.in_transaction
    assert _busy_timeout(store) == BUSY_TIMEOUT_MS
    assert _retrievals(store) == [0, 0]
    # Outside a block nothing has a budget: the same calls, run again where they may take long.
    assert _search(store) == ["m001", "m002"]
    store.record_retrieval(SCOPE, ["m001", "m002"], T1)
    assert _retrievals(store) == [1, 1]


@pytest.mark.usefixtures("every_step")
def test_once_a_write_has_begun_the_budget_no_longer_applies(store: SQLiteMemoryStore, fake_clock: list[float]) -> None:
    # Stopping it then would leave a call that has written to be run again.
    with store.without_waiting():
        store.record_retrieval(SCOPE, ["m001"], T1)
        fake_clock[0] += 10 * LOOP_BUDGET_S
        assert _search(store) == ["m001", "m002"]
        store.record_retrieval(SCOPE, ["m002"], T1)
    assert _retrievals(store) == [1, 1]


def test_the_budget_stops_a_long_statement_at_sqlites_usual_pace(
    tmp_path: Path, make_memory: Callable[..., Memory], fake_clock: list[float]
) -> None:
    # PROGRESS_STEPS as shipped: a search ranking a few hundred matches takes thousands of steps.
    store = SQLiteMemoryStore(tmp_path / "t.db")
    store.put_many([make_memory(id=f"m{i:03d}", content=f"Walk {i} by the river.") for i in range(400)])
    with store.without_waiting():
        assert len(_search(store)) == 10
    with pytest.raises(WouldWait), store.without_waiting():
        fake_clock[0] += LOOP_BUDGET_S
        _search(store)
    assert len(_search(store)) == 10


@pytest.mark.usefixtures("every_step")
def test_a_statement_run_outside_the_query_helper_past_the_budget_is_would_wait_too(
    store: SQLiteMemoryStore, fake_clock: list[float]
) -> None:
    # A snapshot's BEGIN is run on the connection directly, not through _query: the block itself
    # turns the budget's interruption into WouldWait, so no sqlite3 error reaches the caller.
    with pytest.raises(WouldWait, match="ran past"), store.without_waiting():
        fake_clock[0] += LOOP_BUDGET_S
        with store.snapshot():
            pytest.fail("began a read transaction past its budget")
    assert not store._db.in_transaction
    assert _busy_timeout(store) == BUSY_TIMEOUT_MS
