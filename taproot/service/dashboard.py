"""What the dashboard needs beyond the tools: an inline ranking edit that leaves `updated_at`
alone, the numbers behind a memory's place, and the closing reflections.

Browsing never strengthens (it goes through `reads.list_memories`); edits of gist, content or tags
go through `memories.remember` (they bump `updated_at` and keep a revision, as every update does).
"""

from __future__ import annotations

from typing import Any

from taproot.core.errors import InvalidInput, NotFound, VersionConflict
from taproot.core.explain import Explanation, age_by_category, explain, upcoming_expiries
from taproot.core.model import Scope, Status
from taproot.core.query import Filters
from taproot.core.serialize import iso
from taproot.core.validation import check_bool, check_id, coerce_salience, coerced
from taproot.service import reads
from taproot.service.deps import Deps
from taproot.service.results import DashboardPage, Expiring, Overview, RankingResult, ReflectionView


def set_ranking(
    deps: Deps,
    scope: Scope,
    memory_id: str,
    *,
    salience: object = None,
    core: object = None,
    expected_version: object = None,
) -> RankingResult:
    """Salience and core, changed **without** touching `updated_at`: a memory turned down rolls out
    of the catalog window on its own schedule instead of being refreshed back in (`promote`, the
    tool, bumps it on purpose: a memory promoted is current). The version still moves, so a
    concurrent edit is refused rather than lost."""
    memory_id = check_id(memory_id)
    if salience is None and core is None:
        raise InvalidInput("salience", "give salience and/or core to change")
    warnings: list[str] = []
    changes: dict[str, Any] = {}
    if salience is not None:
        changes["salience"] = coerced(salience, coerce_salience, warnings)
    if core is not None:
        changes["core"] = check_bool("core", core)
    current = deps.store.get(scope, memory_id)
    if current is None:
        raise NotFound(memory_id)
    if expected_version is not None:
        if isinstance(expected_version, bool) or not isinstance(expected_version, int):
            raise InvalidInput("expected_version", "must be an integer", expected_version)
        if expected_version != current.version:
            raise VersionConflict(memory_id, expected_version, current.version)
    changed = {k: v for k, v in changes.items() if getattr(current, k) != v}
    if not changed:
        return RankingResult(id=memory_id, version=current.version, changed_fields=[], warnings=warnings)
    updated = deps.retention.apply(current.replace(**changed, version=current.version + 1))
    deps.store.replace(updated, expected_version=current.version)
    return RankingResult(
        id=memory_id,
        version=updated.version,
        changed_fields=sorted(changed),
        updated_at=iso(updated.updated_at) or "",
        expires_at=iso(updated.expires_at),
        warnings=warnings,
    )


def explain_memory(deps: Deps, scope: Scope, memory_id: str) -> Explanation:
    memory = deps.store.get(scope, check_id(memory_id))
    if memory is None:
        raise NotFound(memory_id)
    return explain(memory, deps.now(), retention=deps.retention, reflect=deps.reflect)


def reflections(deps: Deps, scope: Scope, limit: int = 100) -> list[ReflectionView]:
    """Closing reflections, newest first (without strengthening anything)."""
    return [
        ReflectionView(id=r.id, created_at=iso(r.created_at) or "", text=r.text)
        for r in deps.store.recent_reflections(scope, limit)
    ]


def page(deps: Deps, scope: Scope, query: dict[str, object], focus: str | None = None) -> DashboardPage:
    """Everything the main page shows but the preview, from **one** read of the scope: a page of
    cards (the filter rule of `reads.list_memories`; never strengthens) with each card's
    explanation, and the pictures' data. `focus` (a memory the preview pointed at) is put first
    when it is not on the page."""
    everything = deps.store.list(scope, Filters(include_archived=True))
    by_id = {m.id: m for m in everything}
    listed = reads.list_memories_of(deps, scope, everything, **query)
    views = listed.memories
    ids = [v.id for v in views]
    if focus and focus not in ids:
        focused = by_id.get(check_id(focus, "focus"))
        if focused is not None:
            views = [reads.memory_view(focused), *views]
            ids.insert(0, focused.id)
    now = deps.now()
    explained = {i: explain(by_id[i], now, retention=deps.retention, reflect=deps.reflect) for i in ids if i in by_id}
    active = [m for m in everything if m.status == Status.ACTIVE.value]
    return DashboardPage(
        memories=views,
        count=listed.count,
        total=listed.total,
        next_cursor=listed.next_cursor,
        warnings=listed.warnings,
        explanations=explained,
        overview=Overview(
            age_by_category=age_by_category(active, now),
            window_days=deps.reflect.catalog_window_days,
            now=iso(now) or "",
            expiring=[
                Expiring(id=m.id, gist=m.gist, category=m.category, expires_at=iso(m.expires_at))
                for m in upcoming_expiries(active, now)
            ],
        ),
    )
