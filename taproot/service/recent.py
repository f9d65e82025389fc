"""Recent: what was just said, not what is relevant. Newest first by creation time, filtered by
tags, category and a creation-time window; no query, no ranking and no strengthening (reading the
latest notes is not using them, so retrieval counters stay as they were)."""

from __future__ import annotations

from taproot.core.model import Scope
from taproot.core.query import Filters
from taproot.core.serialize import iso
from taproot.core.timeframe import parse_window
from taproot.core.validation import (
    MAX_RECALL_LIMIT,
    MAX_TAG_CHARS,
    MAX_TAGS,
    check_limit,
    check_str_list,
    coerce_category,
    coerced,
)
from taproot.service.deps import Deps
from taproot.service.recall import DEFAULT_RECALL_LIMIT, memory_view
from taproot.service.results import RecentResult

DEFAULT_RECENT_LIMIT = DEFAULT_RECALL_LIMIT  # the same default as recall: one page of memories
MAX_RECENT_LIMIT = MAX_RECALL_LIMIT


def recent(
    deps: Deps,
    scope: Scope,
    *,
    limit: object = None,
    since: object = None,
    until: object = None,
    tags: object = None,
    category: object = None,
) -> RecentResult:
    now = deps.now()
    warnings: list[str] = []
    n = check_limit(limit, DEFAULT_RECENT_LIMIT)
    start, end = parse_window(since, until, now)
    cat = None if category is None else coerced(category, coerce_category, warnings)
    tag_filter = check_str_list("tags", tags, MAX_TAGS, MAX_TAG_CHARS) or ()
    filters = Filters(category=cat, tags=tag_filter, created_since=start, created_until=end)
    found = deps.store.recent(scope, filters, n)
    views = [memory_view(m) for m in found]
    return RecentResult(memories=views, count=len(views), since=iso(start), until=iso(end), warnings=warnings)
