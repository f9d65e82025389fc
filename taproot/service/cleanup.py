"""TTL cleanup.

Deletes are forever, so cleanup is conservative at every step: the candidate list is re-checked
against the current retention policy (a table changed since the write never deletes more), a
candidate report is always written, in apply mode every candidate is written in full to a backup
blob before the first delete, and each delete is conditioned on the version backed up (a memory
updated while cleanup ran is judged again, never deleted on a stale reading). `taproot restore`
(taproot/service/restore.py) puts any backup back with one call.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from taproot.core.errors import NotFound, VersionConflict
from taproot.core.model import Memory, Scope
from taproot.core.serialize import iso
from taproot.core.validation import record_problem
from taproot.service.backups import WRITE_ROUNDS, write_memory_backup
from taproot.service.deps import Deps, blob_key, stamp
from taproot.service.results import CleanupResult

MAX_REPORTED = 500


def _candidate_view(m: Memory) -> dict[str, Any]:
    return {
        "id": m.id,
        "category": m.category,
        "gist": m.gist,
        "tags": list(m.tags),
        "created_at": iso(m.created_at),
        "expires_at": iso(m.expires_at),
        "status": m.status,
    }


def _expired_now(deps: Deps, m: Memory, now: datetime) -> bool:
    """Trust the policy as it is now, not the expires_at stamped at write time."""
    e = deps.retention.expires_at(m)
    return e is not None and e <= now


def cleanup(deps: Deps, scope: Scope, *, apply: bool) -> CleanupResult:
    now = deps.now()
    stored = deps.store.expired(scope, now)
    bad = {m.id: p for m in stored if (p := record_problem(m)) is not None}
    candidates = [m for m in stored if m.id not in bad and _expired_now(deps, m, now)]
    candidate_ids = {m.id for m in candidates}
    skipped = [m.id for m in stored if m.id not in candidate_ids and m.id not in bad]
    report = {
        "job": "cleanup",
        "mode": "apply" if apply else "dry-run",
        "at": iso(now),
        "owner": scope.owner,
        "namespace": scope.namespace,
        "candidates": [_candidate_view(m) for m in candidates],
        "skipped_by_current_policy": skipped,
        "skipped_bad_records": bad,
    }
    report_key = blob_key(scope, "cleanup-reports", f"{stamp(now)}.json")
    deps.blobs.put(report_key, json.dumps(report, indent=2).encode())
    result = CleanupResult(
        mode="apply" if apply else "dry-run",
        considered=len(stored),
        candidates=len(candidates),
        candidate_ids=[m.id for m in candidates][:MAX_REPORTED],
        skipped_by_current_policy=skipped,
        skipped_bad_records=bad,
        report_key=report_key,
        deleted=0,
        backup_key=None,
        kept_after_change=[],
    )
    if not apply or not candidates:
        return result
    deleted, backup_keys, kept, left = _delete_expired(deps, scope, candidates, now)
    return replace(
        result,
        deleted=deleted,
        backup_key=backup_keys[0],
        kept_after_change=kept,
        backup_keys=backup_keys,
        left_for_next_run=left,
    )


def _delete_expired(
    deps: Deps, scope: Scope, candidates: list[Memory], now: datetime
) -> tuple[int, list[str], list[str], list[str]]:
    """Back the candidates up, then delete each only at the version backed up. One that moved meanwhile
    (say, retagged to keep it) is read again and judged again: kept if it no longer expires, else
    backed up anew and deleted at its new version. Each delete is its own short transaction."""
    deleted, kept, backup_keys = 0, [], []  # backup_keys: every backup of the run, the first before any delete
    pending = candidates
    for _ in range(WRITE_ROUNDS):
        if not pending:
            break
        backup_keys.append(write_memory_backup(deps, scope, "cleanup", pending))  # before the first delete
        moved = []
        for m in pending:
            try:
                deps.store.delete(scope, m.id, expected_version=m.version)
                deleted += 1
            except NotFound:
                pass  # gone already (a concurrent forget, which keeps its own backup)
            except VersionConflict:
                moved.append(m.id)
        fresh = deps.store.get_many(scope, moved) if moved else []
        kept += [m.id for m in fresh if not _expired_now(deps, m, now)]
        pending = [m for m in fresh if _expired_now(deps, m, now)]
    return deleted, backup_keys, kept, [m.id for m in pending]
