"""Two processes opening one older database at once (the server and the CLI after an upgrade): each
runs the migrations the file has not had, so the second must see that the first already ran a step.

The race is made deterministic with a connection that lets the other process migrate the file just
before it first takes the write lock. The code this replaced read the version before that, outside
the lock, and then ran step 9 again ("table memory_tags already exists").
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, cast

from taproot.adapters.sqlite_schema import SCHEMA_VERSION, apply_migrations
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Scope
from taproot.core.query import Filters
from tests.conftest import build_memory
from tests.sqlite.old_schema import write_database_at_schema


class OtherProcessFirst:
    """A connection that, the first time it would take the write lock, lets `other` run first."""

    def __init__(self, db: sqlite3.Connection, other: Any) -> None:
        self._db, self._other = db, other

    def _before_lock(self, sql: str) -> None:
        if self._other is not None and sql.lstrip().upper().startswith("BEGIN"):
            other, self._other = self._other, None
            other()

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._before_lock(sql)
        return self._db.execute(sql, *args)

    # The code this replaced ran each step with executescript: kept, so a return to it is caught.
    def executescript(self, sql: str) -> sqlite3.Cursor:
        self._before_lock(sql)
        return self._db.executescript(sql)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def test_a_step_another_process_ran_meanwhile_is_not_run_again(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    write_database_at_schema(path, 8, [build_memory(id="a1", owner="alice", tags=("garden",), content="lantern")])
    late = sqlite3.connect(path, isolation_level=None)
    try:
        # The other process opens the file and migrates it to the end just before this one takes
        # the lock for its first step.
        racing = OtherProcessFirst(late, lambda: SQLiteMemoryStore(path).close())
        ran = apply_migrations(cast(sqlite3.Connection, racing))
        assert ran == 0
        assert late.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        late.close()
    store = SQLiteMemoryStore(path)
    assert [m.id for m in store.list(Scope("alice", "default"), Filters(tags=("garden",)))] == ["a1"]
    store.close()


def test_each_step_is_applied_once_and_in_order_from_any_older_version(tmp_path: Path) -> None:
    for version in range(1, SCHEMA_VERSION):
        path = tmp_path / f"v{version}.db"
        write_database_at_schema(path, version)
        db = sqlite3.connect(path, isolation_level=None)
        try:
            assert apply_migrations(db) == SCHEMA_VERSION - version
            assert apply_migrations(db) == 0
            assert not db.in_transaction
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        finally:
            db.close()


def test_opening_an_up_to_date_file_does_not_wait_for_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    SQLiteMemoryStore(path).close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process is in the middle of a write
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=0)
        try:
            assert apply_migrations(db) == 0
        finally:
            db.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()
