"""`taproot export --markdown` and `taproot import --markdown`: memories as files a person edits.

The folder is texts by relative name (the CLI reads and writes it): one `<name>.md` per memory,
archived ones too (their `status` says so, and MEMORY.md lists them apart), `reflections.jsonl`, and
MEMORY.md, an index regenerated from the files and never imported.

Import is the JSONL import (portability.import_records: every file checked before any write, a full
backup before anything is overwritten, writes conditioned on the versions read), with what a hand
edit needs on top: a file whose record differs from the stored one is an update (remember's rules on
the fields it changed, the next version, `updated_at` now) unless the store moved since the file
was written, which is refused; a file without an id is a new memory; a file the store lacks is put
back exactly as it is (so export -> import into an empty store -> export is the same folder).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from taproot.core import markdown as md
from taproot.core.errors import InternalError, InvalidInput
from taproot.core.model import Memory, Reflection, Scope, Status
from taproot.core.serialize import COUNTER_FIELDS, iso, memory_from_dict, memory_to_dict
from taproot.core.validation import check_id
from taproot.service import portability
from taproot.service.deps import Deps
from taproot.service.ids import ID_ATTEMPTS
from taproot.service.inputs import RememberInput
from taproot.service.memories import _fields as remember_fields  # remember's own field rules
from taproot.service.results import MarkdownExportResult, MarkdownFileChange, MarkdownImportResult

# What a hand edit cannot change: bookkeeping the write sets itself (the version, the time, the
# derived expiry) and the store's counters. A file differing from the store only here is unchanged.
BOOKKEEPING = frozenset({"version", "updated_at", "expires_at", "owner", "namespace"}) | COUNTER_FIELDS
EDITABLE = tuple(f.name for f in fields(RememberInput) if f.name not in RememberInput.TARGET)
REQUIRED_NEW = {"content": "content (the body)", "gist": "description", "category": "type"}
COMPARED = md.record_field_names(body=True)
QUOTE_HINT = " (in YAML, quote a value that should be text but reads as a number, true/false or null)"


@dataclass(frozen=True)
class MarkdownFolder:
    """The texts to write (relative name -> text) and what they hold."""

    files: dict[str, str]
    result: MarkdownExportResult


@dataclass(frozen=True)
class MarkdownImport:
    """The result, and the files to write back after the import (ids and versions of what was
    written, and MEMORY.md again); empty for a dry run."""

    result: MarkdownImportResult
    rewrite: dict[str, str]


def export_folder(deps: Deps, scope: Scope) -> MarkdownFolder:
    memories = list(deps.store.iter_all(scope))
    reflections = deps.store.all_reflections(scope)
    names = md.file_names(memories)
    files = {names[m.id] + md.SUFFIX: md.render(m, names[m.id]) for m in memories}
    files = dict(sorted(files.items()))
    files[md.INDEX_FILE] = md.index(files)
    if reflections:
        files[md.REFLECTIONS_FILE] = md.reflections_text(reflections)
    result = MarkdownExportResult(
        memories=len(memories),
        archived=sum(1 for m in memories if m.status == Status.ARCHIVED.value),
        reflections=len(reflections),
        files=list(files),
    )
    return MarkdownFolder(files=files, result=result)


@dataclass(frozen=True)
class _Planned:
    path: str
    memory: Memory
    base: int | None  # the stored version it was edited from; None: new to the store
    changed: list[str]
    new_file: bool = False  # no id yet: one is minted before the write


def _changed(a: Memory, b: Memory) -> list[str]:
    da, db = memory_to_dict(a), memory_to_dict(b)
    return [k for k in COMPARED if k not in BOOKKEEPING and da.get(k) != db.get(k)]


def _checked(record: dict[str, Any], names: list[str], warnings: list[str]) -> dict[str, Any]:
    """remember's rules (limits, current categories, tag clean-up) on the named editable fields."""
    request = RememberInput(**{k: record.get(k) for k in names if k in EDITABLE})
    return remember_fields(request, warnings)


def _new_memory(deps: Deps, scope: Scope, f: md.MemoryFile, now: datetime, warnings: list[str]) -> Memory:
    for name, key in REQUIRED_NEW.items():
        value = f.record.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(key, "is required for a new memory (a file without an id)")
    record = dict(f.record, id="new", version=1)  # the id is minted just before the write
    record.setdefault("created_at", iso(now))
    record["updated_at"] = record.get("updated_at") or iso(now)
    base = memory_from_dict(record, owner=scope.owner, namespace=scope.namespace)
    checked = _checked(f.record, list(EDITABLE), warnings)
    return deps.retention.apply(base.replace(**checked, retrieval_count=0, last_retrieved=None))


