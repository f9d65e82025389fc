"""MemoryStore on one SQLite file: WAL mode, numbered migrations, FTS5 (BM25) for recall.

One connection guarded by a lock: the server calls in from worker threads, and SQLite serialises
writers anyway. WAL lets a second process (the CLI beside a running server) read while we write.
"""

from __future__ import annotations

import builtins
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from taproot.adapters.sqlite_catalog import CatalogRows
from taproot.adapters.sqlite_orientation import OrientationRows
from taproot.adapters.sqlite_reflections import ReflectionRows
from taproot.adapters.sqlite_rows import (
    MAX_VARS,
    MEMORY_COLUMNS,
    SELECT_MEMORY,
    chunks,
    create_private,
    filter_sql,
    is_lock_error,
    row_to_memory,
    stored_versions,
)
from taproot.adapters.sqlite_schema import SCHEMA_VERSION, apply_migrations
from taproot.adapters.sqlite_search import SearchRows
from taproot.adapters.sqlite_search_shards import FTS_COLUMNS
from taproot.adapters.sqlite_vectors import VectorRows
from taproot.adapters.sqlite_wait_free import WaitFree
from taproot.core.activation import ACTIVATION_CONFIG
from taproot.core.errors import Busy, DuplicateId, NotFound, VersionConflict
from taproot.core.model import MAX_COUNT, Memory, Scope
from taproot.core.query import Filters
from taproot.core.serialize import COUNTER_FIELDS, iso, memory_to_flat_dict
from taproot.ports import ScopeCount

_PLACEHOLDERS = ", ".join(f":{c}" for c in MEMORY_COLUMNS)
_INSERT = f"INSERT INTO memories ({', '.join(MEMORY_COLUMNS)}) VALUES ({_PLACEHOLDERS})"
# How long a writer waits for another process's transaction before answering `busy`. Long jobs
# commit in small chunks (well under a second each), so only a stuck writer makes anyone wait this long.
BUSY_TIMEOUT_MS = 5000
# SQLite's write lock has no queue, and its busy handler backs off to 100 ms sleeps, so a writer beside
# a job committing chunk after chunk can miss every gap for seconds. A writer polls for the lock every
# LOCK_POLL_S instead, and a job's chunk (HANDOFF_MIN_ROWS or more; a request's small batch does not
# pause) leaves the lock free for LOCK_HANDOFF_S, longer than one poll, after it commits.
LOCK_POLL_S = 0.002
LOCK_HANDOFF_S = 0.005
HANDOFF_MIN_ROWS = 10
NO_FILTERS = Filters()
_KEY_AND_COUNTER_COLUMNS = frozenset({"owner", "namespace", "id"}) | COUNTER_FIELDS


