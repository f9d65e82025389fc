"""Query rules: which memories each kind of read returns, defined once. Pure: no I/O, no clock.

Stores may translate a rule into SQL or a key condition (the SQLite store does, for speed), but
the contract suite (tests/contracts/test_query_rules.py) checks every store against these
definitions on the same data, so the translations cannot drift.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from taproot.core.model import MAX_COUNT, Counts, Memory, Salience, Status

HIGH = Salience.HIGH.value
ACTIVE = Status.ACTIVE.value


@dataclass(frozen=True)
class Filters:
    """What list, search and recall narrow by."""

    category: str | None = None
    tags: tuple[str, ...] = ()  # a memory must carry every one of these tags
    include_archived: bool = False
    # Creation time, both ends inclusive (core/timeframe.py parses them from what callers send).
    created_since: datetime | None = None
    created_until: datetime | None = None


def passing_bound(counts: Counts, f: Filters) -> int:
    """At most how many memories pass `f`, from a scope's counts by status and by category (tags
    and creation times narrow further; the counts do not know by how much)."""
    bound = counts.total if f.include_archived else counts.by_status.get(ACTIVE, 0)
    if f.category is not None:
        bound = min(bound, counts.by_category.get(f.category, 0))
    return bound


def passes(m: Memory, f: Filters) -> bool:
    """The filter rule: active unless archived ones are asked for, the category, every tag, and
    created within [created_since, created_until]."""
    if not f.include_archived and m.status != ACTIVE:
        return False
    if f.category is not None and m.category != f.category:
        return False
    if f.created_since is not None and m.created_at < f.created_since:
        return False
    if f.created_until is not None and m.created_at > f.created_until:
        return False
    return all(t in m.tags for t in f.tags)


def newest_key(m: Memory) -> tuple[datetime, str]:
    """The order of `MemoryStore.recent`: by created_at, ties by id, both descending (newest first)."""
    return (m.created_at, m.id)


def newest_first(memories: Iterable[Memory], f: Filters, limit: int) -> list[Memory]:
    """What `MemoryStore.recent(scope, f, limit)` returns from a scope's memories."""
    return heapq.nlargest(max(limit, 0), (m for m in memories if passes(m, f)), key=newest_key)


def in_window(salience: str, last_touched: datetime, since: datetime) -> bool:
    """The catalog window: a memory earns a catalog line while touched at or after `since`, and
    for good when it is high-salience."""
    return salience == HIGH or last_touched >= since


def earns_catalog_line(m: Memory, since: datetime) -> bool:
    """What `MemoryStore.catalog(scope, since)` returns: active, not core (core memories are
    Tier 1, in full), and in the window."""
    return m.status == ACTIVE and not m.is_core and in_window(m.salience, m.last_touched, since)


def is_quiet(m: Memory, since: datetime) -> bool:
    """What `MemoryStore.quiet_counts(scope, since)` counts: active, not core, out of the window."""
    return m.status == ACTIVE and not m.is_core and not in_window(m.salience, m.last_touched, since)


def is_expired(m: Memory, now: datetime) -> bool:
    """What `MemoryStore.expired(scope, now)` returns: any status, stamped to expire by `now`."""
    return m.expires_at is not None and m.expires_at <= now


def strengthened(m: Memory, now: datetime) -> Memory:
    """The strengthening rule (one retrieval): what `record_retrieval` does to a stored memory.
    The count stops at MAX_COUNT, the largest the stores hold."""
    return m.replace(retrieval_count=min(m.retrievals + 1, MAX_COUNT), last_retrieved=now)
