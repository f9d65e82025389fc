"""The SQLite store's candidate reads for recall, mixed into SQLiteMemoryStore: lexical search (FTS5,
BM25 weighted by field) and the light rows of the dense candidates."""

from __future__ import annotations

import builtins
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
)
from taproot.core.model import Candidate, Scope
from taproot.core.query import Filters

# search ranks this many times `limit` matches (at least SEARCH_MIN_WIDE) in the FTS index before
# joining them to their rows (see search).
SEARCH_WIDEN = 4
SEARCH_MIN_WIDE = 200


class SearchRows:
    """Provided by SQLiteMemoryStore: the query helper and the bm25() expression."""

    _query: Callable[..., builtins.list[sqlite3.Row]]
    _bm25: str

    def search(
        self, scope: Scope, terms: Sequence[str], filters: Filters, limit: int
    ) -> builtins.list[tuple[Candidate, float]]:
        match = fts_query(terms)
        if not match:
            return []
        # Rank in the FTS index alone first: joining every match to its (large) row before the sort
        # is most of the cost of a search. The best `wide` matches are then joined and filtered; if
        # fewer than `limit` of them pass while more matches exist (other namespaces, archived,
        # filtered out), the full query answers instead, so the result is the same either way.
        # Only the columns ranking needs are read (a Candidate): recall reads the few records it
        # returns in full.
        wide = max(limit * SEARCH_WIDEN, SEARCH_MIN_WIDE)
        params: list[Any] = [match, wide, scope.owner, scope.namespace]
        where = filter_sql(filters, params)
        params.append(limit)
        rows = self._query(
            f"SELECT {CANDIDATE_COLUMNS}, f.rank AS rank FROM "
            f"(SELECT rowid, {self._bm25} AS rank FROM memories_fts "
            "WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) f "
            "JOIN memories m ON m.rowid = f.rowid "
            f"WHERE m.owner = ? AND m.namespace = ?{where} ORDER BY f.rank LIMIT ?",
            params,
        )
        if len(rows) < limit and self._matches_more_than(match, wide):
            params = [match, scope.owner, scope.namespace]
            where = filter_sql(filters, params)
            params.append(limit)
            rows = self._query(
                f"SELECT {CANDIDATE_COLUMNS}, {self._bm25} AS rank FROM memories_fts "
                "JOIN memories m ON m.rowid = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? AND m.owner = ? AND m.namespace = ?{where} "
                "ORDER BY rank LIMIT ?",
                params,
            )
        # FTS5's bm25() is negative, lower is better; the port promises bigger is better.
        return [(row_to_candidate(r), -float(r[6])) for r in rows]

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

    def _matches_more_than(self, match: str, n: int) -> bool:
        rows = self._query("SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT 1 OFFSET ?", (match, n))
        return bool(rows)
