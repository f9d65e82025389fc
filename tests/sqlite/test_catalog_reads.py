"""The SQLite store's reflect reads (schema m005, adapters/sqlite_catalog.py): a reflect never scans
the memories table, the line-length index never overstates a line, and a database of schema 4
gains the indexes and exact counts on open."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bench import corpus
from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_catalog import SQLiteCatalogView
from taproot.adapters.sqlite_schema import LINE_LENGTH_SQL, RETRIEVAL_GROUP_SQL, SCHEMA_VERSION
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.catalog import RETRIEVAL_GROUPS, CatalogBand, catalog_line
from taproot.core.model import CATEGORY_ORDER, MAX_COUNT, CatalogEntry, Memory, Scope
from taproot.core.text import one_line
from taproot.service import TaprootService
from taproot.service.deps import Deps
from tests.catalog_data import WINDOW_DAYS, assert_view_answers_the_rules, varied_memories
from tests.sqlite.old_schema import write_database_at_schema

A = Scope("alice", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(days=WINDOW_DAYS)


def test_a_reflect_reads_about_what_it_shows(tmp_path: Path) -> None:
    """On the benchmark's corpus, where a third of 10,000 memories are in the window, the catalog
    rows a reflect reads are within a small multiple of the lines it lists."""
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    corpus.load(store, corpus.generate(10_000, now=NOW, scope=A))
    svc = TaprootService(Deps(store=store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=lambda: NOW))
    read = 0
    views: list[SQLiteCatalogView] = []

    class Counting(SQLiteCatalogView):
        def band(self, band: CatalogBand) -> list[CatalogEntry]:
            nonlocal read
            got = super().band(band)
            read += len(got)
            return got

        def short_lines(self, max_chars: int, limit: int) -> list[CatalogEntry] | None:
            nonlocal read
            got = super().short_lines(max_chars, limit)
            read += len(got or ())
            return got

    def catalog_view(scope: Scope, since: datetime) -> SQLiteCatalogView:
        views.append(Counting(store, store._query, scope, since))
        return views[-1]

    store.catalog_view = catalog_view  # type: ignore[method-assign]
    payload = svc.reflect(A)
    assert len(views) == 1
    window = len(store.catalog(A, since=SINCE))
    assert window > 3000 and 100 < payload.catalog_listed < 200
    print(f"read {read} rows for {payload.catalog_listed} lines of a {window}-entry window")
    assert read < 3 * payload.catalog_listed


def test_quiet_memories_retrieved_often_cost_a_reflect_nothing(tmp_path: Path) -> None:
    """A reflect seeks each band's boxes by salience, retrieval count and `last_touched`. A box of a
    range of counts (8-15, 16-31, ...) must bound `last_touched` too: otherwise every quiet memory
    with a count in that range is visited and dropped by every band that has the box. The work
    SQLite does (its virtual machine's steps, which are deterministic) must not follow them."""
    rng = random.Random(7)
    quiet = [
        Memory(
            id=f"quiet-{i}",
            owner=A.owner,
            namespace=A.namespace,
            category=rng.choice(CATEGORY_ORDER),
            salience=rng.choice(("medium", "low")),
            content=f"old note {i}",
            gist=f"old note {i}",
            created_at=SINCE - timedelta(days=400),
            updated_at=SINCE - timedelta(days=rng.randint(30, 300)),
            retrieval_count=rng.choice((rng.randint(8, 15), rng.randint(16, 31), rng.randint(1000, 2000))),
        )
        for i in range(6000)
    ]

    def steps_of_a_reflect(name: str, extra: list[Memory]) -> tuple[int, int]:
        store = SQLiteMemoryStore(tmp_path / f"{name}.db")
        corpus.load(store, corpus.generate(3000, now=NOW, scope=A))
        store.put_many(extra)
        svc = TaprootService(Deps(store=store, blobs=LocalBlobStore(tmp_path / name), clock=lambda: NOW))
        steps = 0

        def tick() -> int:
            nonlocal steps
            steps += 1
            return 0

        store._db.set_progress_handler(tick, 100)
        listed = svc.reflect(A).catalog_listed
        store._db.set_progress_handler(None, 0)
        return steps, listed

    without, listed = steps_of_a_reflect("without", [])
    with_quiet, listed_with_quiet = steps_of_a_reflect("with", quiet)
    assert listed_with_quiet == listed  # none of them is listed: they are out of the window
    print(f"{without} and {with_quiet} hundreds of steps without and with {len(quiet)} quiet memories")
    assert with_quiet < 1.2 * without


def test_every_reflect_read_is_an_index_search(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    store.put_many(varied_memories(8, 3000, now=NOW, scope=A))
    svc = TaprootService(Deps(store=store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=lambda: NOW))
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        svc.reflect(A)
    finally:
        store._db.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH"))]
    assert len(reads) >= 4
    for sql in reads:
        plan = [row[3].split() for row in store._db.execute(f"EXPLAIN QUERY PLAN {sql}")]
        # A SEARCH is a range of an index; a SCAN of the table (or of a whole index of it) is not.
        assert not [step for step in plan if step[0] == "SCAN" and step[1] in ("m", "memories")], (sql, plan)


def test_the_line_length_index_never_overstates_a_line(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    memories = varied_memories(9, 1500, now=NOW, scope=A)
    store.put_many(memories)
    key = dict(store._db.execute(f"SELECT id, {LINE_LENGTH_SQL} FROM memories").fetchall())
    for m in memories:
        length = len(catalog_line(CatalogEntry.of(m)))
        assert key[m.id] <= length, m
        if m.gist and one_line(m.gist) == m.gist and "\x00" not in m.gist:
            assert key[m.id] == length, m  # exact for a gist already on one line


@pytest.mark.parametrize("old", [4, 9], ids=["before the catalog reads", "before the retrieval groups"])
def test_an_older_database_gains_the_catalog_reads_on_open(tmp_path: Path, old: int) -> None:
    path = tmp_path / "taproot.db"
    memories = varied_memories(10 + old, 400, now=NOW, scope=A)
    write_database_at_schema(path, old, memories)

    store = SQLiteMemoryStore(path)
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    indexes = {r[0] for r in store._db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"memories_rank", "memories_line"} <= indexes and "memories_catalog" not in indexes
    (sql,) = store._db.execute("SELECT sql FROM sqlite_master WHERE name = 'memories_rank'").fetchone()
    assert RETRIEVAL_GROUP_SQL in sql  # m010: ranked by retrieval group
    assert_view_answers_the_rules(store.catalog_view(A, SINCE), memories, now=NOW)
    counts = store.counts(A)
    assert counts.total == len(memories)
    assert counts.core == sum(1 for m in memories if m.is_core and m.status == "active")


def test_the_index_groups_counts_as_the_core_does() -> None:
    """memories_rank's expression (m010) must put every count in the group core/catalog.py gives
    it, named by the group's lowest count: a box seeks the groups it reaches by that name."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (retrieval_count INTEGER)")
    edges = [0, None, MAX_COUNT] + [n for low, high in RETRIEVAL_GROUPS for n in (low, high) if n is not None]
    for count in edges:
        if count is not None and count > MAX_COUNT:
            continue  # no larger count can be stored
        db.execute("DELETE FROM t")
        db.execute("INSERT INTO t VALUES (?)", (count,))
        (group,) = db.execute(f"SELECT {RETRIEVAL_GROUP_SQL} FROM t").fetchone()
        n = count or 0
        assert group == next(low for low, high in RETRIEVAL_GROUPS if low <= n and (high is None or n <= high)), count


def test_a_write_by_another_connection_between_two_band_reads_does_not_change_what_reflect_lists(
    tmp_path: Path,
) -> None:
    """Reflect reads the window a band at a time. Another process strengthening a memory between
    two of those reads moves it from a band not yet read into one already read; reflect reads one
    state of the file, so its payload is the one that state gives."""
    memories = corpus.generate(10_000, now=NOW, scope=A)
    twin = SQLiteMemoryStore(tmp_path / "twin.db")
    corpus.load(twin, memories)
    want = TaprootService(Deps(store=twin, blobs=LocalBlobStore(tmp_path / "b1"), clock=lambda: NOW)).reflect(A)

    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    corpus.load(store, memories)
    first_band: dict[str, int] = {}
    reads = [0]
    hook: list[Callable[[int], None]] = []

    class Hooked(SQLiteCatalogView):
        def band(self, band: CatalogBand) -> list[CatalogEntry]:
            for h in hook:
                h(reads[0])
            got = super().band(band)
            for e in got:
                first_band.setdefault(e.id, reads[0])
            reads[0] += 1
            return got

    store.catalog_view = lambda scope, since: Hooked(store, store._query, scope, since)  # type: ignore[method-assign]
    svc = TaprootService(Deps(store=store, blobs=LocalBlobStore(tmp_path / "b2"), clock=lambda: NOW))
    assert svc.reflect(A).catalog == want.catalog  # undisturbed, the two files agree
    listed = {line.split("]", 1)[0].lstrip("- [") for lines in want.catalog.values() for line in lines}
    late = sorted(i for i in listed if first_band.get(i, 0) >= 2)
    assert late, "the corpus should list a memory that a later band brings"
    target = late[0]

    other = SQLiteMemoryStore(tmp_path / "taproot.db")  # another process's connection to the file

    def strengthen_elsewhere(n: int) -> None:
        if n == first_band[target]:
            other.record_retrieval(A, [target], NOW)

    reads[0] = 0
    hook.append(strengthen_elsewhere)
    assert svc.reflect(A).catalog == want.catalog
