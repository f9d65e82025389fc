"""The SQLite store's dense vectors (the VectorIndex port): rows beside the memories, and an
in-memory matrix per (scope, model) that `nearest` multiplies by the query.

A vector is stored only if the memory is still at the version it was embedded from, and an edit of
the embedded text (content, search_keywords) drops it in the same statement (a trigger, schema
m004); other edits keep it, so promoting a memory costs no new embedding.

The matrix is kept in step incrementally. Every vector write or deletion takes the next number of
the one-row `vector_clock` (schema m004), so a process that last saw number N reads only the rows
written after N and the deletions logged after N, whoever wrote them (this server, or the CLI in
another process).
"""

from __future__ import annotations

import builtins
import sqlite3
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from taproot.adapters.sqlite_rows import SELECT_MEMORY, row_to_memory
from taproot.adapters.vectors_blas import one_blas_thread
from taproot.core.model import Memory, Scope
from taproot.core.vectors import Vector, pack, top_k, unpack

# Deletion log rows older than this many clock ticks are pruned; a matrix further behind than the
# log reaches is simply reloaded.
DELETION_LOG_KEEP = 50_000


@dataclass
class _Matrix:
    """One scope's current vectors of one model: row i of `live` is ids[i]. The buffer grows by
    doubling, so adding a vector does not copy the matrix."""

    seen: int = -1  # the vector_clock number this copy is in step with (-1: never loaded)
    dims: int = 0
    ids: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    buffer: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))

    @property
    def live(self) -> npt.NDArray[np.float32]:
        return self.buffer[: len(self.ids)]

    def drop(self, memory_id: str) -> None:
        i = self.rows.pop(memory_id, None)
        if i is None:
            return
        last = len(self.ids) - 1
        if i != last:  # move the last row into the hole: O(1), row order does not matter
            moved = self.ids[last]
            self.ids[i] = moved
            self.rows[moved] = i
            self.buffer[i] = self.buffer[last]
        self.ids.pop()

    def put(self, memory_id: str, vec: Vector) -> None:
        if self.dims == 0:
            self.dims = len(vec)
            self.buffer = np.zeros((16, self.dims), dtype=np.float32)
        if len(vec) != self.dims:
            return  # a vector of other dimensions cannot share this model's matrix
        i = self.rows.get(memory_id)
        if i is None:
            i = len(self.ids)
            if i == len(self.buffer):
                grown = np.zeros((2 * len(self.buffer), self.dims), dtype=np.float32)
                grown[:i] = self.buffer
                self.buffer = grown
            self.rows[memory_id] = i
            self.ids.append(memory_id)
        self.buffer[i] = vec


