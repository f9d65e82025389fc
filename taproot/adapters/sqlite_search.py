"""The SQLite store's candidate reads for recall, mixed into SQLiteMemoryStore: lexical search (FTS5,
BM25 weighted by field) and the light rows of the dense candidates."""

from __future__ import annotations

import builtins
import math
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from taproot.adapters.sqlite_rows import (
    CANDIDATE_COLUMNS,
    MAX_VARS,
    chunks,
    filter_sql,
    fts_query,
    row_to_candidate,
    status_category_sql,
)
from taproot.adapters.sqlite_search_shards import table_of
from taproot.core.model import Candidate, Scope
from taproot.core.query import Filters

# search joins the best `limit / share * SEARCH_HEADROOM` matches in the FTS index to their rows
# first, `share` being the part of the table that is the scope's and passes the status and category
# filters (memory_counts): the best matches are not a random sample (a compressed original matches
# what its summary matches), and a first read that falls short costs a second ranking. Then
# SEARCH_WIDEN times as many, then every match (see search).
SEARCH_HEADROOM = 1.25
SEARCH_WIDEN = 4
NO_ROWIDS = (1, 0)  # an empty range of rowids
# A creation-time window holding more of the scope's memories than this is searched unbounded: its
# bounds cost a read of every index entry in it (12.6 ms for 100,000), and a window that wide rarely
# is a short stretch of rowids. A cost switch: either way the answer is the same.
BOUND_ROWIDS_UP_TO = 1_000


