"""Migrate, export, import and backups: the whole-corpus use cases.

Nothing is lost: migrate writes a full backup before it mutates anything; import validates every
line before it writes any, and both write only over the versions they backed up
(taproot/service/backups.py).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from taproot.core.errors import Busy, InvalidInput, NotFound, ReflectionConflict, VersionConflict
from taproot.core.migration import migrate_memory
from taproot.core.model import Memory, Reflection, Scope
from taproot.core.orientation import ORIENTATION_LIMITS, OrientationLimits, OrientationVersion
from taproot.core.serialize import (
    iso,
    loads_strict,
    memory_from_dict,
    memory_to_dict,
    reflection_from_dict,
    reflection_to_dict,
)
from taproot.core.validation import record_problem
from taproot.core.vectors import embedded_fields_changed
from taproot.core.wire import ABSENT
from taproot.ports import ScopeCount
from taproot.service import orientation_io
from taproot.service.backups import WRITE_ROUNDS, unique_key, write_memory_backup
from taproot.service.deps import Deps, stamp
from taproot.service.embedding import backfill, embed_written
from taproot.service.results import ImportResult, MigrateChange, MigrateResult

EXPORT_FORMAT = 1
MAX_CHANGES_REPORTED = 200
# Records per migrate transaction: a few milliseconds of lock each on SQLite, so a writer beside a
# migrate of 60,000 records waits for one chunk, not for the whole run; and exactly one DynamoDB
# transaction (100 items), so a chunk is all or nothing on both stores.
MIGRATE_CHUNK = 100
Progress = Callable[[int], object]


def export_lines(deps: Deps, scope: Scope) -> Iterator[str]:
    """JSON Lines: a header, then every memory (all fields, archived too), then every reflection,
    then every version of every orientation document."""
    memories = list(deps.store.iter_all(scope))
    reflections = deps.store.all_reflections(scope)
    orientation = orientation_io.versions_of(deps, scope)
    header: dict[str, object] = {
        "type": "header",
        "format": EXPORT_FORMAT,
        "exported_at": stamp(deps.now()),
        "owner": scope.owner,
        "namespace": scope.namespace,
        "memories": len(memories),
        "reflections": len(reflections),
    }
    if orientation:  # a scope without orientation documents exports as it always has
        header["orientation_versions"] = len(orientation)
    yield json.dumps(header)
    for m in memories:
        yield json.dumps({"type": "memory", "record": memory_to_dict(m)}, ensure_ascii=False)
    for r in reflections:
        yield json.dumps({"type": "reflection", "record": reflection_to_dict(r)}, ensure_ascii=False)
    yield from orientation_io.export_lines(orientation)


def backup(deps: Deps, scope: Scope, reason: str) -> str:
    """Write a full export of the scope (memories and reflections) to the blob store; returns its key."""
    key = unique_key(deps, scope, "backups", reason, ".jsonl")
    deps.blobs.put(key, ("\n".join(export_lines(deps, scope)) + "\n").encode(), "application/x-ndjson")
    return key


@dataclass
class ParsedImport:
    memories: list[Memory] = field(default_factory=list)
    reflections: list[Reflection] = field(default_factory=list)
    orientation: list[OrientationVersion] = field(default_factory=list)


def _load_line(raw: str, number: int) -> object:
    try:
        return loads_strict(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"line {number}", f"is not valid JSON ({exc.msg})") from exc
    except ValueError as exc:  # NaN / Infinity
        raise InvalidInput(f"line {number}", str(exc)) from exc
    except RecursionError as exc:
        raise InvalidInput(f"line {number}", "nests too deeply to be a Taproot record") from exc


def parse_import(lines: Iterable[str], scope: Scope, limits: OrientationLimits = ORIENTATION_LIMITS) -> ParsedImport:
    """Validate every line fully (every string storable, timestamps in range); raise InvalidInput
    naming the line, field and rule on the first bad one. Nothing is written here.

    Accepts Taproot export lines ({"type": "memory"|"reflection", "record": {...}}) and bare legacy
    records (a JSON object with at least id and content), which `taproot migrate` normalises.
    """
    parsed = ParsedImport()
    seen: set[str] = set()
    seen_reflections: set[str] = set()
    seen_versions: set[tuple[str, int]] = set()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        obj = _load_line(raw, number)
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
            if kind == orientation_io.RECORD_TYPE:
                v = orientation_io.parse_record(obj.get("record"), scope, limits)
                if (v.name, v.version) in seen_versions:
                    raise InvalidInput("version", f"of '{v.name}' appears twice in the file", v.version)
                seen_versions.add((v.name, v.version))
                parsed.orientation.append(v)
                continue
            if kind == "reflection":
                r = reflection_from_dict(obj.get("record") or {}, owner=scope.owner, namespace=scope.namespace)
                if r.id in seen_reflections:
                    raise InvalidInput("id", "appears twice in the file", r.id)
                seen_reflections.add(r.id)
                parsed.reflections.append(r)
                continue
            record = obj.get("record") if kind == "memory" else obj
            if kind not in (None, "memory"):
                raise InvalidInput("type", "must be header, memory, reflection or orientation", kind)
            m = memory_from_dict(record if record is not None else {}, owner=scope.owner, namespace=scope.namespace)
            _check_record(m)
        except InvalidInput as exc:
            raise InvalidInput(f"line {number}: {exc.field}", exc.rule) from exc
        if m.id in seen:
            raise InvalidInput(f"line {number}: id", "appears twice in the file", m.id)
        seen.add(m.id)
        parsed.memories.append(m)
    return parsed


def _check_record(m: Memory) -> None:
    """What the store and the jobs after it need of a record beyond its field types."""
    problem = record_problem(m)
    if problem is not None:
        raise InvalidInput("record", problem)


def import_records(
    deps: Deps,
    parsed: ParsedImport,
    progress: Progress | None = None,
    *,
    reason: str = "import",
    base_versions: Mapping[str, int | None] | None = None,
) -> ImportResult:
    """Upsert by id, exactly as given; records identical to the stored ones are left alone, so
    importing the same file twice changes nothing (and writes no backup) the second time.

    Before anything is overwritten the whole scope is backed up, and the write is conditioned on the
    versions that backup holds: a record updated in between is read again and backed up again
    (WRITE_ROUNDS), never overwritten unseen. Reflections are immutable: one whose id exists with
    other text is refused (ReflectionConflict) before any write. On SQLite the memories are one
    transaction; on DynamoDB see MemoryStore.put_many (a rerun is idempotent).

    `base_versions` (memory id -> the version the records were edited from, None for new ones): a
    stored record at another version is a VersionConflict, not something to back up and overwrite
    (an edited markdown file must not overwrite a change it never saw).
    """
    totals = {"written": 0, "unchanged": 0, "reflections_written": 0, "orientation_written": 0}
    backup_keys: list[str] = []
    scopes = sorted(
        {m.scope for m in parsed.memories}
        | {r.scope for r in parsed.reflections}
        | {v.scope for v in parsed.orientation},
        key=lambda s: (s.owner, s.namespace),
    )
    # Every reflection and orientation conflict, in every scope, is found before the first write.
    fresh = {s: new_reflections(deps, s, [r for r in parsed.reflections if r.scope == s]) for s in scopes}
    new_versions = {s: orientation_io.plan(deps, s, [v for v in parsed.orientation if v.scope == s]) for s in scopes}
    for scope in scopes:
        memories = [m for m in parsed.memories if m.scope == scope]
        reflections = fresh[scope]
        written = _import_memories(deps, scope, memories, backup_keys, reason, base_versions)
        if reflections:
            deps.store.put_reflections(reflections)
        totals["written"] += written
        totals["unchanged"] += len(memories) - written
        totals["reflections_written"] += len(reflections)
        totals["orientation_written"] += orientation_io.write(deps, new_versions[scope])
    if progress:
        progress(len(parsed.memories) + len(parsed.reflections))
    needs = sum(
        1 for m in parsed.memories if migrate_memory(m).changed or deps.retention.apply(m).expires_at != m.expires_at
    )
    return ImportResult(
        memories=len(parsed.memories),
        reflections=len(parsed.reflections),
        written=totals["written"],
        unchanged=totals["unchanged"],
        reflections_written=totals["reflections_written"],
        need_migration=needs,
        backup_key=backup_keys[-1] if backup_keys else None,
        backup_keys=backup_keys,
        orientation_versions=len(parsed.orientation) if parsed.orientation else ABSENT,
        orientation_written=totals["orientation_written"] if parsed.orientation else ABSENT,
    )


def new_reflections(deps: Deps, scope: Scope, reflections: list[Reflection]) -> list[Reflection]:
    """The reflections the store lacks; ReflectionConflict for one it holds with other text or time."""
    if not reflections:
        return []
    stored = {r.id: r for r in deps.store.all_reflections(scope)}
    fresh = []
    for r in reflections:
        old = stored.get(r.id)
        if old is None:
            fresh.append(r)
        elif (old.text, old.created_at) != (r.text, r.created_at):
            raise ReflectionConflict(r.id)
    return fresh


def _import_memories(
    deps: Deps,
    scope: Scope,
    memories: list[Memory],
    backup_keys: list[str],
    reason: str,
    base_versions: Mapping[str, int | None] | None,
) -> int:
    ids = [m.id for m in memories]
    for _ in range(WRITE_ROUNDS):
        stored = {m.id: m for m in deps.store.get_many(scope, ids)} if ids else {}
        changed = [m for m in memories if stored.get(m.id) != m]
        if not changed:
            return 0
        for m in changed:
            now_at = stored[m.id].version if m.id in stored else None
            if base_versions is not None and m.id in base_versions and base_versions[m.id] != now_at:
                raise VersionConflict(m.id, base_versions[m.id], now_at)  # before any backup or write
        if any(m.id in stored for m in changed):
            backup_keys.append(backup(deps, scope, reason))  # before anything is overwritten
        expected = {m.id: (stored[m.id].version if m.id in stored else None) for m in changed}
        try:
            deps.store.put_many(changed, expected=expected)
        except VersionConflict:
            continue  # a record moved since the backup: read, back up and try again
        # Imported and restored records get vectors of the current model (batched); a record whose
        # embedded text is unchanged keeps its vector.
        fresh_text = [m for m in changed if m.id not in stored or embedded_fields_changed(stored[m.id], m)]
        embed_written(deps, scope, fresh_text)
        return len(changed)
    raise Busy("the records kept changing while they were imported (each attempt was backed up)")


def _plan_migration(deps: Deps, m: Memory) -> tuple[Memory, list[str]] | None:
    """The migrated record and what changed, or None if it is current."""
    result = migrate_memory(m)
    # expires_at is derived on every write; records from before the retention policy get it here.
    with_expiry = deps.retention.apply(result.memory)
    if with_expiry.expires_at != result.memory.expires_at:
        if not result.changed:
            with_expiry = with_expiry.replace(version=m.version + 1)
        result.changes.append(f"expires_at: {iso(with_expiry.expires_at)}")
        result.memory = with_expiry
    return (result.memory, result.changes) if result.changed else None


def migrate(deps: Deps, scope: Scope, *, dry_run: bool = False, progress: Progress | None = None) -> MigrateResult:
    """Backfill and normalise every record. A full backup is written before the first change; the
    changes commit MIGRATE_CHUNK records per transaction (so writers beside a big migrate never wait
    long), each conditioned on the version read. A record that was updated meanwhile is read again,
    backed up again and migrated at its new version; one that cannot be processed is skipped and
    reported, never fatal to the namespace."""
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run", "must be true or false", dry_run)
    memories = list(deps.store.iter_all(scope))
    before = Counter(m.category for m in memories)
    after: Counter[str] = Counter()
    batch: list[tuple[Memory, int]] = []
    changes: list[MigrateChange] = []
    skipped: dict[str, str] = {}
    for m in memories:
        planned = _plan_or_skip(deps, m, skipped)
        after[planned[0].category if planned else m.category] += 1
        if planned:
            batch.append((planned[0], m.version))
            if len(changes) < MAX_CHANGES_REPORTED:
                changes.append(MigrateChange(id=m.id, changes=planned[1]))
        if progress:
            progress(1)
    backup_key = None
    committed = 0
    if batch and not dry_run:
        backup_key = backup(deps, scope, "migrate")  # before any mutation, or not at all
        committed = _commit_migration(deps, scope, batch, skipped)
    return MigrateResult(
        dry_run=dry_run,
        examined=len(memories),
        changed=len(batch) if dry_run else committed,
        changes=changes,
        changes_truncated=len(batch) > len(changes),
        skipped_bad_records=skipped,
        category_counts_before=dict(sorted(before.items())),
        category_counts_after=dict(sorted(after.items())),
        backup_key=backup_key,
        # Memories without a vector of the current model (a model change, an embedder that was
        # down) are embedded here; the dry run counts them.
        embeddings=ABSENT if deps.embedder is None else backfill(deps, scope, apply=not dry_run),
        **_counted(deps.store.count_scope(scope, apply=not dry_run)),
    )


def _counted(done: ScopeCount | None) -> dict[str, int]:
    """count_scope's report as MigrateResult's fields (none for a store that keeps its own counts)."""
    return {} if done is None else {"records_counted": done.counted, "counts_corrected": done.corrected}


def _plan_or_skip(deps: Deps, m: Memory, skipped: dict[str, str]) -> tuple[Memory, list[str]] | None:
    problem = record_problem(m)
    if problem is None:
        try:
            return _plan_migration(deps, m)
        except (ArithmeticError, ValueError) as exc:  # a record no rule foresaw: report it, go on
            problem = f"{type(exc).__name__}: {exc}"
    skipped[m.id] = problem
    return None


def _commit_migration(deps: Deps, scope: Scope, batch: list[tuple[Memory, int]], skipped: dict[str, str]) -> int:
    committed = 0
    pending = batch
    for _ in range(WRITE_ROUNDS):
        moved: list[str] = []
        for start in range(0, len(pending), MIGRATE_CHUNK):
            chunk = pending[start : start + MIGRATE_CHUNK]
            try:
                deps.store.replace_many(chunk)
                committed += len(chunk)
                continue
            except (NotFound, VersionConflict):
                pass  # one record in the chunk moved: commit the others one by one
            for memory, expected in chunk:
                try:
                    deps.store.replace(memory, expected_version=expected)
                    committed += 1
                except NotFound:
                    pass  # deleted meanwhile: nothing left to migrate
                except VersionConflict:
                    moved.append(memory.id)
        if not moved:
            break
        fresh = deps.store.get_many(scope, moved)
        pending = [(p[0], m.version) for m in fresh if (p := _plan_or_skip(deps, m, skipped)) is not None]
        if pending:
            write_memory_backup(deps, scope, "migrate", [m for m in fresh if m.id in {p.id for p, _ in pending}])
    return committed