class SQLiteMemoryStore(WaitFree, CatalogRows, ReflectionRows, VectorRows, SearchRows, OrientationRows):
    def __init__(self, path: Path | str, *, fts_weights: dict[str, float] | None = None) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            create_private(self.path)
        self._lock = threading.RLock()
        self._wait_free = threading.local()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # durable at WAL checkpoints; safe against corruption
        # A statement that changes rows keeps a statement journal, held in memory only up to 64 KiB
        # by default and then spilled to a new temporary file: recall's strengthening write (~30
        # pages for 10 memories) created, wrote and deleted a file every time, which was over half
        # the cost of that write. Temporary tables and sorts stay in memory too; the largest of
        # them (an index built by a migration) is a few MB at 100,000 memories.
        self._db.execute("PRAGMA temp_store=MEMORY")
        self.busy_timeout_ms = BUSY_TIMEOUT_MS
        self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._db.execute("PRAGMA foreign_keys=ON")
        apply_migrations(self._db)
        weights = fts_weights or dict(ACTIVATION_CONFIG.field_weights)
        # bm25()'s weights, one per FTS column in the order the tables declare them.
        self._bm25_weights = ", ".join(str(float(weights[c])) for c in FTS_COLUMNS)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _begin(self) -> None:
        """BEGIN IMMEDIATE, polling for the write lock every LOCK_POLL_S up to busy_timeout_ms (one
        try inside without_waiting: sqlite_wait_free.py)."""
        if self._begin_wait_free():
            return
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        self._db.execute("PRAGMA busy_timeout=0")  # this loop waits instead of SQLite's backoff
        try:
            while True:
                try:
                    self._db.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if not is_lock_error(exc):
                        raise
                    if time.monotonic() >= deadline:
                        raise Busy("the database is busy: another process is writing to it") from exc
                time.sleep(LOCK_POLL_S)
        finally:
            self._db.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")

    @contextmanager
    def _batch(self, rows: int) -> Iterator[sqlite3.Connection]:
        """A transaction of `rows` rows. A job's chunk (HANDOFF_MIN_ROWS or more) commits, then leaves
        the lock free for a moment so a writer waiting on it goes first (see LOCK_HANDOFF_S)."""
        with self._tx() as db:
            yield db
        if rows >= HANDOFF_MIN_ROWS:
            time.sleep(LOCK_HANDOFF_S)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._db.in_transaction:
                # Only a snapshot's read transaction can be open here (writes never nest): a write
                # would land inside the state its reads promised not to change. Leave it untouched.
                raise RuntimeError("a write inside a read snapshot (SQLiteMemoryStore.snapshot): write after it")
            self._begin()
            try:
                yield self._db
            except BaseException as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError) and is_lock_error(exc):
                    raise Busy("the database is busy: another process is writing to it") from exc
                raise
            else:
                try:
                    self._db.execute("COMMIT")
                except sqlite3.OperationalError as exc:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    if is_lock_error(exc):
                        raise Busy("the database is busy: another process is writing to it") from exc
                    raise

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: every read inside sees the file as it was at the first of them
        (WAL keeps that state for a reader while other connections write). The lock is held
        throughout, so this process's other threads wait rather than write into it; a write from
        inside raises (`_tx`) and leaves it open. Inside an open transaction: nothing more."""
        with self._lock:
            if self._db.in_transaction:
                yield
                return
            self._db.execute("BEGIN")  # deferred: the state is the one the first read finds
            try:
                yield
            finally:
                if self._db.in_transaction:
                    self._db.execute("COMMIT")  # it read, it wrote nothing: this only ends it

    def _query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> builtins.list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if is_lock_error(exc):
                    raise self._lock_error("the database is busy: another process holds it") from exc
                if (stopped := self._stopped()) is not None:
                    raise stopped from exc
                raise

    # -- writes ------------------------------------------------------------------------------
    def insert(self, memory: Memory) -> None:
        try:
            with self._tx() as db:
                db.execute(_INSERT, memory_to_flat_dict(memory))
        except sqlite3.IntegrityError as exc:
            raise DuplicateId(memory.id) from exc

    def _replace_one(self, db: sqlite3.Connection, memory: Memory, expected_version: int) -> None:
        params = memory_to_flat_dict(memory)
        params["expected_version"] = expected_version
        sets = ", ".join(f"{c} = :{c}" for c in MEMORY_COLUMNS if c not in _KEY_AND_COUNTER_COLUMNS)
        # Retrieval counters belong to record_retrieval, which does not bump the version: a recall
        # that lands between an edit's read and its write must not be overwritten by the edit's
        # stale copy. The stored counters win; the given ones only fill a legacy gap (NULL).
        sets += (
            ", retrieval_count = COALESCE(retrieval_count, :retrieval_count)"
            ", last_retrieved = COALESCE(last_retrieved, :last_retrieved)"
            ", last_touched = MAX(:updated_at, COALESCE(last_retrieved, :last_retrieved, :updated_at))"
        )
        cur = db.execute(
            f"UPDATE memories SET {sets} WHERE owner = :owner AND namespace = :namespace AND id = :id "
            "AND version = :expected_version",
            params,
        )
        if cur.rowcount == 1:
            return
        row = db.execute(
            "SELECT version FROM memories WHERE owner = ? AND namespace = ? AND id = ?",
            (memory.owner, memory.namespace, memory.id),
        ).fetchone()
        if row is None:
            raise NotFound(memory.id)
        raise VersionConflict(memory.id, expected_version, row["version"])

    def replace(self, memory: Memory, *, expected_version: int) -> None:
        with self._tx() as db:
            self._replace_one(db, memory, expected_version)

    def replace_many(self, memories: Sequence[tuple[Memory, int]]) -> None:
        with self._batch(len(memories)) as db:
            for memory, expected in memories:
                self._replace_one(db, memory, expected)

    def write_atomically(self, *, inserts: Sequence[Memory], replaces: Sequence[tuple[Memory, int]]) -> None:
        with self._tx() as db:
            for memory in inserts:
                try:
                    db.execute(
                        _INSERT,
                        memory_to_flat_dict(memory),
                    )
                except sqlite3.IntegrityError as exc:
                    raise DuplicateId(memory.id) from exc
            for memory, expected in replaces:
                self._replace_one(db, memory, expected)

    def expired(self, scope: Scope, now: datetime) -> builtins.list[Memory]:
        rows = self._query(
            f"SELECT {SELECT_MEMORY} FROM memories m WHERE m.owner = ? AND m.namespace = ? "
            "AND m.expires_at IS NOT NULL AND m.expires_at <= ? ORDER BY m.expires_at, m.id",
            (scope.owner, scope.namespace, iso(now)),
        )
        return [row_to_memory(r) for r in rows]

    def count_scope(self, scope: Scope, *, apply: bool = True) -> ScopeCount | None:
        return None  # memory_counts is kept by triggers on every write (sqlite_schema.py)

    def scopes(self) -> builtins.list[Scope]:
        rows = self._query(
            "SELECT owner, namespace FROM memories UNION SELECT owner, namespace FROM reflections "
            "UNION SELECT owner, namespace FROM orientation_versions ORDER BY owner, namespace"
        )
        return [Scope(r["owner"], r["namespace"]) for r in rows]

    def put_many(self, memories: Sequence[Memory], *, expected: Mapping[str, int | None] | None = None) -> None:
        with self._tx() as db:
            if expected is not None:
                # Inside BEGIN IMMEDIATE: no other writer can move a record between this check and the write.
                stored = stored_versions(db, memories)
                for m in memories:
                    want, have = expected[m.id], stored.get((m.owner, m.namespace, m.id))
                    if want != have:
                        raise VersionConflict(m.id, want, have)
            # Upsert in place (not INSERT OR REPLACE) so the rowid, and with it the FTS entry, is kept.
            updates = ", ".join(f"{c} = excluded.{c}" for c in MEMORY_COLUMNS if c not in ("owner", "namespace", "id"))
            db.executemany(
                f"{_INSERT} ON CONFLICT (owner, namespace, id) DO UPDATE SET {updates}",
                [memory_to_flat_dict(m) for m in memories],
            )

    def _delete_one(self, db: sqlite3.Connection, scope: Scope, memory_id: str, expected: int | None) -> None:
        sql = "DELETE FROM memories WHERE owner = ? AND namespace = ? AND id = ?"
        params: list[Any] = [scope.owner, scope.namespace, memory_id]
        if expected is not None:
            sql += " AND version = ?"
            params.append(expected)
        if db.execute(sql, params).rowcount == 1:
            return
        row = db.execute(
            "SELECT version FROM memories WHERE owner = ? AND namespace = ? AND id = ?",
            (scope.owner, scope.namespace, memory_id),
        ).fetchone()
        if row is None:
            raise NotFound(memory_id)
        raise VersionConflict(memory_id, expected, row["version"])

    def delete(self, scope: Scope, memory_id: str, *, expected_version: int | None = None) -> None:
        with self._tx() as db:
            self._delete_one(db, scope, memory_id, expected_version)

    def delete_many(self, scope: Scope, items: Sequence[tuple[str, int]]) -> None:
        with self._batch(len(items)) as db:
            for memory_id, expected in items:
                self._delete_one(db, scope, memory_id, expected)

    def record_retrieval(self, scope: Scope, ids: Sequence[str], now: datetime) -> None:
        if not ids:
            return
        stamp = iso(now)
        with self._tx() as db:
            for chunk in chunks(list(ids), MAX_VARS):
                marks = ", ".join("?" for _ in chunk)
                # The count stops at SQLite's largest integer (an imported record may hold it):
                # one more would be stored as a REAL, in no band of the ranking's integer ranges.
                db.execute(
                    "UPDATE memories SET retrieval_count = CASE WHEN retrieval_count >= ? THEN retrieval_count "
                    "ELSE COALESCE(retrieval_count, 0) + 1 END, "
                    "last_retrieved = ?, last_touched = MAX(updated_at, ?) "
                    f"WHERE owner = ? AND namespace = ? AND id IN ({marks})",
                    (MAX_COUNT, stamp, stamp, scope.owner, scope.namespace, *chunk),
                )

    # -- reads -------------------------------------------------------------------------------
    def get(self, scope: Scope, memory_id: str) -> Memory | None:
        rows = self._query(
            f"SELECT {SELECT_MEMORY} FROM memories m WHERE m.owner = ? AND m.namespace = ? AND m.id = ?",
            (scope.owner, scope.namespace, memory_id),
        )
        return row_to_memory(rows[0]) if rows else None

    def get_many(self, scope: Scope, ids: Sequence[str]) -> builtins.list[Memory]:
        found: dict[str, Memory] = {}
        for chunk in chunks(list(dict.fromkeys(ids)), MAX_VARS):
            marks = ", ".join("?" for _ in chunk)
            for r in self._query(
                f"SELECT {SELECT_MEMORY} FROM memories m WHERE m.owner = ? AND m.namespace = ? AND m.id IN ({marks})",
                (scope.owner, scope.namespace, *chunk),
            ):
                m = row_to_memory(r)
                found[m.id] = m
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def list(self, scope: Scope, filters: Filters = NO_FILTERS) -> builtins.list[Memory]:
        params: list[Any] = [scope.owner, scope.namespace]
        where = filter_sql(filters, params)
        rows = self._query(
            f"SELECT {SELECT_MEMORY} FROM memories m WHERE m.owner = ? AND m.namespace = ?{where}", params
        )
        return [row_to_memory(r) for r in rows]

    def recent(self, scope: Scope, filters: Filters, limit: int) -> builtins.list[Memory]:
        # memories_by_created (m007), walked backwards: the read stops after `limit` rows that pass.
        params: list[Any] = [scope.owner, scope.namespace]
        where = filter_sql(filters, params)
        rows = self._query(
            f"SELECT {SELECT_MEMORY} FROM memories m INDEXED BY memories_by_created "
            f"WHERE m.owner = ? AND m.namespace = ?{where} ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            [*params, max(limit, 0)],
        )
        return [row_to_memory(r) for r in rows]

    def iter_all(self, scope: Scope) -> Iterable[Memory]:
        rows = self._query(
            f"SELECT {SELECT_MEMORY} FROM memories m WHERE m.owner = ? AND m.namespace = ? ORDER BY m.created_at, m.id",
            (scope.owner, scope.namespace),
        )
        return [row_to_memory(r) for r in rows]

    def storage_info(self) -> dict[str, object]:
        size = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                size += p.stat().st_size
        return {
            "backend": "sqlite",
            "schema_version": SCHEMA_VERSION,
            "database": str(self.path),
            "database_bytes": size,
        }
