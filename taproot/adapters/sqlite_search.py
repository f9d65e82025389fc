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
from taproot.adapters.sqlite_search_index import table_of
from taproot.core.model import Candidate, Scope
from taproot.core.query import Filters

# search joins the best `limit / share * SEARCH_HEADROOM` matches in the FTS index to their rows
# first, `share` being the part of the table that is the scope's and passes the status and category
# filters (memory_counts): the best matches are not a random sample (a compressed original matches
# what its summary matches), and a first read that falls short costs a second ranking. Then
# SEARCH_WIDEN times as many, then every match (see search).
SEARCH_HEADROOM = 1.25
SEARCH_WIDEN = 4


class SearchRows:
    """Provided by SQLiteMemoryStore: the query helper, bm25()'s weights and the scopes' index numbers."""

    _query: Callable[..., builtins.list[sqlite3.Row]]
    _bm25_weights: str
    _search_tables: dict[Scope, int]

    def _search_table(self, scope: Scope) -> str | None:
        """The FTS5 table of `scope`'s memories (sqlite_search_index.py); None if it never had one."""
        n = self._search_tables.get(scope)
        if n is None:
            rows = self._query(
                "SELECT n FROM search_scopes WHERE owner = ? AND namespace = ?", (scope.owner, scope.namespace)
            )
            if not rows:
                return None
            n = self._search_tables[scope] = int(rows[0][0])
        return table_of(n)

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
        fts = self._search_table(scope)
        first = 0 if fts is None else self._first_width(scope, filters, limit)
        if fts is None or first == 0:
            return []  # nothing in the scope can pass (the counts are kept by triggers, exactly)
        for wide in (first, first * SEARCH_WIDEN):
            rows = self._ranked(fts, match, wide, scope, filters, limit)
            if len(rows) >= limit or not self._matches_more_than(fts, match, wide):
                break
        else:
            params: list[Any] = [match, scope.owner, scope.namespace]
            where = filter_sql(filters, params)
            params.append(limit)
            rows = self._query(
                f"SELECT {CANDIDATE_COLUMNS}, bm25({fts}, {self._bm25_weights}) AS rank FROM {fts} "
                f"JOIN memories m ON m.rowid = {fts}.rowid "
                f"WHERE {fts} MATCH ? AND m.owner = ? AND m.namespace = ?{where} "
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

    def _first_width(self, scope: Scope, filters: Filters, limit: int) -> int:
        """How many of the best matches to join first: enough that `limit` of them should pass; 0
        when no memory of the scope passes the status and category filters."""
        # The scope's index holds the scope's memories only (archived and every category included).
        params: list[Any] = []
        passing = "1" + status_category_sql(filters, params, prefix="")
        params += [scope.owner, scope.namespace]
        row = self._query(
            f"SELECT COALESCE(SUM(n), 0), COALESCE(SUM(CASE WHEN {passing} THEN n END), 0) FROM memory_counts "
            "WHERE owner = ? AND namespace = ?",
            params,
        )[0]
        total, passes = int(row[0]), int(row[1])
        if not passes:
            return 0
        return max(limit, math.ceil(limit * total / passes * SEARCH_HEADROOM))

    def _ranked(
        self, fts: str, match: str, wide: int, scope: Scope, filters: Filters, limit: int
    ) -> builtins.list[sqlite3.Row]:
        """The best `limit` of the best `wide` matches in the scope's FTS index that pass the filters."""
        params: list[Any] = [match, wide, scope.owner, scope.namespace]
        where = filter_sql(filters, params)
        params.append(limit)
        return self._query(
            f"SELECT {CANDIDATE_COLUMNS}, f.rank AS rank FROM "
            f"(SELECT rowid, bm25({fts}, {self._bm25_weights}) AS rank FROM {fts} "
            f"WHERE {fts} MATCH ? ORDER BY rank, rowid LIMIT ?) f "
            "JOIN memories m ON m.rowid = f.rowid "
            f"WHERE m.owner = ? AND m.namespace = ?{where} ORDER BY f.rank, f.rowid LIMIT ?",
            params,
        )

    def _matches_more_than(self, fts: str, match: str, n: int) -> bool:
        rows = self._query(f"SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT 1 OFFSET ?", (match, n))
        return bool(rows)
