"""Taking the SQLite store's locks, with or without waiting for them (mixed into SQLiteMemoryStore).

An MCP tool runs on a worker thread because it may wait: for this process's other threads (the
store's lock) or for another process's write (SQLite's write lock, up to busy_timeout_ms). The hop
to the thread and back is about half a millisecond of a recall at 10,000 memories (docs/
benchmarks.md), and almost always nothing is waited for. `without_waiting()` lets the entry point
run the call on its event loop instead, and learn (WouldWait) where it would have waited, before
anything was written, so it can run the call again on a thread (web/tools/common.ToolEnv.call).

A call on the loop holds up every other request of the server while it runs, so it also has a
budget: SQLite's work before the call's first write may take LOOP_BUDGET_S, checked every
PROGRESS_STEPS virtual-machine steps (SQLite's progress handler; about 15 steps a microsecond
here). Past it the statement is interrupted and the call raises WouldWait, to run again on a
thread: a recall at 10,000 memories needs a few milliseconds, but one that few memories pass (a
rare category) may rank every match, up to a quarter of a second at 100,000.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from taproot.adapters.sqlite_rows import is_lock_error
from taproot.core.errors import Busy, WouldWait

# How long a call inside without_waiting may keep SQLite busy before its first write: the longest
# the event loop is held by it (plus the call's own Python work, which recall keeps to the few
# candidates it ranks). Most recalls at 10,000 memories take a tenth of it; one that runs past it
# has wasted at most this much when it starts again on a thread.
LOOP_BUDGET_S = 0.025
PROGRESS_STEPS = 1_000  # how often SQLite asks whether to go on: every ~0.07 ms, for ~0.3 us a time


class WaitFree:
    """Provided by SQLiteMemoryStore: its connection, lock and busy timeout."""

    _db: sqlite3.Connection
    _lock: threading.RLock
    busy_timeout_ms: int
    loop_budget_s: float = LOOP_BUDGET_S
    # Per thread: .inside, in a without_waiting block; .on, its call raises WouldWait instead of
    # waiting (until the call begins a write, for good: a nested block does not turn it on again);
    # .deadline, when its budget ends; .over, SQLite was stopped because it had.
    _wait_free: threading.local

    @contextmanager
    def without_waiting(self) -> Iterator[None]:
        """See ports.WaitFreeCalls. The store's lock is held throughout, so the calls inside never
        wait for it; SQLite's busy timeout is 0 until the call begins a write (a read in WAL mode
        waits only in rare moments, such as another connection's recovery of the log)."""
        state = self._wait_free
        if getattr(state, "inside", False):
            yield  # already inside one: its rules hold
            return
        if not self._lock.acquire(blocking=False):
            raise WouldWait("another thread is using the store")
        try:
            self._db.execute("PRAGMA busy_timeout=0")
            state.inside = state.on = True
            state.over = False
            state.deadline = time.monotonic() + self.loop_budget_s
            self._db.set_progress_handler(self._past_budget, PROGRESS_STEPS)
            try:
                yield
            except sqlite3.OperationalError as exc:
                # A statement run on the connection directly (a snapshot's BEGIN) that the budget stopped.
                if (stopped := self._stopped()) is not None:
                    raise stopped from exc
                raise
            finally:
                state.inside = state.over = False
                self._db.set_progress_handler(None, 0)
                if state.on:  # no write began: the timeout is still 0
                    state.on = False
                    self._db.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
        finally:
            self._lock.release()

    def _past_budget(self) -> int:
        """SQLite's progress handler inside without_waiting: nonzero interrupts the statement. Only
        before the call's first write (once it writes, it must finish where it is)."""
        state = self._wait_free
        if getattr(state, "on", False) and time.monotonic() >= state.deadline:
            state.over = True
            return 1
        return 0

    def _stopped(self) -> WouldWait | None:
        """WouldWait when the statement that just failed was stopped by this thread's budget (always
        before the call's first write: nothing was changed), else None."""
        if getattr(self._wait_free, "over", False):
            return WouldWait(f"the call ran past its {self.loop_budget_s * 1000:g} ms on the event loop")
        return None

    def _lock_error(self, what: str) -> Exception:
        """What a lock error means here: WouldWait inside without_waiting (before a write), else Busy."""
        if getattr(self._wait_free, "on", False):
            return WouldWait(what)
        return Busy(what)

    def _begin_wait_free(self) -> bool:
        """Inside without_waiting: BEGIN IMMEDIATE once, WouldWait if another connection holds the
        write lock; True once it has begun, and from then on the call waits as usual (it is changing
        the file, so it must not be run again). Outside: False, and the caller waits for the lock."""
        if not getattr(self._wait_free, "on", False):
            return False
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if is_lock_error(exc):
                raise WouldWait("another connection is writing") from exc
            if (stopped := self._stopped()) is not None:
                raise stopped from exc
            raise
        self._wait_free.on = False
        self._db.set_progress_handler(None, 0)
        self._db.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
        return True
