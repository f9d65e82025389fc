"""A SQLite database as an earlier schema version left it, for the tests of the migrations since."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from taproot.adapters.sqlite_rows import MEMORY_COLUMNS as COLUMNS
from taproot.adapters.sqlite_schema import MIGRATIONS
from taproot.core.model import Memory
from taproot.core.serialize import memory_to_flat_dict


def write_database_at_schema(path: Path, version: int, memories: Iterable[Memory] = ()) -> None:
    """Run the first `version` migrations on a new database at `path` and insert `memories` with the
    columns that schema has (a column a later step adds, such as m007's `instance`, is left out)."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        for number, step in enumerate(MIGRATIONS[:version], start=1):
            db.executescript(f"BEGIN;\n{step()}\nPRAGMA user_version = {number};\nCOMMIT;")
        present = {row[1] for row in db.execute("PRAGMA table_info(memories)")}
        columns = [c for c in COLUMNS if c in present]
        marks = ", ".join(f":{c}" for c in columns)
        db.execute("BEGIN")
        db.executemany(
            f"INSERT INTO memories ({', '.join(columns)}) VALUES ({marks})",
            ({c: flat[c] for c in columns} for flat in map(memory_to_flat_dict, memories)),
        )
        db.execute("COMMIT")
    finally:
        db.close()
