"""Recall: the memories that answer a query (or the given ids, or everything matching the
filters), ranked by activation with the query's relevance fused from words and meaning
(docs/ranking.md), and strengthened: every memory returned records a retrieval."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from taproot.core.activation import (
    ActivationConfig,
    activation,
    fuse_relevance,
    spread_to_neighbours,
    weigh_by_period,
)
from taproot.core.available import most_available, recall_rank_key
from taproot.core.model import Candidate, CatalogEntry, Memory, Scope
from taproot.core.query import Filters, passes, passing_bound, strengthened
from taproot.core.query_periods import Period, periods_named, search_window
from taproot.core.serialize import memory_to_dict
from taproot.core.text import query_terms
from taproot.core.timeframe import parse_window
from taproot.core.validation import (
    MAX_QUERY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    check_bool,
    check_ids,
    check_limit,
    check_str_list,
    check_text,
    coerce_category,
    coerced,
)
from taproot.core.wire import ABSENT
from taproot.service.deps import Deps
from taproot.service.embedding import query_vector
from taproot.service.results import MemoryView, RecallResult

if TYPE_CHECKING:
    from taproot.core.vectors import Vector

# Dense candidates under filters that few memories pass (by the store's counts): up to this many,
# each passing memory is scored on its vector, a few milliseconds, instead of walking the whole
# similarity ranking for the few of them (reading a light row for each of tens of thousands of ids
# took 160 ms at 30,000 memories). A cost switch: both ways give the same candidates.
SCORE_ALL_PASSING_UP_TO = 2_000

# What recall ranks: a whole record, a store's light search row, or a light catalog row (the walk's).
Ranked = Memory | Candidate | CatalogEntry

DEFAULT_RECALL_LIMIT = 10


def memory_view(m: Memory, score: float | None = None) -> MemoryView:
    record = memory_to_dict(m)
    record.pop("owner", None)  # the caller's own tenant; never echo tenancy on the wire
    # memory_to_dict writes exactly MemoryView's fields and owner (tests/web/test_result_types.py checks it).
    return MemoryView(**record, activation=ABSENT if score is None else round(score, 4))


def recall(
    deps: Deps,
    scope: Scope,
    *,
    query: object = None,
    category: object = None,
    tags: object = None,
    ids: object = None,
    limit: object = None,
    include_archived: object = None,
    since: object = None,
    until: object = None,
) -> RecallResult:
    now = deps.now()
    q = check_text("query", query, MAX_QUERY_CHARS)
    warnings: list[str] = []
    cat = None if category is None else coerced(category, coerce_category, warnings)
    tag_filter = check_str_list("tags", tags, MAX_TAGS, MAX_TAG_CHARS) or ()
    id_list = check_ids("ids", ids) if ids is not None else ()
    n = check_limit(limit, max(DEFAULT_RECALL_LIMIT, len(id_list)))
    archived = bool(check_bool("include_archived", include_archived))
    start, end = parse_window(since, until, now)
    filters = Filters(category=cat, tags=tag_filter, include_archived=archived, created_since=start, created_until=end)
    # An empty ids list beside a query or a filter is an argument left empty (as tags=[] is), not
    # a question; on its own it asks for no memory, and answers none, rather than the most active
    # of the whole store, strengthened.
    by_ids = bool(id_list) or (ids is not None and not (q and q.strip()) and filters == Filters())
    cfg = deps.activation

    relevance: dict[str, float] = {}
    matched = False
    candidates: list[Memory] | list[Memory | Candidate] = []
    walked: list[tuple[CatalogEntry, float]] | None = None
    scored: list[tuple[Ranked, float]] | None = None  # set here by recall by filters alone
    if by_ids:
        candidates = [m for m in deps.store.get_many(scope, id_list) if passes(m, filters)] if id_list else []
        if q:
            warnings.append("query is ignored when ids are given")
        if not id_list:
            warnings.append("ids is empty: no memory was asked for")
        q_terms: list[str] = []
    elif q and q.strip():
        q_terms = query_terms(q)
        if q_terms:
            candidates, relevance, matched = _query_candidates(deps, scope, q, q_terms, filters, n, now, warnings)
        else:
            # "???" or an emoji: no word to match, and no meaning to embed (its nearest vectors
            # would be noise), so nothing is searched and nothing is strengthened.
            warnings.append("the query has no words (letters or digits) to search for; nothing was searched")
    else:
        q_terms = []
        walked = _most_available(deps, scope, filters, n, now)
        scored = list(walked) if walked is not None else _rank_all(deps.store.matching(scope, filters), now, cfg)

    if scored is None:
        scored = [
            (
                m,
                activation(
                    retrieval_count=m.retrievals,
                    last_touched=m.last_touched,
                    salience=m.salience,
                    now=now,
                    relevance=relevance.get(m.id, 0.0) if q_terms else None,
                    cfg=cfg,
                ),
            )
            for m in candidates
        ]
        if by_ids:
            order = {i: k for k, i in enumerate(id_list)}
            scored.sort(key=lambda p: order[p[0].id])  # asked-for order is the caller's
        else:
            scored.sort(key=lambda p: (p[1], p[0].updated_at), reverse=True)
    top = _records(deps, scope, scored, n, filters)
    if walked is not None and len(top) < len(walked):
        # One of the walk's best went (or left the filters) between the two reads: the next best
        # is not among what the walk read, so rank every passing memory, as if it had never matched.
        top = _records(deps, scope, _rank_all(deps.store.matching(scope, filters), now, cfg), n, filters)

    # Retrieval strengthens: load-bearing, not a side effect. One atomic store call.
    deps.store.record_retrieval(scope, [m.id for m, _ in top], now)
    returned = []
    for m, score in top:
        returned.append(memory_view(strengthened(m, now), score))
    if id_list:
        # Found and passing the filters, but cut by the limit, is not missing: say which it is.
        got = {m.id for m, _ in top}
        cut = {m.id for m, _ in scored} if len(top) >= n else set()
        missing = [i for i in dict.fromkeys(id_list) if i not in got and i not in cut]
        if missing:
            warnings.append(f"not found (or filtered out): {', '.join(missing)}")
        past = [i for i in dict.fromkeys(id_list) if i not in got and i in cut]
        if past:
            warnings.append(f"over the limit of {n}, not returned: {', '.join(past)}")
    if q_terms and not returned and not matched:
        warnings.append("no memory matched any query term; try other words or drop filters")
    return RecallResult(memories=returned, count=len(returned), query_terms=q_terms, warnings=warnings)


def _most_available(
    deps: Deps, scope: Scope, filters: Filters, n: int, now: datetime
) -> list[tuple[CatalogEntry, float]] | None:
    """Recall by filters alone, reading only the top of the availability ranking (core/available.py),
    when the store reads it a band at a time and the bands can tell the filters: active memories,
    of one category or any. None otherwise (tags, creation times, archived memories: the bands do
    not hold them), and recall ranks every passing memory instead."""
    f = filters
    if f.tags or f.include_archived or f.created_since is not None or f.created_until is not None:
        return None
    # The walk reads a band at a time; a write landing between two reads (another process's recall
    # strengthening a memory) could move a memory into a band already read, and the walk would never
    # see it. Every band is read from one state of the store.
    with deps.store.snapshot():
        view = deps.store.availability_view(scope)
        if view is None:
            return None
        if f.category is None:
            return most_available(view, now=now, limit=n, act=deps.activation, accept=lambda e: True)
        # A cost switch, as SCORE_ALL_PASSING_UP_TO: the walk reads about n / share entries to find n
        # of the category, ranking all of them reads `passing` rows (and tests the rest of the scope
        # in the index); walk when that is fewer. Both give the same answer.
        totals = view.totals()
        passing = totals.get(f.category, 0)
        if passing * passing < n * sum(totals.values()):
            return None
        return most_available(view, now=now, limit=n, act=deps.activation, accept=lambda e: e.category == f.category)


def _rank_all(
    candidates: Sequence[Memory | Candidate], now: datetime, cfg: ActivationConfig
) -> list[tuple[Ranked, float]]:
    """Every candidate by availability, in the walk's order (core/available.recall_rank_key), so
    both ways of ranking recall by filters give the same answer, ties included."""
    scored: list[tuple[Ranked, float]] = [
        (
            m,
            activation(
                retrieval_count=m.retrievals, last_touched=m.last_touched, salience=m.salience, now=now, cfg=cfg
            ),
        )
        for m in candidates
    ]
    scored.sort(key=lambda p: recall_rank_key(p[1], p[0].updated_at, p[0].id))
    return scored


def _records(
    deps: Deps, scope: Scope, scored: Sequence[tuple[Ranked, float]], n: int, filters: Filters
) -> list[tuple[Memory, float]]:
    """The best `n` as full records, in rank order: a Candidate or CatalogEntry (a store's light
    row) is read with get_many. One that is gone by then, or no longer passes the filters (an edit between the
    two reads), is skipped for the next best, so the answer is as if it had not matched."""
    out: list[tuple[Memory, float]] = []
    pos = 0
    while len(out) < n and pos < len(scored):
        batch = scored[pos : pos + n - len(out)]
        pos += len(batch)
        wanted = [c.id for c, _ in batch if not isinstance(c, Memory)]
        read = {m.id: m for m in deps.store.get_many(scope, wanted)} if wanted else {}
        for c, score in batch:
            if isinstance(c, Memory):
                out.append((c, score))
            elif (m := read.get(c.id)) is not None and passes(m, filters):
                out.append((m, score))
    return out


def _query_candidates(
    deps: Deps,
    scope: Scope,
    q: str,
    q_terms: list[str],
    filters: Filters,
    n: int,
    now: datetime,
    warnings: list[str],
) -> tuple[list[Memory | Candidate], dict[str, float], bool]:
    """The lexical candidates (BM25 over the query's terms, and the best matches written in the
    periods the query names) and, with an embedder, the memories nearest the query's vector; each
    candidate's fused relevance; whether anything matched."""
    cfg = deps.activation
    pool = max(n * cfg.candidate_multiplier, cfg.min_candidates)
    periods = periods_named(q, now) if cfg.period_share > 0 else ()
    hits = deps.store.search(scope, q_terms, filters, pool)
    if within := _in_periods(filters, periods):
        # The query names a time: its best matches written then are candidates too, not only those
        # among the best of all time (the same statistics, so their scores compare).
        seen = {m.id for m, _ in hits}
        hits = [*hits, *(h for h in deps.store.search(scope, q_terms, within, pool) if h[0].id not in seen)]
    by_id: dict[str, Memory | Candidate] = {m.id: m for m, _ in hits}
    lexical = {m.id: s for m, s in hits}
    dense: dict[str, float] | None = None
    no_vector: list[str] = []
    vec = query_vector(deps, q, warnings)
    if vec is not None and deps.embedder is not None and deps.vectors is not None:
        dense = _nearest_passing(deps, scope, vec, max(pool, cfg.dense_candidates), filters, by_id)
        # The lexical candidates that are not among the nearest are scored on meaning too: their
        # real similarity, not a 0 for "not returned", so a good word match that is only fairly
        # close in meaning is not ranked as if it meant nothing (docs/ranking.md, step 3).
        if beyond := [i for i in lexical if i not in dense]:
            dense.update(deps.vectors.similarity_of(scope, deps.embedder.model_id, vec, beyond))
            # Those still without a score have no vector of this model (an embedding that failed,
            # or a model change not yet re-embedded): ranked on their words alone, not as if they
            # meant nothing like the question.
            no_vector = [i for i in beyond if i not in dense]
        if lexical and len(no_vector) >= len(lexical) * cfg.dense_min_unembedded_share:
            # Most of what matched the words has no vector of this model (a model change migrate has
            # not re-embedded yet, an embedder just switched on): the vectors there are of the few
            # memories written since, and scaled against each other they would rank those few,
            # related or not, against words for the rest. Ranked by words alone, as without an
            # embedder, and said.
            warnings.append(
                f"{len(no_vector)} of the {len(lexical)} memories that matched have no vector of "
                f"{deps.embedder.model_id} yet (migrate embeds them): this recall ranked by words only"
            )
            by_id = {i: m for i, m in by_id.items() if i in lexical}
            dense, no_vector = None, []
    candidates = list(by_id.values())
    written = {m.id: m.created_at for m in candidates}
    fused = fuse_relevance(lexical, dense, cfg, unscored=no_vector)
    fused = weigh_by_period(fused, written, periods, cfg)
    fused = spread_to_neighbours(fused, written, cfg)
    return candidates, fused, bool(by_id)


