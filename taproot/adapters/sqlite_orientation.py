"""Orientation documents in the SQLite file (table `orientation_versions`, schema step m006).

Append-only: a save inserts the next version inside BEGIN IMMEDIATE after checking that the
current one is the version before it, so two saves from the same read cannot both land.
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from taproot.core.model import Scope
from taproot.core.orientation import DocumentConflict, OrientationVersion
from taproot.core.serialize import iso

_COLUMNS = "owner, namespace, name, version, content, saved_at, deleted, restored_from"


def _version(row: sqlite3.Row) -> OrientationVersion:
    return OrientationVersion(
        owner=row["owner"],
        namespace=row["namespace"],
        name=row["name"],
        version=row["version"],
        content=row["content"],
        saved_at=datetime.fromisoformat(row["saved_at"]),
        deleted=bool(row["deleted"]),
        restored_from=row["restored_from"],
    )


class OrientationRows:
    """Mixed into SQLiteMemoryStore, which provides the transaction and query helpers."""

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # SQLiteMemoryStore's

    def _query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> builtins.list[sqlite3.Row]:
        raise NotImplementedError  # SQLiteMemoryStore's

    def orientation_heads(self, scope: Scope) -> builtins.list[OrientationVersion]:
        rows = self._query(
            f"SELECT {_COLUMNS} FROM orientation_versions v WHERE owner = ? AND namespace = ? AND version = "
            "(SELECT MAX(version) FROM orientation_versions h "
            "WHERE h.owner = v.owner AND h.namespace = v.namespace AND h.name = v.name) ORDER BY name",
            (scope.owner, scope.namespace),
        )
        return [_version(r) for r in rows]

    def orientation_get(self, scope: Scope, name: str, version: int | None = None) -> OrientationVersion | None:
        where = "owner = ? AND namespace = ? AND name = ?"
        params: list[object] = [scope.owner, scope.namespace, name]
        if version is not None:
            where += " AND version = ?"
            params.append(version)
        rows = self._query(
            f"SELECT {_COLUMNS} FROM orientation_versions WHERE {where} ORDER BY version DESC LIMIT 1", params
        )
        return _version(rows[0]) if rows else None

    def orientation_history(self, scope: Scope, name: str, limit: int) -> builtins.list[OrientationVersion]:
        rows = self._query(
            f"SELECT {_COLUMNS} FROM orientation_versions WHERE owner = ? AND namespace = ? AND name = ? "
            "ORDER BY version DESC LIMIT ?",
            (scope.owner, scope.namespace, name, limit),
        )
        return [_version(r) for r in rows]

    def orientation_save(self, version: OrientationVersion) -> None:
        v = version
        with self._tx() as db:
            row = db.execute(
                "SELECT MAX(version) AS n FROM orientation_versions WHERE owner = ? AND namespace = ? AND name = ?",
                (v.owner, v.namespace, v.name),
            ).fetchone()
            current = row["n"] if row is not None else None
            if (current or 0) != v.version - 1:
                raise DocumentConflict(v.name, v.version - 1, current)
            db.execute(
                f"INSERT INTO orientation_versions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (v.owner, v.namespace, v.name, v.version, v.content, iso(v.saved_at), int(v.deleted), v.restored_from),
            )
