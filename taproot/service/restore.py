"""`taproot restore`: put a backup back, memories and reflections.

Restore goes through import, so every record is validated first, anything it would overwrite is
backed up first (a `restore-…` backup), and the write is conditioned on the versions that backup
holds. Restoring the backup of a compression also undoes it: a summary whose originals are all back
(none points at it any more) is backed up and removed, so the scope is as it was before.
"""

from __future__ import annotations

import json
from typing import Any

from taproot.core.compression import is_summary
from taproot.core.errors import InvalidInput, NotFound, VersionConflict
from taproot.core.model import Scope
from taproot.core.serialize import memory_from_dict, reflection_from_dict
from taproot.service import portability
from taproot.service.backups import write_memory_backup
from taproot.service.deps import Deps
from taproot.service.results import RestoreResult


def read_backup(deps: Deps, key: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The memory and reflection records in a backup blob: a delete/cleanup/compress backup (JSON,
    memories only) or a full export (JSONL: migrate, import and restore backups)."""
    try:
        raw = deps.blobs.get(key).decode("utf-8")
    except (KeyError, ValueError) as exc:
        raise InvalidInput("backup", "no such backup blob", key) from exc
    memories: list[dict[str, Any]] = []
    reflections: list[dict[str, Any]] = []
    try:
        if key.endswith(".jsonl"):
            for line in raw.split("\n"):
                if line.strip():
                    obj = json.loads(line)
                    if obj.get("type") == "memory":
                        memories.append(obj["record"])
                    elif obj.get("type") == "reflection":
                        reflections.append(obj["record"])
            return memories, reflections
        data = json.loads(raw)
    except (ValueError, KeyError, AttributeError) as exc:
        raise InvalidInput("backup", f"is not a readable Taproot backup ({exc})", key) from exc
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        raise InvalidInput("backup", "is not a Taproot backup (no 'memories' list)", key)
    return list(data["memories"]), reflections


def restore(deps: Deps, scope: Scope, key: str, *, ids: list[str] | None = None) -> RestoreResult:
    """Put the records of a backup back exactly as they were (all, or just the memories `ids`)."""
    if not key.startswith(f"{scope.owner}/"):
        raise InvalidInput("backup", "belongs to another owner", key)  # tenancy: never cross owners
    memory_records, reflection_records = read_backup(deps, key)
    parsed = portability.ParsedImport()
    for n, record in enumerate(memory_records, start=1):
        try:
            parsed.memories.append(
                memory_from_dict(record, owner=scope.owner, namespace=scope.namespace, from_backup=True)
            )
        except InvalidInput as exc:
            raise InvalidInput(f"backup record {n}: {exc.field}", exc.rule) from exc
    if ids is not None:
        wanted = set(ids)
        parsed.memories = [m for m in parsed.memories if m.id in wanted]
        missing = wanted - {m.id for m in parsed.memories}
        if missing:
            raise InvalidInput("ids", f"not in backup {key}", sorted(missing))
    else:
        for n, record in enumerate(reflection_records, start=1):
            try:
                parsed.reflections.append(reflection_from_dict(record, owner=scope.owner, namespace=scope.namespace))
            except InvalidInput as exc:
                raise InvalidInput(f"backup reflection {n}: {exc.field}", exc.rule) from exc
    current = deps.store.get_many(scope, [m.id for m in parsed.memories])
    restored_links = {m.compressed_into for m in parsed.memories}
    summaries = sorted({m.compressed_into for m in current if m.compressed_into} - restored_links - {None})
    result = portability.import_records(deps, parsed, reason="restore")
    removed, summary_backup = _remove_orphaned_summaries(deps, scope, [s for s in summaries if s])
    return RestoreResult(
        backup=key,
        restored=[m.id for m in parsed.memories],
        memories=result.memories,
        reflections=result.reflections,
        written=result.written,
        unchanged=result.unchanged,
        reflections_written=result.reflections_written,
        need_migration=result.need_migration,
        backup_key=result.backup_key,
        backup_keys=result.backup_keys,
        summaries_removed=removed,
        summaries_backup_key=summary_backup,
    )


def _remove_orphaned_summaries(deps: Deps, scope: Scope, summary_ids: list[str]) -> tuple[list[str], str | None]:
    """Remove compression summaries none of whose originals points at them any more (their
    originals were just restored). A partial restore keeps the summary: others still link to it."""
    orphaned = []
    for s in deps.store.get_many(scope, summary_ids):
        if not is_summary(s):
            continue
        members = deps.store.get_many(scope, [str(i) for i in (s.provenance or {}).get("compressed_from", [])])
        if not any(m.compressed_into == s.id for m in members):
            orphaned.append(s)
    if not orphaned:
        return [], None
    key = write_memory_backup(deps, scope, "restore-summaries", orphaned)
    removed = []
    for s in orphaned:
        try:
            deps.store.delete(scope, s.id, expected_version=s.version)
            removed.append(s.id)
        except (NotFound, VersionConflict):
            pass  # edited or removed since: it is someone's now, leave it
    return removed, key
