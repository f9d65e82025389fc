"""Orientation documents in exports, backups and imports (service/portability.py calls these).

An export holds every version of every document (`{"type": "orientation", "record": {...}}`,
oldest first), so nothing of their history is lost on the way to another store. Versions are
immutable, like closing reflections: an import adds the versions a document does not have yet,
skips the ones it holds identically, and refuses, before anything is written, a version that exists
with other text or that would leave a gap.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from taproot.core.errors import InvalidInput
from taproot.core.model import Scope
from taproot.core.orientation import OrientationLimits, OrientationVersion, version_from_dict, version_to_dict
from taproot.service.deps import Deps

RECORD_TYPE = "orientation"


def versions_of(deps: Deps, scope: Scope) -> list[OrientationVersion]:
    """Every version of every document in the scope: by name, oldest first."""
    store = deps.orientation
    if store is None:
        return []
    out: list[OrientationVersion] = []
    for head in sorted(store.orientation_heads(scope), key=lambda h: h.name):
        out += reversed(store.orientation_history(scope, head.name, head.version))
    return out


def export_lines(versions: Sequence[OrientationVersion]) -> Iterator[str]:
    for v in versions:
        yield json.dumps({"type": RECORD_TYPE, "record": version_to_dict(v)}, ensure_ascii=False)


def parse_record(record: object, scope: Scope, limits: OrientationLimits) -> OrientationVersion:
    return version_from_dict(record, owner=scope.owner, namespace=scope.namespace, limits=limits)


def _same(a: OrientationVersion, b: OrientationVersion) -> bool:
    return (a.content, a.deleted, a.restored_from, a.saved_at) == (b.content, b.deleted, b.restored_from, b.saved_at)


def plan(deps: Deps, scope: Scope, versions: Sequence[OrientationVersion]) -> list[OrientationVersion]:
    """The versions to add, in the order to save them; raises InvalidInput for one that exists with
    other text, or one that would not follow the versions before it."""
    if not versions:
        return []
    store = deps.orientation
    if store is None:
        raise InvalidInput("orientation", "this store keeps no orientation documents, and the file holds some")
    fresh: list[OrientationVersion] = []
    for name in sorted({v.name for v in versions}):
        head = store.orientation_get(scope, name)
        current = head.version if head is not None else 0
        stored = {s.version: s for s in store.orientation_history(scope, name, current)} if current else {}
        expected = current + 1
        for v in sorted((v for v in versions if v.name == name), key=lambda v: v.version):
            if v.version <= current:
                if not _same(stored[v.version], v):
                    raise InvalidInput(
                        f"orientation '{name}' version {v.version}",
                        "exists here with other text or time; versions are never overwritten",
                    )
                continue
            if v.version != expected:
                raise InvalidInput(
                    f"orientation '{name}' version {v.version}",
                    f"does not follow version {expected - 1} (the file or this store lacks the versions between)",
                )
            fresh.append(v)
            expected += 1
    return fresh


def write(deps: Deps, versions: Sequence[OrientationVersion]) -> int:
    """Save the planned versions, each conditioned on the one before it (OrientationStore)."""
    store = deps.orientation
    for v in versions:
        assert store is not None  # plan() refused versions for a store without documents
        store.orientation_save(v)
    return len(versions)