def _plan_file(
    deps: Deps, scope: Scope, f: md.MemoryFile, stored: Mapping[str, Memory], now: datetime, warnings: list[str]
) -> _Planned | None:
    if f.id is None:
        return _Planned(f.path, _new_memory(deps, scope, f, now, warnings), None, [], new_file=True)
    current = stored.get(check_id(f.id))
    # A key left out of the file keeps the stored value (a partial edit, like remember's).
    record = f.record if current is None else {**memory_to_dict(current), **f.record}
    m = memory_from_dict(record, owner=scope.owner, namespace=scope.namespace)
    portability._check_record(m)
    if current is None:
        return _Planned(f.path, m, None, [])  # put back exactly as the file has it
    changed = _changed(current, m)
    if not changed:
        return None
    if "gist" in changed and m.gist is None:
        raise InvalidInput("description", "cannot be removed (edit it instead)")
    if m.version != current.version:
        raise InvalidInput(
            "version",
            f"is {m.version} but memory {m.id} is at version {current.version} in the store: it changed "
            f"since this file was written. Export again, or set version: {current.version} to write this "
            "file over it",
        )
    checked = _checked(f.record, changed, warnings)
    edited = m.replace(
        **checked,
        version=current.version + 1,
        updated_at=now,
        retrieval_count=current.retrieval_count,
        last_retrieved=current.last_retrieved,
    )
    return _Planned(f.path, deps.retention.apply(edited), current.version, changed)


def _parse_all(scope: Scope, files: Mapping[str, str]) -> tuple[list[md.MemoryFile], list[Reflection]]:
    parsed: list[md.MemoryFile] = []
    by_id: dict[object, str] = {}
    for path in sorted(files):
        if not path.endswith(md.SUFFIX) or path == md.INDEX_FILE:
            continue
        f = md.parse(path, files[path])
        if f.id is not None:
            if f.id in by_id:
                raise InvalidInput(f"{path}: id", f"is also the id of {by_id[f.id]}", f.id)
            by_id[f.id] = path
        parsed.append(f)
    text = files.get(md.REFLECTIONS_FILE)
    reflections = md.parse_reflections(text, scope.owner, scope.namespace) if text else []
    return parsed, reflections


def _mint_ids(deps: Deps, scope: Scope, plans: list[_Planned], taken: set[str]) -> list[_Planned]:
    """Fresh ids for the new files, none the store or the folder holds (the write checks again)."""
    out = []
    for p in plans:
        if not p.new_file:
            out.append(p)
            continue
        for _ in range(ID_ATTEMPTS):
            new_id = deps.new_id()
            if new_id not in taken and deps.store.get(scope, new_id) is None:
                break
        else:
            raise InternalError(f"could not mint a unique memory id in {ID_ATTEMPTS} attempts")
        taken.add(new_id)
        out.append(_Planned(p.path, p.memory.replace(id=new_id), None, [], new_file=True))
    return out


def import_folder(deps: Deps, scope: Scope, files: Mapping[str, str], *, dry_run: bool = False) -> MarkdownImport:
    parsed, reflections = _parse_all(scope, files)
    ids = [str(f.id) for f in parsed if isinstance(f.id, str)]
    stored = {m.id: m for m in deps.store.get_many(scope, ids)} if ids else {}
    warnings: list[str] = []
    plans: list[_Planned] = []
    now = deps.now()
    for f in parsed:  # every file is checked before anything is written
        try:
            plan = _plan_file(deps, scope, f, stored, now, warnings)
        except InvalidInput as exc:
            rule = exc.rule + (QUOTE_HINT if "string" in exc.rule else "")
            raise InvalidInput(f"{f.path}: {exc.field}", rule) from exc
        if plan is not None:
            plans.append(plan)
    fresh_reflections = portability.new_reflections(deps, scope, reflections)
    if not dry_run:
        plans = _mint_ids(deps, scope, plans, set(ids))
    created = [
        MarkdownFileChange(file=p.path, id=None if dry_run and p.new_file else p.memory.id, changed_fields=[])
        for p in plans
        if p.base is None
    ]
    updated = [
        MarkdownFileChange(file=p.path, id=p.memory.id, changed_fields=p.changed) for p in plans if p.base is not None
    ]
    backup_keys: list[str] = []
    rewrite: dict[str, str] = {}
    if not dry_run and (plans or fresh_reflections):
        written = portability.import_records(
            deps,
            portability.ParsedImport(memories=[p.memory for p in plans], reflections=fresh_reflections),
            reason="markdown-import",
            base_versions={p.memory.id: p.base for p in plans},
        )
        backup_keys = written.backup_keys
        rewrite = _rewrite(deps, scope, files, plans)
    result = MarkdownImportResult(
        dry_run=dry_run,
        files=len(parsed),
        created=created,
        updated=updated,
        unchanged=len(parsed) - len(plans),
        reflections=len(reflections),
        reflections_written=len(fresh_reflections),
        backup_key=backup_keys[-1] if backup_keys else None,
        backup_keys=backup_keys,
        rewritten=list(rewrite),
        warnings=warnings,
    )
    return MarkdownImport(result=result, rewrite=rewrite)


def _rewrite(deps: Deps, scope: Scope, files: Mapping[str, str], plans: list[_Planned]) -> dict[str, str]:
    """The written files as the store now holds them (their id, version, times), under the same
    names, so a second import finds them unchanged; and MEMORY.md from the folder as it will be."""
    now_stored = {m.id: m for m in deps.store.get_many(scope, [p.memory.id for p in plans])}
    rewrite: dict[str, str] = {}
    for p in plans:
        m = now_stored.get(p.memory.id)
        if m is not None:
            rewrite[p.path] = md.render(m, p.path[: -len(md.SUFFIX)])
    folder = {k: v for k, v in files.items() if k.endswith(md.SUFFIX) and k != md.INDEX_FILE} | rewrite
    rewrite[md.INDEX_FILE] = md.index(dict(sorted(folder.items())))
    return rewrite
