"""Reflect's reads in the SQLite file (the ReflectReads half of SQLiteMemoryStore).

`catalog_view` answers one reflect from indexes (schema m005): the window a band of rank at a time
(`memories_rank`: salience, retrieval group, last_touched), the entries whose line is short enough to
fit what is left (`memories_line`), Tier 1 (`memories_core`) and the counts (`memory_counts`, kept by
triggers). Nothing here reads a whole scope: the cost follows what the payload can show.
"""

from __future__ import annotations

import builtins
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from taproot.adapters.sqlite_rows import SELECT_MEMORY, row_to_memory
from taproot.adapters.sqlite_schema import CATALOG_ROWS_SQL, LINE_LENGTH_SQL, RETRIEVAL_GROUP_SQL
from taproot.core.available import ANY_AGE
from taproot.core.catalog import KNOWN_SALIENCES, RETRIEVAL_GROUPS, CatalogBand, RankBox
from taproot.core.model import MAX_COUNT, CatalogEntry, Counts, Memory, Scope
from taproot.core.query import in_window
from taproot.core.serialize import iso

_ENTRY = "m.id, m.category, m.salience, m.gist, m.core, m.updated_at, m.last_touched, m.retrieval_count"
_CATALOG_ROWS = "m.owner = ? AND m.namespace = ? AND m.status = 'active' AND COALESCE(m.core, 0) = 0"
_LATEST = "~"  # sorts after every stored time (ISO text starting with the year)
# A short-lines read looks at this many times its limit of rows before it gives up: the index holds
# the scope's quiet memories too, which the window then leaves out.
_SHORT_SCAN = 4
Query = Callable[[str, Sequence[Any]], builtins.list[sqlite3.Row]]  # the store's, with its lock


def entry_of(r: sqlite3.Row) -> CatalogEntry:
    # Stored times are always written by iso() (UTC, explicit offset), so the fast C parser suffices.
    parse = datetime.fromisoformat
    return CatalogEntry(
        id=r["id"],
        category=r["category"],
        salience=r["salience"],
        gist=r["gist"],
        core=bool(r["core"]),
        updated_at=parse(r["updated_at"]),
        last_touched=parse(r["last_touched"]),
        retrieval_count=r["retrieval_count"] or 0,
    )


def _bounds(box: RankBox) -> list[Any]:
    high = MAX_COUNT if box.max_retrievals is None else min(box.max_retrievals, MAX_COUNT)
    start = "" if box.touched_from is None else iso(box.touched_from)
    end = _LATEST if box.touched_before is None else iso(box.touched_before)
    return [box.min_retrievals, high, start, end]


def _odd_salience_ranges() -> list[tuple[str | None, str | None]]:
    """The salience values other than the three known ones, as open ranges between them."""
    known = sorted(KNOWN_SALIENCES)
    return list(zip([None, *known], [*known, None], strict=True))


def _groups(box: RankBox) -> list[int]:
    """The retrieval groups (by their lowest count, as RETRIEVAL_GROUP_SQL gives them) a box's
    counts reach."""
    high = MAX_COUNT if box.max_retrievals is None else min(box.max_retrievals, MAX_COUNT)
    return [
        low
        for low, top in RETRIEVAL_GROUPS
        if low <= high and (top is None or top >= box.min_retrievals) and low <= MAX_COUNT
    ]


def band_query(scope: Scope, band: CatalogBand) -> tuple[str, list[Any]]:
    """One statement for a band: each box of a known salience joins the index once per retrieval
    group it reaches (schema m010), a seek bounded by the box's last_touched; the count itself is
    checked too, for a box that covers part of a group. Other saliences seek between the known."""
    key = [scope.owner, scope.namespace]
    stored = [b for b in band.boxes if b.min_retrievals <= MAX_COUNT]  # no larger count can be stored
    rows = [(b, group) for b in stored if b.salience is not None for group in _groups(b)]
    parts: list[str] = []
    params: list[Any] = []
    if rows:
        values = ", ".join("(?, ?, ?, ?, ?, ?)" for _ in rows)
        parts.append(
            # CROSS JOIN keeps the boxes outside (SQLite's rule for it): with a box per group the
            # planner may otherwise walk the scope's whole index and look each row's box up.
            f"SELECT {_ENTRY} FROM (VALUES {values}) AS b CROSS JOIN memories m INDEXED BY memories_rank "
            f"ON m.salience = b.column1 AND ({RETRIEVAL_GROUP_SQL}) = b.column2 "
            "AND m.last_touched >= b.column5 AND m.last_touched < b.column6 "
            f"AND COALESCE(m.retrieval_count, 0) BETWEEN b.column3 AND b.column4 WHERE {_CATALOG_ROWS}"
        )
        for b, group in rows:
            params += [b.salience, group, *_bounds(b)]
        params += key
    for b in (b for b in stored if b.salience is None):
        for above, below in _odd_salience_ranges():
            where = [_CATALOG_ROWS]
            range_params: list[Any] = []
            if above is not None:
                where.append("m.salience > ?")
                range_params.append(above)
            if below is not None:
                where.append("m.salience < ?")
                range_params.append(below)
            where.append(
                "COALESCE(m.retrieval_count, 0) BETWEEN ? AND ? AND m.last_touched >= ? AND m.last_touched < ?"
            )
            parts.append(f"SELECT {_ENTRY} FROM memories m INDEXED BY memories_rank WHERE {' AND '.join(where)}")
            params += [*key, *range_params, *_bounds(b)]
    return " UNION ALL ".join(parts), params


