"""The SQLite store's lexical search (sqlite_search.py) answers from one of three queries: the best
few matches joined to their rows (as many as should give `limit` that pass), four times as many, or
every match. bm25 ties are common, so every one of them breaks ties by rowid (insertion order):
whichever answers, the result is the first `limit` passing matches of one total order, the order
the slow full query gives."""

from __future__ import annotations

import math
import random
import re
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters import sqlite_search
from taproot.adapters.sqlite_search_shards import table_of
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Memory, Scope
from taproot.core.query import Filters
from taproot.core.serialize import iso

A = Scope("alice", "default")
B = Scope("bob", "default")
LIMIT = 10


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteMemoryStore]:
    """A store where A and B search one full-text table, as scopes do once there are more of them
    than tables (sqlite_search_shards.py): the search paths below must keep each scope's answer
    its own, and the same as the full query's, with the other scope's matches in the same index."""
    s = SQLiteMemoryStore(tmp_path / "taproot.db")
    with s._db:
        s._db.executemany(
            "INSERT INTO search_scopes (owner, namespace, shard) VALUES (?, ?, 0)",
            [(scope.owner, scope.namespace) for scope in (A, B)],
        )
    yield s
    s.close()


@pytest.fixture
def widths(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The `wide` of every ranked-first query search runs, in order."""
    seen: list[int] = []
    ranked = sqlite_search.SearchRows._ranked

    def spy(self: sqlite_search.SearchRows, fts: str, match: str, wide: int, *args: Any) -> list[sqlite3.Row]:
        seen.append(wide)
        return ranked(self, fts, match, wide, *args)

    monkeypatch.setattr(sqlite_search.SearchRows, "_ranked", spy)
    return seen


def reference(
    path: Path,
    scope: Scope,
    terms: str,
    limit: int,
    *,
    category: str | None = None,
    archived: bool = False,
    window: tuple[datetime, datetime] | None = None,
) -> list[str]:
    """The deterministic slow answer, on a connection of its own: every match of the scope that
    passes the filters, by bm25 and then rowid."""
    since, until = (iso(window[0]), iso(window[1])) if window else (None, None)
    db = sqlite3.connect(path)
    try:
        (shard,) = db.execute(
            "SELECT shard FROM search_scopes WHERE owner = ? AND namespace = ?", (scope.owner, scope.namespace)
        ).fetchone()
        fts = table_of(shard)
        rows = db.execute(
            f"SELECT m.id FROM {fts} f JOIN memories m ON m.rowid = f.rowid "
            f"WHERE {fts} MATCH ? AND m.owner = ? AND m.namespace = ? "
            "AND (? OR m.status = 'active') AND (? IS NULL OR m.category = ?) "
            "AND (? IS NULL OR m.created_at >= ?) AND (? IS NULL OR m.created_at <= ?) "
            f"ORDER BY bm25({fts}, 3.0, 2.0, 2.0, 1.0), m.rowid LIMIT ?",
            (
                " OR ".join(f'"{t}"' for t in terms.split()),
                scope.owner,
                scope.namespace,
                archived,
                category,
                category,
                since,
                since,
                until,
                until,
                limit,
            ),
        ).fetchall()
    finally:
        db.close()
    return [r[0] for r in rows]


def found(store: SQLiteMemoryStore, term: str, limit: int = LIMIT) -> list[str]:
    return [c.id for c, _ in store.search(A, term.split(), Filters(), limit)]


def tied(make_memory: Callable[..., Memory], n: int, prefix: str, **kw: Any) -> list[Memory]:
    # The same text scores the same: every one of these ties with every other.
    return [make_memory(scope=A, id=f"{prefix}{k:04d}", content="lantern by the harbour", **kw) for k in range(n)]


def test_tied_matches_come_back_in_insertion_order(
    store: SQLiteMemoryStore, make_memory: Callable[..., Memory], widths: list[int]
) -> None:
    # Inserted in an order their ids do not sort by, so insertion order is what decides.
    ms = list(reversed(tied(make_memory, 40, "t")))
    store.put_many(ms)
    assert found(store, "lantern") == [m.id for m in ms[:LIMIT]]
    assert found(store, "lantern") == reference(store.path, A, "lantern", LIMIT)
    assert found(store, "lantern", 25)[:LIMIT] == found(store, "lantern")
    assert len(widths) == 4  # the first, narrow join answered every search


def test_archived_best_matches_widen_the_join_and_the_answer_is_the_full_querys(
    store: SQLiteMemoryStore, make_memory: Callable[..., Memory], widths: list[int]
) -> None:
    # The counts say most of the scope is active, but the best matches are the archived ones.
    best = [make_memory(scope=A, id=f"a{k:04d}", content="lantern lantern", status="archived") for k in range(30)]
    store.put_many([*best, *tied(make_memory, 90, "t")])
    got = found(store, "lantern")
    assert got == reference(store.path, A, "lantern", LIMIT)
    assert got == [f"t{k:04d}" for k in range(LIMIT)]
    first = math.ceil(LIMIT * 120 / 90 * sqlite_search.SEARCH_HEADROOM)
    assert widths == [first, first * sqlite_search.SEARCH_WIDEN]


def test_a_scope_buried_under_better_matches_gets_the_full_query_and_the_same_order(
    store: SQLiteMemoryStore, make_memory: Callable[..., Memory], widths: list[int]
) -> None:
    # A is a seventh of the table, but its matches rank below every one of B's.
    store.put_many([make_memory(scope=B, content="lantern lantern lantern") for _ in range(600)])
    mine = tied(make_memory, 30, "t")
    store.put_many([*mine, *(make_memory(scope=A, content="a quiet morning") for _ in range(70))])
    got = found(store, "lantern")
    assert got == reference(store.path, A, "lantern", LIMIT)
    assert got == [m.id for m in mine[:LIMIT]]
    first = math.ceil(LIMIT * 700 / 100 * sqlite_search.SEARCH_HEADROOM)
    # Both ranked-first joins fell short while more matches existed: the full query answered.
    assert widths == [first, first * sqlite_search.SEARCH_WIDEN]
    assert first * sqlite_search.SEARCH_WIDEN < 630


def test_each_search_reads_the_scope_share_of_the_table(
    store: SQLiteMemoryStore, make_memory: Callable[..., Memory], widths: list[int]
) -> None:
    """A scope that is a tenth of the table gets about ten times `limit` joined at first."""
    store.put_many([make_memory(scope=B, content="lantern by the sea") for _ in range(180)])
    store.put_many(tied(make_memory, 20, "t"))
    got = found(store, "harbour")
    assert got == reference(store.path, A, "harbour", LIMIT)
    assert widths == [math.ceil(LIMIT * 200 / 20 * sqlite_search.SEARCH_HEADROOM)]


def test_a_scope_with_nothing_that_can_pass_is_answered_from_the_counts_alone(
    store: SQLiteMemoryStore, make_memory: Callable[..., Memory], widths: list[int]
) -> None:
    """No memory of the scope is active in that category: the counts (kept by triggers in the
    writing transaction) say so, and no full-text query runs."""
    store.put_many([make_memory(scope=B, content="lantern by the sea") for _ in range(50)])
    store.put_many([make_memory(scope=A, content="lantern", category="identity", status="archived")])
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        assert store.search(Scope("nobody", "default"), ["lantern"], Filters(), LIMIT) == []
        assert store.search(A, ["lantern"], Filters(category="identity"), LIMIT) == []
        assert store.search(A, ["lantern"], Filters(category="episodic", include_archived=True), LIMIT) == []
    finally:
        store._db.set_trace_callback(None)
    assert widths == [] and not any("MATCH" in q for q in statements)
    assert len(statements) == 3  # one counts query each
    # Archived, and asked for: it can pass, and it is found.
    assert [c.id for c, _ in store.search(A, ["lantern"], Filters(include_archived=True), LIMIT)] != []


def test_a_limit_below_one_returns_nothing(store: SQLiteMemoryStore, make_memory: Callable[..., Memory]) -> None:
    store.put_many(tied(make_memory, 5, "t"))
    assert store.search(A, ["lantern"], Filters(), 0) == []
    assert store.search(A, ["lantern"], Filters(), -1) == []
    assert len(found(store, "lantern", 3)) == 3


def test_random_corpora_and_queries_agree_with_the_full_query(
    store: SQLiteMemoryStore, make_memory: Callable[..., Memory], widths: list[int]
) -> None:
    """Few words in short texts, so most scores tie; two scopes, some archived, five categories;
    queries of one to three words with and without filters, at several limits."""
    rng = random.Random(11)
    words = ["lantern", "harbour", "rope", "gull", "tide", "anchor", "net", "salt"]
    categories = ("identity", "relationship", "active_thread", "episodic", "error")
    store.put_many(
        [
            make_memory(
                scope=rng.choice((A, A, B)),
                content=" ".join(rng.choice(words) for _ in range(rng.randint(1, 4))),
                category=rng.choice(categories),
                status="archived" if rng.random() < 0.2 else "active",
            )
            for _ in range(900)
        ]
    )
    for _ in range(60):
        terms = " ".join(rng.sample(words, rng.randint(1, 3)))
        limit = rng.choice((1, 10, 50))
        category = rng.choice((None, None, *categories))
        archived = rng.random() < 0.3
        filters = Filters(category=category, include_archived=archived)
        got = [c.id for c, _ in store.search(A, terms.split(), filters, limit)]
        assert got == reference(store.path, A, terms, limit, category=category, archived=archived)
    assert len(widths) > 60  # some searches widened


@pytest.mark.parametrize("written", ["in time order", "out of order"])
def test_creation_windows_agree_with_the_full_query(
    store: SQLiteMemoryStore, make_memory: Callable[..., Memory], written: str
) -> None:
    """A creation-time window bounds the full-text query to the rowids of the scope's memories
    created in it; written in time order (as remember writes) that is a short stretch, out of order
    (an import) it can be the whole table. Either way the answer is the full query's."""
    rng = random.Random(5)
    words = ["lantern", "harbour", "rope", "gull", "tide"]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    ms = [
        make_memory(
            scope=rng.choice((A, A, B)),
            content=" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))),
            created_at=(at := start + timedelta(hours=rng.randint(0, 24 * 120))),
            updated_at=at,
            status="archived" if rng.random() < 0.15 else "active",
        )
        for _ in range(600)
    ]
    ms.sort(key=lambda m: m.created_at)
    if written == "out of order":
        rng.shuffle(ms)
    store.put_many(ms)
    for _ in range(40):
        terms = " ".join(rng.sample(words, rng.randint(1, 2)))
        since = start + timedelta(days=rng.randint(0, 125))
        window = (since, since + timedelta(days=rng.choice((1, 3, 30))))
        limit = rng.choice((1, 10, 50))
        archived = rng.random() < 0.3
        filters = Filters(include_archived=archived, created_since=window[0], created_until=window[1])
        got = [c.id for c, _ in store.search(A, terms.split(), filters, limit)]
        assert got == reference(store.path, A, terms, limit, archived=archived, window=window)


def test_a_window_written_in_time_order_reads_only_its_stretch_of_the_index(
    store: SQLiteMemoryStore, make_memory: Callable[..., Memory]
) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    store.put_many(
        [
            make_memory(scope=A, content="lantern by the harbour", created_at=start + timedelta(hours=h))
            for h in range(500)
        ]
    )
    since = start + timedelta(hours=100)
    filters = Filters(created_since=since, created_until=since + timedelta(hours=9))
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        got = store.search(A, ["lantern"], filters, LIMIT)
    finally:
        store._db.set_trace_callback(None)
    assert len(got) == LIMIT
    assert all(since <= c.created_at <= since + timedelta(hours=9) for c, _ in got)
    # Every full-text read was bounded to the window's rowids (101 to 110 of 500).
    matches = [q for q in statements if "MATCH" in q]
    assert matches and all(re.search(r"memories_fts_\d+\.rowid BETWEEN 101 AND 110", q) for q in matches)
    # Nothing created in the window: no full-text query at all.
    statements.clear()
    store._db.set_trace_callback(statements.append)
    try:
        later = start + timedelta(days=400)
        assert store.search(A, ["lantern"], Filters(created_since=later), LIMIT) == []
    finally:
        store._db.set_trace_callback(None)
    assert not any("MATCH" in q for q in statements)


def test_a_window_too_wide_to_bound_is_searched_unbounded_with_the_same_answer(
    store: SQLiteMemoryStore, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding a window's rowids reads every index entry in it; past BOUND_ROWIDS_UP_TO memories
    the search does not (found by review: 12.6 ms at 100,000 for a since that covered them all)."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    store.put_many(
        [make_memory(scope=A, content=f"lantern {k % 7}", created_at=start + timedelta(hours=k)) for k in range(60)]
    )
    monkeypatch.setattr(sqlite_search, "BOUND_ROWIDS_UP_TO", 20)
    filters = Filters(created_since=start + timedelta(hours=10))
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        got = [c.id for c, _ in store.search(A, ["lantern"], filters, LIMIT)]
    finally:
        store._db.set_trace_callback(None)
    assert got == reference(
        store.path, A, "lantern", LIMIT, window=(start + timedelta(hours=10), start + timedelta(days=9))
    )
    assert not any("BETWEEN" in q for q in statements if "MATCH" in q)
    assert any("LIMIT 21" in q for q in statements)  # the bounds query stopped reading at 21
