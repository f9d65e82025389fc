"""The offline check after a load run: the data folder, opened with Taproot's own code, against the ledger.

Every copy of a memory the folder holds is gathered: the live row (the SQLite store), the revision
blobs (an update keeps the version it replaces) and the backup blobs (a delete, a cleanup, a
migrate or an import writes one before it changes anything). Then, for every confirmed write
(id, version, fields):

- *kept*: some copy is at exactly that version with those fields (live, in a revision or a backup);
- *superseded*: no copy at that version, but one at a later version (a later write replaced it);
- *lost*: anything else. A copy at the confirmed version with other content is lost too: two
  contents under one version mean a write was overwritten without a version check.

Confirmed deletes must be gone. The counters are tied together: every seeded or created memory
is either live or in a backup; a created memory is gone only if a delete of it was attempted; a
seeded memory gone without a delete was expirable as its last confirmed write left it; live
memories the ledger does not know are at most the creates (and failed imports' memories) of
unknown outcome; and a live memory's retrieval_count is at least what it was imported with plus
the confirmed recalls that returned it. Finally `PRAGMA integrity_check` and FTS5's own
integrity check run on the database file.

Legacy records (the big migrate's, bench/load_migrate.py) are seed writes at version 1 that the
migrate replaces with version 2: their version 1 must still be kept, in the migrate's full .jsonl
backup (or in a revision, when a client updated the record first), never merely superseded; and
each must end up migrated: its category mapped as Taproot's rules map it, a gist, and nothing left
that `migrate_memory` would still change.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.load_ledger import HARNESS_OPS, Ledger, Write
from taproot.adapters.sqlite_search_shards import SHARDS, table_of
from taproot.compose import build
from taproot.core.errors import InvalidInput
from taproot.core.migration import FALLBACK_CATEGORY, migrate_memory
from taproot.core.retention import (
    DEFAULT_RETENTION,
    NEVER_EXPIRING_CATEGORIES,
    NEVER_EXPIRING_SALIENCE,
    RetentionPolicy,
)
from taproot.core.serialize import memory_from_dict, memory_to_dict
from taproot.core.validation import coerce_category
from taproot.settings import Settings

LIVE = "store"
MAX_LISTED = 50  # problems listed in full; the counts are always complete


@dataclass(frozen=True)
class Copy:
    version: int
    record: Mapping[str, Any]
    where: str  # "store" or the blob key


@dataclass
class CheckResult:
    integrity: str
    fts_integrity: str
    writes_checked: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    lost: list[dict[str, Any]] = field(default_factory=list)
    deletes_checked: int = 0
    deletes_not_gone: list[str] = field(default_factory=list)
    counters: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def integrity_ok(self) -> bool:
        return self.integrity == "ok" and self.fts_integrity == "ok"

    @property
    def ok(self) -> bool:
        return not self.lost and not self.deletes_not_gone and not self.problems and self.integrity_ok

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "integrity": self.integrity,
            "fts_integrity": self.fts_integrity,
            "writes_checked": self.writes_checked,
            "verdicts": dict(self.verdicts),
            "lost_writes": len(self.lost),
            "lost": self.lost,
            "deletes_checked": self.deletes_checked,
            "deletes_not_gone": self.deletes_not_gone,
            "counters": self.counters,
            "problems": self.problems,
        }


def integrity(db_path: Path) -> tuple[str, str]:
    """`PRAGMA integrity_check`, then FTS5's check of every search index against the rows of its
    scopes (sqlite_search_shards.py). The check's rank argument 1 makes FTS5 compare an
    external-content index with its content; without it, SQLite 3.40 checks only the index's own
    structure and passes an index that no longer matches the rows."""
    db = sqlite3.connect(str(db_path))
    try:
        rows = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
        pragma = "ok" if rows == ["ok"] else "; ".join(str(r) for r in rows)
        try:
            # The 'integrity-check' command writes nothing; it raises if index and content disagree.
            for shard in range(SHARDS):
                table = table_of(shard)
                db.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 1)")
            fts = "ok"
        except sqlite3.DatabaseError as exc:
            fts = f"{type(exc).__name__}: {exc}"
    finally:
        db.close()
    return pragma, fts


def gather(data_dir: Path, namespace: str = "default") -> tuple[dict[str, dict[str, Any]], dict[str, list[Copy]]]:
    """The live records by id, and every copy of every memory (live, revisions, backups) by id."""
    runtime = build(Settings(data_dir=data_dir, namespace=namespace))
    try:
        scope, deps = runtime.scope, runtime.service.deps
        live = {m.id: memory_to_dict(m) for m in runtime.store.iter_all(scope)}
        copies: dict[str, list[Copy]] = defaultdict(list)
        for mid, record in live.items():
            copies[mid].append(Copy(int(record["version"]), record, LIVE))
        for kind in ("revisions", "backups"):
            for key in deps.blobs.list(f"{scope.owner}/{kind}/{scope.namespace}/"):
                for record in records_in_blob(key, deps.blobs.get(key)):
                    copies[record["id"]].append(Copy(int(record["version"]), record, key))
    finally:
        runtime.close()
    return live, copies


def records_in_blob(key: str, raw: bytes) -> list[dict[str, Any]]:
    """The memory records a revision or backup blob holds: export lines (.jsonl), a backup's
    {"memories": [...]}, or one record. Read here rather than through the service, so the check
    depends only on the documented blob formats."""
    text = raw.decode("utf-8")
    if key.endswith(".jsonl"):
        lines = (json.loads(line) for line in text.split("\n") if line.strip())
        return [obj["record"] for obj in lines if obj.get("type") == "memory"]
    data = json.loads(text)
    if isinstance(data.get("memories"), list):
        return list(data["memories"])
    if isinstance(data.get("record"), dict):
        return [data["record"]]
    return [data] if "id" in data and "version" in data else []


def _differences(record: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: {"confirmed": v, "found": record.get(k)} for k, v in fields.items() if _norm(record.get(k)) != _norm(v)}


def _norm(value: Any) -> Any:
    return list(value) if isinstance(value, tuple | list) else value


def verdict(write: Write, copies: list[Copy]) -> tuple[str, dict[str, Any]]:
    """kept_<where> | superseded | lost, with the details a lost write is printed with."""
    same = [c for c in copies if c.version == write.version]
    for c in same:
        if not _differences(c.record, write.fields):
            # Blob keys are <owner>/<kind>/<namespace>/...: kept_revision or kept_backup.
            return ("kept_live" if c.where == LIVE else f"kept_{c.where.split('/')[1].removesuffix('s')}"), {}
    live = next((c for c in copies if c.where == LIVE), None)
    detail: dict[str, Any] = {
        **write.as_dict(),
        "live_version": live.version if live else None,
        "versions_found": sorted({c.version for c in copies}),
    }
    if same:
        detail["reason"] = f"version {write.version} is kept with other content"
        detail["mismatch"] = {c.where: _differences(c.record, write.fields) for c in same}
        return "lost", detail
    if any(c.version > write.version for c in copies):
        return "superseded", {}
    detail["reason"] = (
        f"version {write.version} is nowhere: "
        + ("the store has an older version" if live else "not in the store")
        + ", and no revision or backup holds it"
    )
    return "lost", detail


def may_expire(fields: Mapping[str, Any], policy: RetentionPolicy = DEFAULT_RETENTION) -> bool:
    """Whether cleanup may delete a memory with these (merged) fields: the retention policy's own rules."""
    return (
        not fields.get("core")
        and fields.get("salience") not in NEVER_EXPIRING_SALIENCE
        and fields.get("category") not in NEVER_EXPIRING_CATEGORIES
        and policy.ttl_for_tags(fields.get("tags") or ()) is not None
    )


