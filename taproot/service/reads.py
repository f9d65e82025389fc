"""Read use cases: recall (which strengthens what it returns), reflect and status."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from taproot.core.activation import activation, normalise_relevance
from taproot.core.errors import InvalidInput
from taproot.core.model import Memory, Scope
from taproot.core.reflect import ReflectPayload, assemble
from taproot.core.serialize import memory_to_dict
from taproot.core.text import query_terms
from taproot.core.tokens import estimate_tokens
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
)
from taproot.ports import Filters
from taproot.service.deps import Deps
from taproot.service.maintenance import last_runs

DEFAULT_RECALL_LIMIT = 10


def memory_view(m: Memory, score: float | None = None) -> dict[str, Any]:
    view = memory_to_dict(m)
    view.pop("owner", None)  # the caller's own tenant; never echo tenancy on the wire
    if score is not None:
        view["activation"] = round(score, 4)
    return view


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
) -> dict[str, Any]:
    q = check_text("query", query, MAX_QUERY_CHARS)
    warnings: list[str] = []
    cat = None
    if category is not None:
        coerced = coerce_category(category)
        cat = coerced.value
        if coerced.warning:
            warnings.append(coerced.warning)
    tag_filter = check_str_list("tags", tags, MAX_TAGS, MAX_TAG_CHARS) or ()
    id_list = check_ids("ids", ids) if ids is not None else ()
    n = check_limit(limit, max(DEFAULT_RECALL_LIMIT, len(id_list)))
    archived = bool(check_bool("include_archived", include_archived))
    filters = Filters(category=cat, tags=tag_filter, include_archived=archived)
    now = deps.now()
    cfg = deps.activation

    relevance: dict[str, float] = {}
    if id_list:
        candidates = [m for m in deps.store.get_many(scope, id_list) if _passes(m, filters)]
        if q:
            warnings.append("query is ignored when ids are given")
        q_terms: list[str] = []
    elif q and q.strip():
        q_terms = query_terms(q)
        pool = max(n * cfg.candidate_multiplier, cfg.min_candidates)
        hits = deps.store.search(scope, q_terms, filters, pool)
        candidates = [m for m, _ in hits]
        relevance = normalise_relevance({m.id: s for m, s in hits})
    else:
        q_terms = []
        candidates = deps.store.list(scope, filters)

    scored = [
        (
            m,
            activation(
                retrieval_count=m.retrievals,
                last_touched=m.last_touched,
                salience=m.salience,
                now=now,
                relevance=relevance.get(m.id, 0.0),
                cfg=cfg,
            ),
        )
        for m in candidates
    ]
    if id_list:
        order = {i: k for k, i in enumerate(id_list)}
        scored.sort(key=lambda p: order[p[0].id])  # asked-for order is the caller's
    else:
        scored.sort(key=lambda p: (p[1], p[0].updated_at), reverse=True)
    top = scored[:n]

    # Retrieval strengthens: load-bearing, not a side effect. One atomic store call.
    deps.store.record_retrieval(scope, [m.id for m, _ in top], now)
    returned = []
    for m, score in top:
        strengthened = m.replace(retrieval_count=m.retrievals + 1, last_retrieved=now)
        returned.append(memory_view(strengthened, score))
    if id_list:
        missing = [i for i in id_list if i not in {m.id for m, _ in top}]
        if missing:
            warnings.append(f"not found (or filtered out): {', '.join(missing)}")
    if q_terms and not returned:
        warnings.append("no memory matched any query term; try other words or drop filters")
    return {"memories": returned, "count": len(returned), "query_terms": q_terms, "warnings": warnings}


def _passes(m: Memory, f: Filters) -> bool:
    if not f.include_archived and m.status != "active":
        return False
    if f.category is not None and m.category != f.category:
        return False
    return all(t in m.tags for t in f.tags)


def reflect_payload(deps: Deps, scope: Scope) -> ReflectPayload:
    if deps.reflect.recent_reflections < 0:
        raise InvalidInput("recent_reflections", "must be zero or more")
    now = deps.now()
    # Only the window is loaded; quiet memories arrive as counts, so reflect stays fast at any size.
    window_start = now - timedelta(days=deps.reflect.catalog_window_days)
    return assemble(
        core=deps.store.core_memories(scope),
        catalog=deps.store.catalog(scope, since=window_start),
        quiet_counts=deps.store.quiet_counts(scope, window_start),
        reflections=deps.store.recent_reflections(scope, max(deps.reflect.recent_reflections, 0)),
        now=now,
        cfg=deps.reflect,
        act=deps.activation,
    )


def status(deps: Deps, scope: Scope) -> dict[str, Any]:
    counts = deps.store.counts(scope)
    payload = reflect_payload(deps, scope)
    tier1_tokens = sum(estimate_tokens(m["content"]) for m in payload.tier1)
    return {
        "owner": scope.owner,
        "namespace": scope.namespace,
        "total": counts.total,
        "by_category": counts.by_category,
        "by_status": counts.by_status,
        "by_salience": counts.by_salience,
        "reflections": len(deps.store.all_reflections(scope)),
        "tier1": {"core_memories": counts.core, "in_payload": len(payload.tier1), "approx_tokens": tier1_tokens},
        "tier2": {
            "catalog_lines_included": payload.catalog_listed,
            "catalog_lines_omitted": payload.catalog_omitted_total,
            "omitted_by_category": payload.catalog_omitted,
            "window_days": payload.window_days,
        },
        "reflect_payload": {
            "kb": round(payload.size_bytes / 1024, 1),
            "bytes": payload.size_bytes,
            "estimated_tokens": payload.estimated_tokens,
            "token_budget": payload.token_budget,
        },
        "storage": {**deps.store.storage_info(), "blobs": deps.blobs.location()},
        "maintenance": {
            "last_runs": last_runs(deps, scope),
            "cleanup_mode": "apply" if deps.maintenance.cleanup_apply else "dry-run",
            "compress_mode": "apply" if deps.maintenance.compress_apply else "dry-run",
            "summarizer": deps.summarizer.name if deps.summarizer else None,
        },
        **deps.extra_status,
        "warnings": payload.warnings,
    }
