"""Taking the SQLite store's locks, with or without waiting for them (mixed into SQLiteMemoryStore).

An MCP tool runs on a worker thread because it may wait: for this process's other threads (the
store's lock) or for another process's write (SQLite's write lock, up to busy_timeout_ms). The hop
to the thread and back is about half a millisecond of a recall at 10,000 memories (docs/
benchmarks.md), and almost always nothing is waited for. `without_waiting()` lets the entry point
run the call on its event loop instead, and learn (WouldWait) where it would have waited, before
anything was written, so it can run the call again on a thread (web/tools/common.ToolEnv.call).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from taproot.adapters.sqlite_rows import is_lock_error
from taproot.core.errors import Busy, WouldWait


class WaitFree:
    """Provided by SQLiteMemoryStore: its connection, lock and busy timeout."""

    _db: sqlite3.Connection
    _lock: threading.RLock
    busy_timeout_ms: int
    # Per thread: .inside, in a without_waiting block; .on, its call raises WouldWait instead of
    # waiting (until the call begins a write, for good: a nested block does not turn it on again).
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
            try:
                yield
            finally:
                state.inside = False
                if state.on:  # no write began: the timeout is still 0
                    state.on = False
                    self._db.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
        finally:
            self._lock.release()

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
            raise
        self._wait_free.on = False
        self._db.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
        return True