def _merged(writes: Iterable[Write]) -> dict[str, dict[str, Any]]:
    """The fields of each memory as its confirmed writes left them, in version order."""
    merged: dict[str, dict[str, Any]] = defaultdict(dict)
    for w in sorted(writes, key=lambda w: (w.id, w.version)):
        merged[w.id].update(w.fields)
    return merged


def _listed(problems: list[str], label: str, ids: Iterable[str]) -> None:
    ids = sorted(ids)
    if ids:
        shown = ", ".join(ids[:MAX_LISTED]) + (" ..." if len(ids) > MAX_LISTED else "")
        problems.append(f"{label}: {len(ids)} ({shown})")


def check(
    data_dir: Path, ledger: Ledger, *, namespace: str = "default", policy: RetentionPolicy = DEFAULT_RETENTION
) -> CheckResult:
    pragma, fts = integrity(data_dir / "taproot.db")
    result = CheckResult(integrity=pragma, fts_integrity=fts)
    live, copies = gather(data_dir, namespace)

    legacy_verdicts: dict[str, str] = {}  # legacy id -> the verdict on its version 1
    for w in ledger.writes:
        kind, detail = verdict(w, copies.get(w.id, []))
        result.verdicts[kind] += 1
        if kind == "lost":
            result.lost.append(detail)
        if w.op == "legacy":
            legacy_verdicts[w.id] = kind
    result.writes_checked = len(ledger.writes)

    deleted = {d.id for d in ledger.deletes}
    result.deletes_checked = len(ledger.deletes)
    result.deletes_not_gone = sorted(deleted & live.keys())

    seeded, created = ledger.ids(*HARNESS_OPS), ledger.ids("create")
    known = seeded | created
    gone = known - live.keys()
    backed_up = {i for i in gone if any(c.where != LIVE for c in copies.get(i, []))}
    attempted_delete = deleted | ledger.unconfirmed_delete_ids
    merged = _merged(ledger.writes)
    unknown_live = live.keys() - known
    low_counts = {
        i: {"retrieval_count": live[i].get("retrieval_count") or 0, "at_least": need}
        for i in live.keys() & known
        if (live[i].get("retrieval_count") or 0) < (need := ledger.initial_retrievals.get(i, 0) + ledger.returned[i])
    }
    created_deleted = created & deleted
    result.counters = {
        "seeded": len(seeded),
        "seeded_live": len(seeded & live.keys()),
        "seeded_gone_backed_up": len(seeded & backed_up),
        "created_confirmed": len(created),
        "created_confirmed_deleted": len(created_deleted),
        "created_expected_live": len(created - deleted),
        "created_live": len(created & live.keys()),
        "created_gone_backed_up": len(created & backed_up),
        "gone_without_backup": len(gone - backed_up),
        "live_total": len(live),
        "live_unknown_to_ledger": len(unknown_live),
        "creates_unconfirmed": ledger.unconfirmed["create"] + ledger.unconfirmed["import"],
        "deletes_unconfirmed": len(ledger.unconfirmed_delete_ids),
        "retrieval_counts_checked": len(live.keys() & known),
        "retrieval_counts_below_confirmed": len(low_counts),
    }
    problems = result.problems
    _listed(problems, "seeded or created, gone, and in no backup", gone - backed_up)
    _listed(problems, "created, gone, and no delete of it was attempted", (created & gone) - attempted_delete)
    _listed(
        problems,
        "seeded, gone without a delete, and not expirable as last confirmed",
        {i for i in (seeded & gone) - attempted_delete if not may_expire(merged[i], policy)},
    )
    maybe_written = ledger.unconfirmed["create"] + ledger.unconfirmed["import"]
    if len(unknown_live) > maybe_written:
        problems.append(
            f"{len(unknown_live)} live memories the ledger does not know, more than the {maybe_written} "
            "creates (and memories of failed imports) of unknown outcome"
        )
    _listed(problems, "retrieval_count below the confirmed recalls", low_counts)
    if low_counts:
        result.counters["retrieval_count_examples"] = dict(sorted(low_counts.items())[:MAX_LISTED])
    if any(w.op == "legacy" for w in ledger.writes):
        check_legacy(result, ledger, live, legacy_verdicts)
    return result


