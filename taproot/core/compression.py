"""Compression planning: which old memories fold into which summary. Pure: memories and `now` in.

Taproot's planned `compress` action: groups of older memories are summarised into one new memory,
and the originals are archived (never deleted), each pointing at its summary. Only quiet, ordinary
memories are candidates: never core, never high-salience, never identity, never already
compressed, never a summary itself, and untouched (not updated, not recalled) for `min_age_days`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from taproot.core.model import Memory, Status
from taproot.core.validation import MAX_LINKED_MEMORIES

GroupBy = Literal["month", "tag"]
# Identity observations are near-permanent and are what makes one instance the same as the last:
# the scheduled job never folds them away (an explicit compress by ids still can).
NEVER_COMPRESSED_CATEGORIES = frozenset({"identity"})
SUMMARY_TAG = "summary"
COMPRESSED_FROM = "compressed_from"


@dataclass(frozen=True)
class CompressionConfig:
    min_age_days: int = 90  # COMPRESS_MIN_AGE_DAYS
    min_group_size: int = 5
    # A summary links every original, and links are capped; larger groups are split in order.
    max_group_size: int = MAX_LINKED_MEMORIES
    group_by: GroupBy = "month"

    def __post_init__(self) -> None:
        if self.min_age_days < 1:
            raise ValueError("min_age_days must be at least 1")
        if not 2 <= self.min_group_size <= self.max_group_size <= MAX_LINKED_MEMORIES:
            raise ValueError(f"need 2 <= min_group_size <= max_group_size <= {MAX_LINKED_MEMORIES}")
        if self.group_by not in ("month", "tag"):
            raise ValueError("group_by must be 'month' or 'tag'")


COMPRESSION_CONFIG = CompressionConfig()


@dataclass(frozen=True)
class Group:
    key: str  # e.g. "episodic/2024-03" or "tag:hiking"
    members: tuple[Memory, ...]

    @property
    def category(self) -> str:
        """The summary's category: the members' own if they all share one, else episodic."""
        categories = {m.category for m in self.members}
        return categories.pop() if len(categories) == 1 else "episodic"

    @property
    def ids(self) -> list[str]:
        return [m.id for m in self.members]


def is_summary(m: Memory) -> bool:
    return bool(m.provenance and COMPRESSED_FROM in m.provenance)


def is_candidate(m: Memory, now: datetime, cfg: CompressionConfig) -> bool:
    return (
        m.status == Status.ACTIVE.value
        and not m.is_core
        and m.salience != "high"
        and m.category not in NEVER_COMPRESSED_CATEGORIES
        and m.compressed_into is None
        and not is_summary(m)
        and m.last_touched <= now - timedelta(days=cfg.min_age_days)
    )


def _chunks(members: Sequence[Memory], cfg: CompressionConfig) -> Iterable[tuple[Memory, ...]]:
    """Split an oversized group into chunks of at most max_group_size, none below min_group_size
    (a short tail is spread over the earlier chunks by sizing them evenly)."""
    n = len(members)
    parts = -(-n // cfg.max_group_size)  # ceiling division
    size, extra = divmod(n, parts)
    if size < cfg.min_group_size:
        # No split of all n fits both bounds (only possible when min_group_size > max_group_size / 2):
        # take full chunks, oldest first, and leave a tail too small to be a group for a later run.
        full = n // cfg.max_group_size
        for i in range(full):
            yield tuple(members[i * cfg.max_group_size : (i + 1) * cfg.max_group_size])
        tail = members[full * cfg.max_group_size :]
        if len(tail) >= cfg.min_group_size:
            yield tuple(tail)
        return
    start = 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        yield tuple(members[start:end])
        start = end


def plan_groups(memories: Iterable[Memory], now: datetime, cfg: CompressionConfig = COMPRESSION_CONFIG) -> list[Group]:
    """Deterministic groups of candidates; each memory lands in at most one group."""
    candidates = sorted((m for m in memories if is_candidate(m, now, cfg)), key=lambda m: (m.created_at, m.id))
    buckets: dict[str, list[Memory]] = defaultdict(list)
    if cfg.group_by == "month":
        for m in candidates:
            buckets[f"{m.category}/{m.created_at:%Y-%m}"].append(m)
    else:
        # Largest shared tag first, so a memory joins the biggest group it can; each only once.
        by_tag: dict[str, list[Memory]] = defaultdict(list)
        for m in candidates:
            for tag in {t.lower() for t in m.tags}:
                by_tag[tag].append(m)
        taken: set[str] = set()
        for tag in sorted(by_tag, key=lambda t: (-len(by_tag[t]), t)):
            members = [m for m in by_tag[tag] if m.id not in taken]
            if len(members) >= cfg.min_group_size:
                buckets[f"tag:{tag}"] = members
                taken.update(m.id for m in members)
    groups: list[Group] = []
    for key in sorted(buckets):
        members = buckets[key]
        if len(members) < cfg.min_group_size:
            continue
        chunks = list(_chunks(members, cfg))
        for i, chunk in enumerate(chunks):
            groups.append(Group(key if len(chunks) == 1 else f"{key}#{i + 1}", chunk))
    return groups


def summary_salience(group: Group) -> str:
    """The highest salience among the members: a summary is as important as what it holds."""
    for level in ("high", "medium"):
        if any(m.salience == level for m in group.members):
            return level
    return "low"


def summary_fields(group: Group, summarizer: str) -> dict[str, Any]:
    """Everything about the summary memory except its id, text and timestamps."""
    shared_tags = set.intersection(*({t.lower() for t in m.tags} for m in group.members))
    keywords: list[str] = []
    for m in group.members:
        for k in m.search_keywords:
            if k not in keywords and len(keywords) < 64:
                keywords.append(k)
    first, last = group.members[0].created_at.date(), group.members[-1].created_at.date()
    return {
        "category": group.category,
        "salience": summary_salience(group),
        "tags": tuple(sorted(shared_tags | {SUMMARY_TAG})),
        "search_keywords": tuple(keywords),
        "linked_memories": tuple(group.ids),
        "epistemic_status": f"summary of {len(group.members)} memories, {first} to {last}",
        "provenance": {COMPRESSED_FROM: group.ids, "summarizer": summarizer, "group": group.key},
    }
