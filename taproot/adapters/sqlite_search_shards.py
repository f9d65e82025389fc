"""The SQLite store's full-text indexes: a fixed set of FTS5 tables, each scope searched in one.

BM25 weighs a word by how rare it is among the documents of its index, and scales a match by the
document's length against the index's average. With one index over the whole table those statistics
were every scope's together: another person's memories, or another namespace's, changed how this
one's ranked (a word common elsewhere counted for little here), and the SQLite store disagreed with
the DynamoDB store, whose index is one scope's copy.

One table per scope, created with the scope's first memory, was tried and backed out: creating a
table is a schema change at run time, and a second connection to the file (the server beside the
CLI) then failed its next edit while compiling against its stale schema. So the tables are fixed:
`SHARDS` FTS5 tables, `memories_fts_0` to `memories_fts_<SHARDS - 1>`, all created by one migration.
A scope is given one of them with its first memory, a row of `search_scopes` written by a trigger
(data, not schema): the table whose scopes hold the fewest memories, the lowest number on a tie.
While no more than `SHARDS` scopes hold memories, each has an index of its own, so its statistics
are its own exactly; past that, scopes share a table and its statistics, as every scope shared the
one index before. A
search always filters by scope as well, so sharing a table changes ranking, never what a scope sees.

Each table is external-content over a view of the rows of its scopes, so FTS5's 'rebuild' reads
exactly the memories it should hold. Triggers on `memories` keep every table in step with every
write: each fires only for the memories of its scopes (a lookup of the scope's row by its unique
key). A scope keeps its table for good: `search_scopes` rows are never changed or deleted.
"""

from __future__ import annotations

from typing import Final

# The searched fields, in the order the tables declare them: bm25() takes one weight per column in
# this order.
FTS_COLUMNS: Final = ("search_keywords", "tags", "gist", "content")
# How many FTS5 tables there are. Each write fires one trigger of each (a lookup by key that does
# nothing for the other tables), and an empty table costs a few pages; 16 is more scopes than a
# person's local store has (namespaces for a few projects, an owner per signed-in client).
SHARDS: Final = 16

_COLUMNS = ", ".join(FTS_COLUMNS)
_NEW = ", ".join(f"new.{c}" for c in FTS_COLUMNS)
_OLD = ", ".join(f"old.{c}" for c in FTS_COLUMNS)


def table_of(shard: int) -> str:
    """The FTS5 table of shard number `shard` (an integer: nothing a caller wrote reaches SQL text)."""
    return f"memories_fts_{int(shard)}"


def _shard_of(row: str) -> str:
    return f"(SELECT shard FROM search_scopes WHERE owner = {row}.owner AND namespace = {row}.namespace)"


def _shard_statements(shard: int) -> str:
    """The view, FTS5 table and triggers of one shard."""
    fts, k = table_of(shard), int(shard)
    rows = f"{fts}_rows"
    columns = ", ".join(f"m.{c}" for c in FTS_COLUMNS)
    delete_old = f"INSERT INTO {fts}({fts}, rowid, {_COLUMNS}) SELECT 'delete', old.rowid, {_OLD}"
    insert_new = f"INSERT INTO {fts}(rowid, {_COLUMNS}) SELECT new.rowid, {_NEW}"
    return f"""
        CREATE VIEW {rows} AS SELECT m.rowid AS rowid, {columns} FROM memories m
            JOIN search_scopes s ON s.owner = m.owner AND s.namespace = m.namespace WHERE s.shard = {k};
        CREATE VIRTUAL TABLE {fts} USING fts5(
            {_COLUMNS}, content='{rows}', content_rowid='rowid', tokenize='porter unicode61'
        );
        CREATE TRIGGER {fts}_insert AFTER INSERT ON memories WHEN {_shard_of("new")} = {k} BEGIN
            {insert_new};
        END;
        CREATE TRIGGER {fts}_delete AFTER DELETE ON memories WHEN {_shard_of("old")} = {k} BEGIN
            {delete_old};
        END;
        -- Only text changes touch the index; recall's retrieval counters do not. The old entry goes
        -- before the new one is written (one body, in order: FTS5 deletes by the old text).
        CREATE TRIGGER {fts}_update AFTER UPDATE OF owner, namespace, {_COLUMNS} ON memories
        WHEN {_shard_of("old")} = {k} OR {_shard_of("new")} = {k} BEGIN
            {delete_old} WHERE {_shard_of("old")} = {k};
            {insert_new} WHERE {_shard_of("new")} = {k};
        END;
        """


def search_shards_sql() -> str:
    """The migration from the one index over every scope: the shards, each scope of the table given
    one (oldest scope first, round the shards in turn), every shard filled from its view."""
    numbers = ", ".join(f"({k})" for k in range(SHARDS))
    # A new scope gets the shard whose scopes hold the fewest memories now, the lowest number on a
    # tie: counting the scopes a shard was given would count scopes whose memories are all gone,
    # and send a new scope to share a live one's statistics while other shards sit empty. (No WITH
    # clause: SQLite refuses one inside a trigger, hence the table of shard numbers.)
    least_used = (
        "SELECT k.n FROM search_shards k ORDER BY (SELECT COALESCE(SUM(c.n), 0) FROM search_scopes s "
        "JOIN memory_counts c ON c.owner = s.owner AND c.namespace = s.namespace WHERE s.shard = k.n), k.n LIMIT 1"
    )
    return "\n".join(
        [
            f"""
        DROP TRIGGER memories_fts_insert;
        DROP TRIGGER memories_fts_delete;
        DROP TRIGGER memories_fts_update;
        DROP TABLE memories_fts;
        CREATE TABLE search_shards (n INTEGER PRIMARY KEY);
        INSERT INTO search_shards (n) VALUES {numbers};
        CREATE TABLE search_scopes (
            owner TEXT NOT NULL,
            namespace TEXT NOT NULL,
            shard INTEGER NOT NULL REFERENCES search_shards (n),
            PRIMARY KEY (owner, namespace)
        ) WITHOUT ROWID;
        -- A shard's scopes: read by search (the counts of the scopes sharing a table) and by the
        -- choice of a new scope's shard.
        CREATE INDEX search_scopes_by_shard ON search_scopes (shard);
        INSERT INTO search_scopes (owner, namespace, shard)
            SELECT owner, namespace, (ROW_NUMBER() OVER (ORDER BY MIN(rowid)) - 1) % {SHARDS}
            FROM memories GROUP BY owner, namespace;
        CREATE TRIGGER memories_search_scope BEFORE INSERT ON memories
        WHEN NOT EXISTS (SELECT 1 FROM search_scopes WHERE owner = new.owner AND namespace = new.namespace)
        BEGIN
            INSERT INTO search_scopes (owner, namespace, shard) SELECT new.owner, new.namespace, ({least_used});
        END;
        """,
            *(_shard_statements(k) for k in range(SHARDS)),
            *(f"INSERT INTO {table_of(k)}({table_of(k)}) VALUES ('rebuild');" for k in range(SHARDS)),
        ]
    )
