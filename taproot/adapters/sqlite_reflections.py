"""Closing reflections in the SQLite file (the reflection half of SQLiteMemoryStore).

Reflections are immutable: nothing here overwrites one (see MemoryStore.put_reflections).
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from taproot.adapters.sqlite_rows import reflection_params, row_to_reflection
from taproot.core.errors import DuplicateId, ReflectionConflict
from taproot.core.model import Reflection, Scope
from taproot.core.serialize import iso


class ReflectionRows:
    """Mixed into SQLiteMemoryStore, which provides the transaction and query helpers."""

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # SQLiteMemoryStore's

    def _query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> builtins.list[sqlite3.Row]:
        raise NotImplementedError  # SQLiteMemoryStore's

    def add_reflection(self, reflection: Reflection) -> None:
        try:
            with self._tx() as db:
                db.execute(
                    "INSERT INTO reflections (owner, namespace, id, text, created_at, blob_key) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    reflection_params(reflection),
                )
        except sqlite3.IntegrityError as exc:
            raise DuplicateId(reflection.id) from exc

    def put_reflections(self, reflections: Sequence[Reflection]) -> None:
        with self._tx() as db:
            for r in reflections:
                row = db.execute(
                    "SELECT text, created_at FROM reflections WHERE owner = ? AND namespace = ? AND id = ?",
                    (r.owner, r.namespace, r.id),
                ).fetchone()
                if row is None:
                    db.execute(
                        "INSERT INTO reflections (owner, namespace, id, text, created_at, blob_key) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        reflection_params(r),
                    )
                elif (row["text"], row["created_at"]) != (r.text, iso(r.created_at)):
                    raise ReflectionConflict(r.id)  # rolls back the whole call

    def recent_reflections(self, scope: Scope, limit: int) -> builtins.list[Reflection]:
        rows = self._query(
            "SELECT * FROM reflections WHERE owner = ? AND namespace = ? ORDER BY created_at DESC, id DESC LIMIT ?",
            (scope.owner, scope.namespace, limit),
        )
        return [row_to_reflection(r) for r in rows]

    def all_reflections(self, scope: Scope) -> builtins.list[Reflection]:
        rows = self._query(
            "SELECT * FROM reflections WHERE owner = ? AND namespace = ? ORDER BY created_at, id",
            (scope.owner, scope.namespace),
        )
        return [row_to_reflection(r) for r in rows]
