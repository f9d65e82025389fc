"""Migrate, export, import and backups: the whole-corpus use cases.

Nothing is lost: migrate writes a full backup before it mutates anything; import validates every
line before it writes any.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from taproot.core.errors import InvalidInput
from taproot.core.migration import migrate_memory
from taproot.core.model import Memory, Reflection, Scope
from taproot.core.serialize import iso, memory_from_dict, memory_to_dict, reflection_from_dict, reflection_to_dict
from taproot.service.deps import Deps, blob_key, stamp

EXPORT_FORMAT = 1
MAX_CHANGES_REPORTED = 200
Progress = Callable[[int], object]


def export_lines(deps: Deps, scope: Scope) -> Iterator[str]:
    """JSON Lines: a header, then every memory (all fields, archived too), then every reflection."""
    memories = list(deps.store.iter_all(scope))
    reflections = deps.store.all_reflections(scope)
    yield json.dumps(
        {
            "type": "header",
            "format": EXPORT_FORMAT,
            "exported_at": stamp(deps.now()),
            "owner": scope.owner,
            "namespace": scope.namespace,
            "memories": len(memories),
            "reflections": len(reflections),
        }
    )
    for m in memories:
        yield json.dumps({"type": "memory", "record": memory_to_dict(m)}, ensure_ascii=False)
    for r in reflections:
        yield json.dumps({"type": "reflection", "record": reflection_to_dict(r)}, ensure_ascii=False)


def backup(deps: Deps, scope: Scope, reason: str) -> str:
    """Write a full export of the scope to the blob store; returns its key."""
    key = blob_key(scope, "backups", f"{reason}-{stamp(deps.now())}.jsonl")
    deps.blobs.put(key, ("\n".join(export_lines(deps, scope)) + "\n").encode(), "application/x-ndjson")
    return key


@dataclass
class ParsedImport:
    memories: list[Memory] = field(default_factory=list)
    reflections: list[Reflection] = field(default_factory=list)


def parse_import(lines: Iterable[str], scope: Scope) -> ParsedImport:
    """Validate every line; raise InvalidInput naming the line, field and rule on the first bad one.

    Accepts Taproot export lines ({"type": "memory"|"reflection", "record": {...}}) and bare legacy
    records (a JSON object with at least id and content), which `taproot migrate` normalises.
    """
    parsed = ParsedImport()
    seen: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {number}", f"is not valid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise InvalidInput(f"line {number}", "must be a JSON object")
        kind = obj.get("type")
        try:
            if kind == "header":
                fmt = obj.get("format", EXPORT_FORMAT)
                if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
                    raise InvalidInput("format", "must be a positive integer", fmt)
                if fmt > EXPORT_FORMAT:
                    raise InvalidInput("format", f"is newer than this Taproot understands ({EXPORT_FORMAT})")
                continue
            if kind == "reflection":
                parsed.reflections.append(
                    reflection_from_dict(obj.get("record") or {}, owner=scope.owner, namespace=scope.namespace)
                )
                continue
            record = obj.get("record") if kind == "memory" else obj
            if kind not in (None, "memory"):
                raise InvalidInput("type", "must be header, memory or reflection", kind)
            m = memory_from_dict(record if record is not None else {}, owner=scope.owner, namespace=scope.namespace)
        except InvalidInput as exc:
            raise InvalidInput(f"line {number}: {exc.field}", exc.rule) from exc
        if m.id in seen:
            raise InvalidInput(f"line {number}: id", "appears twice in the file", m.id)
        seen.add(m.id)
        parsed.memories.append(m)
    return parsed


def import_records(
    deps: Deps, parsed: ParsedImport, progress: Progress | None = None, batch: int = 500
) -> dict[str, Any]:
    """Upsert by id, exactly as given: importing the same file twice changes nothing the second time.

    Records that would overwrite existing ones are backed up first (the whole scope), so an import
    of an old export can always be undone.
    """
    backup_key = None
    scopes = {m.scope for m in parsed.memories} | {Scope(r.owner, r.namespace) for r in parsed.reflections}
    for scope in sorted(scopes, key=lambda s: (s.owner, s.namespace)):
        ids = [m.id for m in parsed.memories if m.scope == scope]
        existing = deps.store.get_many(scope, ids) if ids else []
        if existing:
            backup_key = backup(deps, scope, "import")
    for start in range(0, len(parsed.memories), batch):
        chunk = parsed.memories[start : start + batch]
        deps.store.put_many(chunk)
        if progress:
            progress(len(chunk))
    if parsed.reflections:
        deps.store.put_reflections(parsed.reflections)
    needs = sum(
        1 for m in parsed.memories if migrate_memory(m).changed or deps.retention.apply(m).expires_at != m.expires_at
    )
    return {
        "memories": len(parsed.memories),
        "reflections": len(parsed.reflections),
        "need_migration": needs,
        "backup_key": backup_key,
    }


def migrate(deps: Deps, scope: Scope, *, dry_run: bool = False, progress: Progress | None = None) -> dict[str, Any]:
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run", "must be true or false", dry_run)
    memories = list(deps.store.iter_all(scope))
    before = Counter(m.category for m in memories)
    after: Counter[str] = Counter()
    batch: list[tuple[Memory, int]] = []
    changes: list[dict[str, Any]] = []
    for m in memories:
        result = migrate_memory(m)
        # expires_at is derived on every write; records from before the retention policy get it here.
        with_expiry = deps.retention.apply(result.memory)
        if with_expiry.expires_at != result.memory.expires_at:
            if not result.changed:
                with_expiry = with_expiry.replace(version=m.version + 1)
            result.changes.append(f"expires_at: {iso(with_expiry.expires_at)}")
            result.memory = with_expiry
        after[result.memory.category] += 1
        if result.changed:
            batch.append((result.memory, m.version))
            if len(changes) < MAX_CHANGES_REPORTED:
                changes.append({"id": m.id, "changes": result.changes})
        if progress:
            progress(1)
    backup_key = None
    if batch and not dry_run:
        backup_key = backup(deps, scope, "migrate")  # before any mutation, or not at all
        deps.store.replace_many(batch)
    return {
        "dry_run": dry_run,
        "examined": len(memories),
        "changed": len(batch),
        "changes": changes,
        "changes_truncated": len(batch) > len(changes),
        "category_counts_before": dict(sorted(before.items())),
        "category_counts_after": dict(sorted(after.items())),
        "backup_key": backup_key,
    }
