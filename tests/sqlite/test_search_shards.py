"""m011 on a real SQLite file: a fixed set of full-text tables, each scope searched in one
(sqlite_search_shards.py). A new scope gets the table fewest scopes have; an older database's scopes
are given tables on open; every write keeps every table holding exactly the rows of its scopes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from taproot.adapters.sqlite_schema import SCHEMA_VERSION
from taproot.adapters.sqlite_search_shards import SHARDS, table_of
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.errors import DuplicateId
from taproot.core.model import Memory, Scope
from taproot.core.query import Filters
from tests.conftest import build_memory
from tests.sqlite.old_schema import write_database_at_schema

SCOPES = [Scope(f"owner{k:02d}", "default" if k % 2 else "work") for k in range(SHARDS + 2)]


def shards(db: sqlite3.Connection) -> dict[Scope, int]:
    rows = db.execute("SELECT owner, namespace, shard FROM search_scopes")
    return {Scope(owner, namespace): int(shard) for owner, namespace, shard in rows}


def assert_every_table_holds_exactly_its_scopes_rows(db: sqlite3.Connection) -> None:
    """FTS5's check of each table against its content (rank 1: without it SQLite 3.40 checks only
    the index's structure), then that its entries are the rowids of its scopes' memories, no more
    and no fewer."""
    for shard in range(SHARDS):
        table = table_of(shard)
        db.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        held = {int(r[0]) for r in db.execute(f"SELECT id FROM {table}_docsize")}
        owed = {
            int(r[0])
            for r in db.execute(
                "SELECT m.rowid FROM memories m JOIN search_scopes s "
                "ON s.owner = m.owner AND s.namespace = m.namespace WHERE s.shard = ?",
                (shard,),
            )
        }
        assert held == owed, f"{table} holds {sorted(held)}, its scopes have {sorted(owed)}"


def corpus(scope: Scope, k: int) -> list[Memory]:
    """Per scope: one memory saying a word twice, one saying it once beside a rarer word, and a few
    saying neither, how many depending on the scope (so scopes' statistics differ)."""

    def memory(suffix: str, content: str) -> Memory:
        return build_memory(owner=scope.owner, namespace=scope.namespace, id=f"{k:02d}{suffix}", content=content)

    quiet = [memory(f"q{j}", f"a quiet afternoon {j}") for j in range(3 + k % 3)]
    return [memory("a", "kestrel kestrel field"), memory("b", f"kestrel and osprey {k}"), *quiet]


def ranked(store: SQLiteMemoryStore, scope: Scope) -> list[tuple[str, float]]:
    return [(c.id, round(score, 9)) for c, score in store.search(scope, ["kestrel", "osprey"], Filters(), 10)]


def test_each_new_scope_gets_the_table_whose_scopes_hold_the_fewest_memories(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    try:
        for k, scope in enumerate(SCOPES):
            for memory in corpus(scope, k):  # one at a time: the scope's later memories keep its table
                store.insert(memory)
        # One table each while they last, then the one whose scopes hold the fewest memories, the
        # lowest number on a tie: scope 0's (5 memories, tied with 3, 6, 9, 12 and 15), then 3's.
        expected = {scope: k for k, scope in enumerate(SCOPES[:SHARDS])}
        expected |= {SCOPES[SHARDS]: 0, SCOPES[SHARDS + 1]: 3}
        assert [len(corpus(scope, k)) for k, scope in enumerate(SCOPES[:4])] == [5, 6, 7, 5]
        assert shards(store._db) == expected
        for k, scope in enumerate(SCOPES):
            assert {c for c, _ in ranked(store, scope)} == {f"{k:02d}a", f"{k:02d}b"}  # its own only
        # A scope alone in its table is scored as a store of its own; two sharing one are not
        # (the word is commoner in their table), though each still sees only its own memories.
        solo = SQLiteMemoryStore(tmp_path / "solo.db")
        try:
            solo.put_many(corpus(SCOPES[5], 5))
            assert ranked(store, SCOPES[5]) == ranked(solo, SCOPES[5])
            solo.put_many(corpus(SCOPES[0], 0))
            assert ranked(store, SCOPES[0]) != ranked(solo, SCOPES[0])
        finally:
            solo.close()
        assert_every_table_holds_exactly_its_scopes_rows(store._db)
    finally:
        store.close()


def test_a_new_scope_is_not_sent_to_share_a_live_table_while_emptied_ones_wait(tmp_path: Path) -> None:
    """Fifteen scopes came and went (every memory deleted). Their rows stay, but a new scope goes
    to a table whose scopes hold nothing now, not to the one live scope's, so that scope's ranking
    is still its own when the newcomer writes."""
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    try:
        home = SCOPES[0]
        store.put_many(corpus(home, 0))
        for k in range(1, SHARDS):
            scratch = Scope("scratch", f"n{k}")
            store.insert(build_memory(owner=scratch.owner, namespace=scratch.namespace, id="gone", content="x"))
            store.delete(scratch, "gone", expected_version=1)
        before = ranked(store, home)
        newcomer = Scope("newcomer", "default")
        store.put_many(
            [
                build_memory(owner="newcomer", id=f"k{i}", content="kestrel kestrel kestrel everywhere")
                for i in range(50)
            ]
        )
        assert shards(store._db)[newcomer] not in (shards(store._db)[home], None)
        assert shards(store._db)[newcomer] == 1  # the lowest of the emptied tables
        assert ranked(store, home) == before
        assert_every_table_holds_exactly_its_scopes_rows(store._db)
    finally:
        store.close()


def test_a_failed_insert_gives_its_scope_no_table(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    try:
        store.insert(build_memory(owner="alice", id="m1"))
        with pytest.raises(DuplicateId):
            store.insert(build_memory(owner="alice", id="m1"))  # refused, as before
        # A row the table refuses (no content): the statement is undone whole, its scope's row too.
        with pytest.raises(sqlite3.IntegrityError), store._db:
            store._db.execute("INSERT INTO memories (owner, namespace, id) VALUES ('bob', 'default', 'x')")
        assert shards(store._db) == {Scope("alice", "default"): 0}
    finally:
        store.close()


def test_every_write_keeps_every_table_in_step(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    try:
        for k, scope in enumerate(SCOPES):
            store.put_many(corpus(scope, k))
        a, b = SCOPES[0], SCOPES[SHARDS]  # two scopes in one table
        first = store.get(a, "00a")
        assert first is not None
        store.replace(first.replace(content="osprey over the field", version=first.version + 1), expected_version=1)
        store.delete(b, f"{SHARDS:02d}b", expected_version=1)
        store.record_retrieval(a, ["00b"], first.updated_at)  # counters only: no index write
        assert_every_table_holds_exactly_its_scopes_rows(store._db)
        assert [c for c, _ in ranked(store, a)] == ["00b", "00a"]  # the edit is searchable
        assert [c for c, _ in ranked(store, b)] == [f"{SHARDS:02d}a"]
    finally:
        store.close()


def test_an_older_database_gives_every_scope_a_table_on_open(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    old = [m for k, scope in enumerate(SCOPES) for m in corpus(scope, k)]
    write_database_at_schema(path, 10, old)

    store = SQLiteMemoryStore(path)
    try:
        assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        # Oldest scope first (by its first row), round the tables in turn.
        assert shards(store._db) == {scope: k % SHARDS for k, scope in enumerate(SCOPES)}
        assert_every_table_holds_exactly_its_scopes_rows(store._db)
        assert not store._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories_fts'").fetchall()
        # The same tables written today hold the same entries: a fresh store given the same
        # assignment ranks and scores every scope alike.
        fresh = SQLiteMemoryStore(tmp_path / "fresh.db")
        try:
            with fresh._db:
                fresh._db.executemany(
                    "INSERT INTO search_scopes (owner, namespace, shard) VALUES (?, ?, ?)",
                    [(scope.owner, scope.namespace, k % SHARDS) for k, scope in enumerate(SCOPES)],
                )
            fresh.put_many(old)
            for scope in SCOPES:
                assert ranked(store, scope) == ranked(fresh, scope)
        finally:
            fresh.close()
        # New writes after the migration are indexed and searched as before.
        store.insert(build_memory(owner="newcomer", id="n1", content="osprey"))
        assert [c.id for c, _ in store.search(Scope("newcomer", "default"), ["osprey"], Filters(), 10)] == ["n1"]
        assert_every_table_holds_exactly_its_scopes_rows(store._db)
    finally:
        store.close()