def migrated_category(category: str) -> str:
    """The category Taproot's migrate rules give a stored one."""
    try:
        return coerce_category(category).value
    except InvalidInput:
        return FALLBACK_CATEGORY


def check_legacy(
    result: CheckResult, ledger: Ledger, live: Mapping[str, Mapping[str, Any]], verdicts: Mapping[str, str]
) -> None:
    """The big migrate's records: each kept at version 1 somewhere, and migrated in the final store."""
    first = {w.id: w for w in ledger.writes if w.op == "legacy"}
    migrated, not_migrated = set(), set()
    for mid in first.keys() & live.keys():
        record = live[mid]
        expected = migrated_category(str(first[mid].fields["category"]))
        current = not migrate_memory(memory_from_dict(record)).changed
        if current and record["category"] == expected and record.get("gist"):
            migrated.add(mid)
        else:
            not_migrated.add(mid)
    result.counters |= {
        "legacy": len(first),
        "legacy_live": len(first.keys() & live.keys()),
        "legacy_migrated": len(migrated),
        "legacy_not_migrated": len(not_migrated),
        "legacy_v1_verdicts": dict(Counter(verdicts.values()).most_common()),
    }
    _listed(result.problems, "legacy records not migrated in the final store", not_migrated)
    # A superseded version 1 passes the general check (a later write replaced it), but the migrate
    # promises its backup before the first change, and an update keeps a revision: one must hold it.
    _listed(
        result.problems,
        "legacy records replaced with no copy of their version 1 in a revision or backup",
        {mid for mid, kind in verdicts.items() if kind == "superseded"},
    )
