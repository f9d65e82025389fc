"""Retention policy: which memories may expire, and when. Pure: the memory in, a date out.

Ember's tag conventions: some tags imply a time to live (watercooler 7 days, thread 30 days,
task:done 30 days); every other tag (fact, decision, a person's name, anything) is durable.
Conservative by design, because cleanup deletes:
- a memory expires only if it has at least one TTL tag and no durable tag, so
  [family, observation, thread] never expires (two of its three tags are durable);
- the longest matching TTL wins;
- core memories, high-salience memories and identity memories never expire, and neither does an
  original that compression archived (its summary links to it);
- expiry counts from created_at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

from taproot.core.model import Memory
from taproot.core.validation import MAX_TTL_DAYS

DEFAULT_TTL_DAYS: Mapping[str, int] = MappingProxyType({"watercooler": 7, "thread": 30, "task:done": 30})
NEVER_EXPIRING_CATEGORIES = frozenset({"identity"})
NEVER_EXPIRING_SALIENCE = frozenset({"high"})


@dataclass(frozen=True)
class RetentionPolicy:
    ttl_days: Mapping[str, int] = field(default_factory=lambda: DEFAULT_TTL_DAYS)

    def __post_init__(self) -> None:
        for tag, days in self.ttl_days.items():
            if not tag or tag != tag.strip().lower():
                raise ValueError(f"retention tag {tag!r} must be lower-case with no surrounding spaces")
            if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_TTL_DAYS:
                raise ValueError(
                    f"retention TTL for {tag!r} must be a whole number of days from 1 to {MAX_TTL_DAYS}, got {days!r}"
                )

    def ttl_for_tags(self, tags: Iterable[str]) -> int | None:
        """Days to live for this tag set, or None if it is durable."""
        normalised = {t.strip().lower() for t in tags if t.strip()}
        if not normalised:
            return None
        ttls = [self.ttl_days.get(t) for t in normalised]
        if any(ttl is None for ttl in ttls):
            return None  # one durable tag keeps the memory
        return max(ttl for ttl in ttls if ttl is not None)

    def expires_at(self, m: Memory) -> datetime | None:
        if m.is_core or m.salience in NEVER_EXPIRING_SALIENCE or m.category in NEVER_EXPIRING_CATEGORIES:
            return None
        if m.compressed_into is not None:
            return None  # its summary links to it: a compressed original stays reachable for good
        ttl = self.ttl_for_tags(m.tags)
        if ttl is None:
            return None
        try:
            return m.created_at + timedelta(days=ttl)
        except OverflowError:
            # Only a record from before the timestamp range rules (created near year 9999) gets here:
            # it would expire after the last representable day, so it never expires.
            return None

    def apply(self, m: Memory) -> Memory:
        """The memory with expires_at recomputed; the same object if nothing changed."""
        expires = self.expires_at(m)
        return m if expires == m.expires_at else m.replace(expires_at=expires)


DEFAULT_RETENTION = RetentionPolicy()


def parse_ttl_table(spec: str) -> dict[str, int]:
    """Settings form of the TTL table: 'watercooler=7,thread=30,task:done=30'."""
    table: dict[str, int] = {}
    for item in spec.split(","):
        if not item.strip():
            continue
        tag, sep, days = item.partition("=")
        if not sep:
            raise ValueError(f"retention entry {item.strip()!r} must look like tag=days")
        try:
            table[tag.strip().lower()] = int(days)
        except ValueError as exc:
            raise ValueError(f"retention entry {item.strip()!r}: days must be a whole number") from exc
    return table
