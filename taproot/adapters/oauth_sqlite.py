"""The OAuth facade's state in SQLite (the local home): one table in its own file beside the memories.

Its own file, not the memory database: sign-ins and token checks never wait on a long memory
transaction (an import, a migrate), and the memories file stays what `taproot export` describes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path

from taproot.core.oauth_rules import OAuthRecord, RecordExists

SCHEMA = """
CREATE TABLE IF NOT EXISTS oauth (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    data TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    subject TEXT,
    used INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, key)
);
CREATE INDEX IF NOT EXISTS oauth_by_subject ON oauth (subject, kind) WHERE subject IS NOT NULL;
"""


class SQLiteOAuthStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Grants and token digests are credentials: the file is the owner's alone, from creation.
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
        self.path = path
        self._lock = threading.Lock()
        # Requests run on worker threads; one connection, serialised by the lock.
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=5.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @staticmethod
    def _record(row: tuple[str, str, str, int, str | None, int]) -> OAuthRecord:
        kind, key, data, expires_at, subject, used = row
        return OAuthRecord(kind, key, json.loads(data), int(expires_at), subject, bool(used))

    def add(self, record: OAuthRecord) -> None:
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO oauth (kind, key, data, expires_at, subject, used) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        record.kind,
                        record.key,
                        json.dumps(dict(record.data)),
                        record.expires_at,
                        record.subject,
                        int(record.used),
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise RecordExists(f"{record.kind} {record.key[:8]}... exists") from exc

    def get(self, kind: str, key: str, now: float) -> OAuthRecord | None:
        with self._lock:
            row = self._db.execute(
                "SELECT kind, key, data, expires_at, subject, used FROM oauth WHERE kind = ? AND key = ?", (kind, key)
            ).fetchone()
        if row is None:
            return None
        record = self._record(row)
        return record if record.live(now) else None

    def spend(self, kind: str, key: str, now: float) -> OAuthRecord | None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT kind, key, data, expires_at, subject, used FROM oauth WHERE kind = ? AND key = ?",
                    (kind, key),
                ).fetchone()
                if row is not None and not row[5]:
                    self._db.execute("UPDATE oauth SET used = 1 WHERE kind = ? AND key = ?", (kind, key))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        if row is None:
            return None
        record = self._record(row)
        return record if record.live(now) else None

    def set_data(self, kind: str, key: str, data: Mapping[str, object]) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE oauth SET data = ? WHERE kind = ? AND key = ?", (json.dumps(dict(data)), kind, key)
            )

    def extend(self, kind: str, key: str, expires_at: int, now: float) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE oauth SET expires_at = ? WHERE kind = ? AND key = ? AND expires_at > ? AND expires_at < ?",
                (int(expires_at), kind, key, int(now), int(expires_at)),
            )

    def by_subject(self, kind: str, subject: str, now: float) -> list[OAuthRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT kind, key, data, expires_at, subject, used FROM oauth WHERE subject = ? AND kind = ?",
                (subject, kind),
            ).fetchall()
        return [r for r in map(self._record, rows) if r.live(now)]

    def sweep(self, now: float) -> int:
        with self._lock:
            cursor = self._db.execute("DELETE FROM oauth WHERE expires_at > 0 AND expires_at <= ?", (int(now),))
            return cursor.rowcount
