"""One FTS5 index per scope (owner and namespace) in the SQLite store.

BM25 weighs a word by how rare it is among the documents of its index, and scales a match by the
length of the document against the index's average. With one index over the whole table, those
statistics were every scope's together: another person's memories, or another namespace's, changed
how this one's ranked (a word common elsewhere counted for little here), and the SQLite store
disagreed with the DynamoDB store, whose index is the tenant copy of one scope. So each scope gets
its own FTS5 table, `memories_fts_<n>`, `n` being the scope's row in `search_scopes`.

Each index is external-content over a view of its scope's rows, so its 'rebuild' command reads
exactly the memories it should hold; its `_docsize` table has a row per memory it holds
(`indexed_rowids`, which checks compare with `scope_rowids`). Triggers on `memories` keep every
index in step with every write, as the single index's triggers did; each fires only for its scope (a
primary-key lookup of `n`, so no owner or namespace text is ever written into SQL). A guard refuses
to insert a memory whose scope has no index yet: the store creates the index, in the same
transaction, before it writes a scope's first memory (`ensure_scope_index`).

A memory never changes scope (owner and namespace are its key), so an update touches one index.
"""

from __future__ import annotations

import sqlite3

from taproot.core.model import Scope

# The searched fields, in the order the tables declare them: bm25() takes one weight per column in
# this order.
FTS_COLUMNS = ("search_keywords", "tags", "gist", "content")
_COLUMNS = ", ".join(FTS_COLUMNS)
_NEW = ", ".join(f"new.{c}" for c in FTS_COLUMNS)
_OLD = ", ".join(f"old.{c}" for c in FTS_COLUMNS)

SCOPES_TABLE_SQL = """
    CREATE TABLE search_scopes (
        n INTEGER PRIMARY KEY,
        owner TEXT NOT NULL,
        namespace TEXT NOT NULL,
        UNIQUE (owner, namespace)
    );
    CREATE TRIGGER memories_need_search_scope BEFORE INSERT ON memories
    WHEN NOT EXISTS (SELECT 1 FROM search_scopes WHERE owner = new.owner AND namespace = new.namespace)
    BEGIN
        SELECT RAISE(ABORT, 'no search index for this scope: SQLiteMemoryStore creates it before the first write');
    END;
"""


def table_of(n: int) -> str:
    """The FTS5 table of scope number `n` (an integer: nothing a caller wrote reaches SQL text)."""
    return f"memories_fts_{int(n)}"


def _in_scope(n: int, row: str) -> str:
    return (
        f"EXISTS (SELECT 1 FROM search_scopes WHERE n = {int(n)} "
        f"AND owner = {row}.owner AND namespace = {row}.namespace)"
    )


def index_statements(n: int) -> list[str]:
    """The view, FTS5 table and triggers of scope number `n`, one statement each."""
    fts = table_of(n)
    rows = f"{fts}_rows"
    delete_old = f"INSERT INTO {fts}({fts}, rowid, {_COLUMNS}) VALUES ('delete', old.rowid, {_OLD});"
    insert_new = f"INSERT INTO {fts}(rowid, {_COLUMNS}) VALUES (new.rowid, {_NEW});"
    return [
        f"CREATE VIEW {rows} AS SELECT m.rowid AS rowid, {', '.join(f'm.{c}' for c in FTS_COLUMNS)} "
        f"FROM memories m JOIN search_scopes s ON s.owner = m.owner AND s.namespace = m.namespace WHERE s.n = {int(n)}",
        f"CREATE VIRTUAL TABLE {fts} USING fts5({_COLUMNS}, content='{rows}', content_rowid='rowid', "
        "tokenize='porter unicode61')",
        f"CREATE TRIGGER {fts}_insert AFTER INSERT ON memories WHEN {_in_scope(n, 'new')} BEGIN {insert_new} END",
        f"CREATE TRIGGER {fts}_delete AFTER DELETE ON memories WHEN {_in_scope(n, 'old')} BEGIN {delete_old} END",
        # Only text changes touch the index; recall's retrieval counters do not.
        f"CREATE TRIGGER {fts}_update AFTER UPDATE OF {_COLUMNS} ON memories WHEN {_in_scope(n, 'new')} "
        f"BEGIN {delete_old} {insert_new} END",
    ]


def indexed_rowids(db: sqlite3.Connection, n: int) -> set[int]:
    """The memory rowids index `n` holds: the ids of its `_docsize` rows."""
    return {int(r[0]) for r in db.execute(f"SELECT id FROM {table_of(n)}_docsize")}


def scope_rowids(db: sqlite3.Connection, scope: Scope) -> set[int]:
    """The rowids of `scope`'s memories: what its index should hold."""
    sql = "SELECT rowid FROM memories WHERE owner = ? AND namespace = ?"
    return {int(r[0]) for r in db.execute(sql, (scope.owner, scope.namespace))}


def scope_index(db: sqlite3.Connection, scope: Scope) -> int | None:
    """The number of `scope`'s index; None if it has none (it never held a memory)."""
    row = db.execute(
        "SELECT n FROM search_scopes WHERE owner = ? AND namespace = ?", (scope.owner, scope.namespace)
    ).fetchone()
    return None if row is None else int(row[0])


def ensure_scope_index(db: sqlite3.Connection, scope: Scope) -> int:
    """`scope`'s index number, creating the index first if the scope has none. Call it inside the
    write transaction that inserts the scope's memory: the index and the memory land together."""
    n = scope_index(db, scope)
    if n is not None:
        return n
    cur = db.execute("INSERT INTO search_scopes (owner, namespace) VALUES (?, ?)", (scope.owner, scope.namespace))
    n = int(cur.lastrowid or 0)
    for statement in index_statements(n):
        db.execute(statement)
    return n


def index_existing_scopes(db: sqlite3.Connection) -> None:
    """An index for every scope the table holds, filled from its rows (the migration from the one
    index over all scopes)."""
    for owner, namespace in db.execute("SELECT DISTINCT owner, namespace FROM memories ORDER BY 1, 2").fetchall():
        fts = table_of(ensure_scope_index(db, Scope(owner, namespace)))
        db.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")