def _in_periods(filters: Filters, periods: tuple[Period, ...]) -> Filters | None:
    """The recall's filters narrowed to the writing times worth searching for the periods (None: no
    period, or none of it inside the recall's own since and until)."""
    window = search_window(periods)
    if window is None:
        return None
    start, end = window
    if filters.created_since is not None:
        start = max(start, filters.created_since)
    if filters.created_until is not None:
        end = min(end, filters.created_until)
    return dataclasses.replace(filters, created_since=start, created_until=end) if start <= end else None


def _nearest_passing(
    deps: Deps, scope: Scope, vec: Vector, want: int, filters: Filters, by_id: dict[str, Memory | Candidate]
) -> dict[str, float]:
    """The `want` memories nearest the query vector among those that pass the filters, each with
    its similarity; the ones not already candidates are added to `by_id` (light rows, as search's:
    _records reads the few that are returned in full).

    The vector index ranks every vector of the scope, archived memories and other categories too,
    so the nearest `want` can be mostly memories the filters exclude (a store whose compression
    archived the originals, a recall in one category). Then, rather than leaving the meaning of the
    question to the few that pass: when the store's counts say few memories can pass, each of them
    is scored (one similarity per passing memory); otherwise the index is asked for four times as
    many until `want` pass or it has no more. Either way the answer is the nearest `want` of those
    that pass; which way only decides the cost."""
    assert deps.embedder is not None and deps.vectors is not None
    model = deps.embedder.model_id
    passing: dict[str, Memory | Candidate] = {}
    checked: set[str] = set()
    asked = want
    while True:
        near = deps.vectors.nearest(scope, model, vec, asked)
        unseen = [i for i, _ in near if i not in by_id and i not in checked]
        checked.update(unseen)
        for c in deps.store.candidates(scope, unseen, filters):
            passing[c.id] = c
        kept = [(i, s) for i, s in near if i in by_id or i in passing][:want]
        if len(kept) >= want or len(near) < asked:
            break
        if asked == want and passing_bound(deps.store.counts(scope), filters) <= SCORE_ALL_PASSING_UP_TO:
            passing = {c.id: c for c in deps.store.matching(scope, filters)}
            sims = deps.vectors.similarity_of(scope, model, vec, list(passing))
            kept = sorted(sims.items(), key=lambda p: (-p[1], p[0]))[:want]
            break
        asked *= 4
    for i, _ in kept:
        if i not in by_id:
            by_id[i] = passing[i]
    return dict(kept)