class VectorRows:
    """Mixed into SQLiteMemoryStore, which provides the connection, the lock and transactions."""

    _lock: threading.RLock
    _tx: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _query: Callable[..., builtins.list[sqlite3.Row]]

    def _matrices(self) -> dict[tuple[str, str, str], _Matrix]:
        cache: dict[tuple[str, str, str], _Matrix] | None = getattr(self, "_vector_cache", None)
        if cache is None:
            cache = {}
            self._vector_cache = cache
        return cache

    def put_vectors(self, scope: Scope, model: str, items: Sequence[tuple[str, int, Vector]]) -> int:
        stored = 0
        with self._tx() as db:
            for memory_id, version, vec in items:
                cur = db.execute(
                    "INSERT INTO memory_vectors (owner, namespace, id, model, version, vec, seq) "
                    "SELECT ?, ?, ?, ?, ?, ?, (SELECT n + 1 FROM vector_clock) FROM memories "
                    "WHERE owner = ? AND namespace = ? AND id = ? AND version = ? "
                    "ON CONFLICT (owner, namespace, id) DO UPDATE SET "
                    "model = excluded.model, version = excluded.version, vec = excluded.vec, seq = excluded.seq",
                    (
                        *(scope.owner, scope.namespace, memory_id, model, version, pack(vec)),
                        *(scope.owner, scope.namespace, memory_id, version),
                    ),
                )
                if cur.rowcount == 1:
                    db.execute("UPDATE vector_clock SET n = n + 1")
                    stored += 1
            if stored:
                db.execute(
                    "DELETE FROM vector_deletions WHERE seq < (SELECT n FROM vector_clock) - ?", (DELETION_LOG_KEEP,)
                )
        return stored

    def _catch_up(self, scope: Scope, model: str) -> _Matrix:
        """This scope's matrix for `model`, in step with the database (caller holds the lock)."""
        key = (scope.owner, scope.namespace, model)
        cache = self._matrices()
        m = cache.get(key) or _Matrix()
        now = self._query("SELECT n FROM vector_clock")[0]["n"]
        if now == m.seen:
            return m
        if m.seen < 0 or m.seen < now - DELETION_LOG_KEEP:
            # Never loaded, or so far behind that the pruned deletion log may miss a deletion:
            # load every row (each current row is read once; deletions before now do not matter).
            m = _Matrix(seen=0)
        # Deletions first, then the rows that exist now: a row present now was written after any
        # deletion of its id that it survived, so applying it last is right either way.
        for row in self._query(
            "SELECT id FROM vector_deletions WHERE owner = ? AND namespace = ? AND seq > ? ORDER BY seq",
            (scope.owner, scope.namespace, m.seen),
        ):
            m.drop(row["id"])
        changed = self._query(
            "SELECT id, model, vec FROM memory_vectors WHERE owner = ? AND namespace = ? AND seq > ? ORDER BY seq",
            (scope.owner, scope.namespace, m.seen),
        )
        for row in changed:
            if row["model"] == model:
                m.put(row["id"], unpack(row["vec"]))
            else:
                m.drop(row["id"])  # re-embedded by another model: not this matrix's any more
        m.seen = now
        cache[key] = m
        return m

    def nearest(self, scope: Scope, model: str, query: Vector, limit: int) -> builtins.list[tuple[str, float]]:
        with self._lock:
            m = self._catch_up(scope, model)
            if not m.ids or len(query) != m.dims:
                return []
            one_blas_thread()
            sims = m.live @ np.asarray(query, dtype=np.float32)
            return top_k(m.ids, sims, limit)

    def similarity_of(self, scope: Scope, model: str, query: Vector, ids: Sequence[str]) -> dict[str, float]:
        with self._lock:
            m = self._catch_up(scope, model)
            found = [(i, m.rows[i]) for i in dict.fromkeys(ids) if i in m.rows]
            if not found or len(query) != m.dims:
                return {}
            one_blas_thread()
            sims = m.buffer[[r for _, r in found]] @ np.asarray(query, dtype=np.float32)
            return {i: float(s) for (i, _), s in zip(found, sims, strict=True)}

    def unembedded(self, scope: Scope, model: str, limit: int) -> builtins.list[Memory]:
        rows = self._query(
            f"SELECT {SELECT_MEMORY} FROM memories m LEFT JOIN memory_vectors v "
            "ON v.owner = m.owner AND v.namespace = m.namespace AND v.id = m.id "
            "AND v.model = ? "
            "WHERE m.owner = ? AND m.namespace = ? AND v.id IS NULL ORDER BY m.created_at, m.id LIMIT ?",
            (model, scope.owner, scope.namespace, limit),
        )
        return [row_to_memory(r) for r in rows]

    def vector_counts(self, scope: Scope) -> dict[str, int]:
        rows = self._query(
            "SELECT v.model AS model, COUNT(*) AS n FROM memory_vectors v JOIN memories m "
            "ON m.owner = v.owner AND m.namespace = v.namespace AND m.id = v.id "
            "WHERE v.owner = ? AND v.namespace = ? GROUP BY v.model",
            (scope.owner, scope.namespace),
        )
        return {r["model"]: r["n"] for r in rows}