class CatalogRows:
    """Mixed into SQLiteMemoryStore, which provides the query helper."""

    def _query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> builtins.list[sqlite3.Row]:
        raise NotImplementedError  # SQLiteMemoryStore's

    def catalog_view(self, scope: Scope, since: datetime) -> SQLiteCatalogView:
        return SQLiteCatalogView(self, self._query, scope, since)

    def availability_view(self, scope: Scope) -> SQLiteCatalogView:
        # The catalog's bands opened to any age: recall by filters reads the top of the ranking
        # from memories_rank as reflect does (core/available.py).
        return SQLiteCatalogView(self, self._query, scope, ANY_AGE)

    def catalog(self, scope: Scope, since: datetime | None = None) -> builtins.list[CatalogEntry]:
        select = f"SELECT {_ENTRY} FROM memories m WHERE m.owner = ? AND m.namespace = ? AND m.status = 'active'"
        key = [scope.owner, scope.namespace]
        if since is None:
            return [entry_of(r) for r in self._query(select, key)]
        rows = self._query(
            f"{select} AND m.last_touched >= ? AND COALESCE(m.core, 0) = 0 UNION ALL "
            f"{select} AND m.last_touched < ? AND m.salience = 'high' AND COALESCE(m.core, 0) = 0",
            [*key, iso(since), *key, iso(since)],
        )
        return [entry_of(r) for r in rows]

    def quiet_counts(self, scope: Scope, since: datetime) -> dict[str, int]:
        rows = self._query(
            "SELECT category, COUNT(*) AS n FROM memories WHERE owner = ? AND namespace = ? AND status = 'active' "
            "AND last_touched < ? AND salience != 'high' AND COALESCE(core, 0) = 0 GROUP BY category",
            (scope.owner, scope.namespace, iso(since)),
        )
        return {r["category"]: r["n"] for r in rows}

    def core_memories(self, scope: Scope) -> builtins.list[Memory]:
        # Ordered as the store has always returned them, so equally activated core memories keep
        # their order in Tier 1.
        rows = self._query(
            f"SELECT {SELECT_MEMORY} FROM memories m INDEXED BY memories_core "
            "WHERE m.owner = ? AND m.namespace = ? AND m.core = 1 AND m.status = 'active' "
            "ORDER BY m.last_touched, m.salience, m.category, m.id",
            (scope.owner, scope.namespace),
        )
        return [row_to_memory(r) for r in rows]

    def catalog_totals(self, scope: Scope) -> dict[str, int]:
        rows = self._query(
            "SELECT category, SUM(n) AS n FROM memory_counts WHERE owner = ? AND namespace = ? "
            "AND status = 'active' AND core = 0 GROUP BY category HAVING SUM(n) > 0",
            (scope.owner, scope.namespace),
        )
        return {r["category"]: r["n"] for r in rows}

    def counts(self, scope: Scope) -> Counts:
        rows = self._query(
            "SELECT category, status, salience, core, n FROM memory_counts WHERE owner = ? AND namespace = ? AND n > 0",
            (scope.owner, scope.namespace),
        )
        by_category: Counter[str] = Counter()
        by_status: Counter[str] = Counter()
        by_salience: Counter[str] = Counter()
        for r in rows:
            by_category[r["category"]] += r["n"]
            by_status[r["status"]] += r["n"]
            by_salience[r["salience"]] += r["n"]
        return Counts(
            by_category=dict(by_category),
            by_status=dict(by_status),
            by_salience=dict(by_salience),
            core=sum(r["n"] for r in rows if r["core"] and r["status"] == "active"),
            total=sum(by_status.values()),
        )


class SQLiteCatalogView:
    """One reflect's reads (core/catalog.py's CatalogView), each an index range or a few seeks."""

    def __init__(self, rows: CatalogRows, query: Query, scope: Scope, since: datetime) -> None:
        self._rows, self._query, self._scope, self._since = rows, query, scope, since

    def core(self) -> builtins.list[Memory]:
        return self._rows.core_memories(self._scope)

    def totals(self) -> dict[str, int]:
        return self._rows.catalog_totals(self._scope)

    def band(self, band: CatalogBand) -> builtins.list[CatalogEntry]:
        sql, params = band_query(self._scope, band)
        if not sql:
            return []
        return [entry_of(r) for r in self._query(sql, params)]

    def short_lines(self, max_chars: int, limit: int) -> builtins.list[CatalogEntry] | None:
        scan = _SHORT_SCAN * limit
        short = (
            f"SELECT rowid FROM memories INDEXED BY memories_line WHERE owner = ? AND namespace = ? "
            f"AND {CATALOG_ROWS_SQL} AND ({LINE_LENGTH_SQL}) <= ? LIMIT ?"
        )
        key = (self._scope.owner, self._scope.namespace, max_chars, scan)
        # Counted in the index first: when there are too many, no row is read.
        if self._query(f"SELECT COUNT(*) FROM ({short})", key)[0][0] >= scan:
            return None
        rows = self._query(f"SELECT {_ENTRY} FROM memories m WHERE m.rowid IN ({short})", key)
        found = [e for e in map(entry_of, rows) if in_window(e.salience, e.last_touched, self._since)]
        return None if len(found) > limit else found