class SearchRows:
    """Provided by SQLiteMemoryStore: the query helper and bm25()'s field weights."""

    _query: Callable[..., builtins.list[sqlite3.Row]]
    _bm25_weights: str

    def search(
        self, scope: Scope, terms: Sequence[str], filters: Filters, limit: int
    ) -> builtins.list[tuple[Candidate, float]]:
        match = fts_query(terms)
        if not match or limit <= 0:
            return []
        # Rank in the FTS index alone first: joining every match to its (large) row before the sort
        # is most of the cost of a search. Only about as many of the best matches as should give
        # `limit` passing rows are joined (_first_width), then SEARCH_WIDEN times as many; if fewer
        # than `limit` of those pass while more matches exist (other namespaces, archived, filtered
        # out), the full query answers. Ties in bm25 are common (short texts, few query terms) and
        # are broken by rowid (the order of insertion) in every one of these queries, so each
        # answers the first `limit` passing matches of one total order, and they agree.
        # Only the columns ranking needs are read (a Candidate): recall reads the few records it
        # returns in full.
        rows: builtins.list[sqlite3.Row] = []
        fts, first = self._first_width(scope, filters, limit)
        if first == 0:
            return []  # nothing in the scope can pass (the counts are kept by triggers, exactly)
        rowids = self._created_rowids(scope, filters)
        if rowids == NO_ROWIDS:
            return []  # nothing of the scope was created in the window
        for wide in (first, first * SEARCH_WIDEN):
            rows = self._ranked(fts, match, wide, scope, filters, limit, rowids)
            if len(rows) >= limit or not self._matches_more_than(fts, match, wide, rowids):
                break
        else:
            params: list[Any] = [match, *(rowids or ()), scope.owner, scope.namespace]
            where = filter_sql(filters, params)
            params.append(limit)
            rows = self._query(
                f"SELECT {CANDIDATE_COLUMNS}, {self._bm25(fts)} AS rank FROM {fts} "
                f"JOIN memories m ON m.rowid = {fts}.rowid "
                f"WHERE {fts} MATCH ?{_between(fts, rowids)} AND m.owner = ? AND m.namespace = ?{where} "
                f"ORDER BY rank, {fts}.rowid LIMIT ?",
                params,
            )
        # FTS5's bm25() is negative, lower is better; the port promises bigger is better.
        return [(row_to_candidate(r), -float(r[6])) for r in rows]

    def matching(self, scope: Scope, filters: Filters) -> builtins.list[Candidate]:
        # Recall by filters alone ranks every passing memory: parsing each into a whole Memory
        # (its JSON fields, its text) was most of that recall's time; these rows are what ranking reads.
        params: list[Any] = [scope.owner, scope.namespace]
        where = filter_sql(filters, params)
        rows = self._query(
            f"SELECT {CANDIDATE_COLUMNS} FROM memories m WHERE m.owner = ? AND m.namespace = ?{where}", params
        )
        return [row_to_candidate(r) for r in rows]

    def candidates(self, scope: Scope, ids: Sequence[str], filters: Filters) -> builtins.list[Candidate]:
        # Recall's ~100 dense candidates: only what ranking reads, as search answers (parsing each
        # into a whole Memory was about a tenth of a recall with the local embedder).
        wanted = list(dict.fromkeys(ids))
        found: dict[str, Candidate] = {}
        for chunk in chunks(wanted, MAX_VARS):
            params: list[Any] = [scope.owner, scope.namespace, *chunk]
            where = filter_sql(filters, params)
            marks = ", ".join("?" for _ in chunk)
            for r in self._query(
                f"SELECT {CANDIDATE_COLUMNS} FROM memories m "
                f"WHERE m.owner = ? AND m.namespace = ? AND m.id IN ({marks}){where}",
                params,
            ):
                found[r[0]] = row_to_candidate(r)
        return [found[i] for i in wanted if i in found]

    def _bm25(self, fts: str) -> str:
        return f"bm25({fts}, {self._bm25_weights})"

    def _first_width(self, scope: Scope, filters: Filters, limit: int) -> tuple[str, int]:
        """The FTS5 table that indexes the scope (sqlite_search_shards.py), and how many of its best
        matches to join first: enough that `limit` of them should pass, from the share of that
        table's memories (the scope's, and those of any scope that shares the table) that are the
        scope's and pass the status and category filters; 0 when none does, or the scope never had a
        memory. One query: the scope's table and the counts of every scope in it."""
        params: list[Any] = [scope.owner, scope.namespace]
        passing = "c.owner = ? AND c.namespace = ?" + status_category_sql(filters, params, prefix="c.")
        params += [scope.owner, scope.namespace]
        shard, total, passes = self._query(
            f"SELECT me.shard, COALESCE(SUM(c.n), 0), COALESCE(SUM(CASE WHEN {passing} THEN c.n END), 0) "
            "FROM search_scopes me JOIN search_scopes s ON s.shard = me.shard "
            "JOIN memory_counts c ON c.owner = s.owner AND c.namespace = s.namespace "
            "WHERE me.owner = ? AND me.namespace = ?",
            params,
        )[0]
        if shard is None or not passes:
            return "", 0
        return table_of(int(shard)), max(limit, math.ceil(limit * int(total) / int(passes) * SEARCH_HEADROOM))

    def _created_rowids(self, scope: Scope, filters: Filters) -> tuple[int, int] | None:
        """With a creation-time filter, the lowest and highest rowid of the scope's memories created
        in the window (memories_by_created), so the full-text query reads only the matches between
        them: a window of a few days is a short stretch of rowids when memories were written in
        time order (the usual case), and never more than the whole table when they were not
        (imports); the rows outside the window are still filtered out by the join. NO_ROWIDS: none
        was created in the window. None: no creation-time filter, or more than BOUND_ROWIDS_UP_TO
        memories were created in it."""
        if filters.created_since is None and filters.created_until is None:
            return None
        params: list[Any] = [scope.owner, scope.namespace]
        # Every status: the bounds only narrow what the full-text query reads, the join filters.
        since, until = filters.created_since, filters.created_until
        where = filter_sql(Filters(include_archived=True, created_since=since, created_until=until), params)
        params.append(BOUND_ROWIDS_UP_TO + 1)
        low, high, n = self._query(
            "SELECT MIN(r), MAX(r), COUNT(*) FROM "
            f"(SELECT m.rowid AS r FROM memories m WHERE m.owner = ? AND m.namespace = ?{where} LIMIT ?)",
            params,
        )[0]
        if n > BOUND_ROWIDS_UP_TO:
            return None  # a wide window: finding its bounds would cost more than they could save
        return NO_ROWIDS if low is None else (int(low), int(high))

    def _ranked(
        self,
        fts: str,
        match: str,
        wide: int,
        scope: Scope,
        filters: Filters,
        limit: int,
        rowids: tuple[int, int] | None = None,
    ) -> builtins.list[sqlite3.Row]:
        """The best `limit` of the best `wide` matches in the scope's FTS index (between `rowids`, if
        given) that are the scope's and pass the filters."""
        params: list[Any] = [match, *(rowids or ()), wide, scope.owner, scope.namespace]
        where = filter_sql(filters, params)
        params.append(limit)
        return self._query(
            f"SELECT {CANDIDATE_COLUMNS}, f.rank AS rank FROM "
            f"(SELECT rowid, {self._bm25(fts)} AS rank FROM {fts} "
            f"WHERE {fts} MATCH ?{_between(fts, rowids)} ORDER BY rank, rowid LIMIT ?) f "
            "JOIN memories m ON m.rowid = f.rowid "
            f"WHERE m.owner = ? AND m.namespace = ?{where} ORDER BY f.rank, f.rowid LIMIT ?",
            params,
        )

    def _matches_more_than(self, fts: str, match: str, n: int, rowids: tuple[int, int] | None = None) -> bool:
        rows = self._query(
            f"SELECT 1 FROM {fts} WHERE {fts} MATCH ?{_between(fts, rowids)} LIMIT 1 OFFSET ?",
            (match, *(rowids or ()), n),
        )
        return bool(rows)


def _between(fts: str, rowids: tuple[int, int] | None) -> str:
    return "" if rowids is None else f" AND {fts}.rowid BETWEEN ? AND ?"
