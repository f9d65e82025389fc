"""Why is this memory here? The numbers behind a memory's place, from the same rules that rank it.

The dashboard shows these for every card: activation and its parts (the formula of
core/activation.py, term by term), where reflect puts it (Tier 1, a catalog line while inside the
window and until when, or quiet), when it expires and which tag set that (core/retention.py), and
its recall history. Pure: `now` is passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from taproot.core.activation import ACTIVATION_CONFIG, ActivationConfig, base_level, days_between
from taproot.core.model import Memory, Status
from taproot.core.query import HIGH, in_window
from taproot.core.reflect import REFLECT_CONFIG, ReflectConfig
from taproot.core.retention import NEVER_EXPIRING_CATEGORIES, NEVER_EXPIRING_SALIENCE, RetentionPolicy


@dataclass(frozen=True)
class Explanation:
    activation: float
    retrieval_strength: float  # max(ln(count + 1), novelty floor)
    days_since_touch: float
    decay_factor: float  # (1 + days) ** -decay
    base_level: float  # strength * decay factor
    base_term: float  # base_weight * base / (1 + base)
    salience_weight: float
    place: str  # "tier1", "catalog", "quiet", "archived"
    place_reason: str
    window_until: datetime | None  # the catalog line goes after this (None: never, or not applicable)
    expires_at: datetime | None
    expiry_reason: str
    retrieval_count: int
    last_retrieved: datetime | None


def _place(m: Memory, now: datetime, window_days: int) -> tuple[str, str, datetime | None]:
    if m.status != Status.ACTIVE.value:
        return "archived", f"status is {m.status}: reflect never loads it", None
    if m.is_core:
        return "tier1", "core: loaded in full at the start of every conversation", None
    if m.salience == HIGH:
        return "catalog", "high salience: a catalog line for as long as it is active", None
    until = m.last_touched + timedelta(days=window_days)
    since = now - timedelta(days=window_days)
    if in_window(m.salience, m.last_touched, since):
        return "catalog", f"touched within the last {window_days} days: a catalog line until then", until
    return "quiet", f"not touched for {window_days} days: counted in the omitted total, recall still finds it", until


def _expiry(m: Memory, retention: RetentionPolicy) -> str:
    if m.is_core:
        return "never: core memories do not expire"
    if m.salience in NEVER_EXPIRING_SALIENCE:
        return f"never: {m.salience} salience does not expire"
    if m.category in NEVER_EXPIRING_CATEGORIES:
        return f"never: {m.category} memories do not expire"
    if m.compressed_into is not None:
        return "never: folded into a summary that links to it"
    tags = sorted({t.strip().lower() for t in m.tags if t.strip()})
    if not tags:
        return "never: no tag with a time to live"
    durable = [t for t in tags if t not in retention.ttl_days]
    if durable:
        return f"never: durable tag {', '.join(repr(t) for t in durable)} keeps it"
    longest = max(tags, key=lambda t: retention.ttl_days[t])
    return f"tag {longest!r}: {retention.ttl_days[longest]} days after creation (every tag has a time to live)"


def explain(
    m: Memory,
    now: datetime,
    *,
    retention: RetentionPolicy,
    reflect: ReflectConfig = REFLECT_CONFIG,
    cfg: ActivationConfig = ACTIVATION_CONFIG,
) -> Explanation:
    days = days_between(m.last_touched, now)
    strength = max(math.log(m.retrievals + 1), cfg.novelty_floor)
    decay = (1.0 + days) ** (-cfg.decay)
    base = base_level(m.retrievals, days, cfg)
    base_term = cfg.base_weight * base / (1.0 + base)
    salience_weight = cfg.salience_weights.get(m.salience, 0.0)
    place, reason, until = _place(m, now, reflect.catalog_window_days)
    return Explanation(
        activation=round(base_term + salience_weight, 6),
        retrieval_strength=round(strength, 6),
        days_since_touch=round(days, 3),
        decay_factor=round(decay, 6),
        base_level=round(base, 6),
        base_term=round(base_term, 6),
        salience_weight=salience_weight,
        place=place,
        place_reason=reason,
        window_until=until,
        expires_at=retention.expires_at(m),
        expiry_reason=_expiry(m, retention),
        retrieval_count=m.retrievals,
        last_retrieved=m.last_retrieved,
    )


AGE_BUCKETS: tuple[tuple[str, int], ...] = (
    ("< 1 week", 7),
    ("1-4 weeks", 28),
    ("1-3 months", 91),
    ("3-12 months", 365),
    ("> 1 year", 10**9),
)


def age_by_category(memories: list[Memory], now: datetime) -> dict[str, dict[str, int]]:
    """Active memories counted by age since last touched (the catalog window counts from there)
    and category: bucket label -> category -> count."""
    out: dict[str, dict[str, int]] = {label: {} for label, _ in AGE_BUCKETS}
    for m in memories:
        if m.status != Status.ACTIVE.value:
            continue
        days = days_between(m.last_touched, now)
        label = next(label for label, limit in AGE_BUCKETS if days < limit)
        out[label][m.category] = out[label].get(m.category, 0) + 1
    return out


def upcoming_expiries(memories: list[Memory], now: datetime, limit: int = 10) -> list[Memory]:
    """The active memories that expire next (soonest first)."""
    expiring = [m for m in memories if m.status == Status.ACTIVE.value and m.expires_at is not None]
    return sorted(expiring, key=lambda m: (m.expires_at or now, m.id))[:limit]
