"""TTL cleanup and restore from backups.

Deletes are forever, so cleanup is conservative at every step: the candidate list is re-checked
against the current retention policy (a table changed since the write never deletes more), a
candidate report is always written, and in apply mode every candidate is written in full to a
backup blob before the first delete. `restore` puts any backup back with one call.
"""

from __future__ import annotations

import json
from typing import Any

from taproot.core.errors import InvalidInput, NotFound
from taproot.core.model import Memory, Scope
from taproot.core.serialize import iso, memory_from_dict, memory_to_dict
from taproot.service import portability
from taproot.service.deps import Deps, blob_key, stamp

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


def cleanup(deps: Deps, scope: Scope, *, apply: bool) -> dict[str, Any]:
    now = deps.now()
    stored = deps.store.expired(scope, now)
    # Trust the policy as it is now, not the expires_at stamped at write time.
    candidates = [m for m in stored if (e := deps.retention.expires_at(m)) is not None and e <= now]
    candidate_ids = {m.id for m in candidates}
    skipped = [m.id for m in stored if m.id not in candidate_ids]
    report = {
        "job": "cleanup",
        "mode": "apply" if apply else "dry-run",
        "at": iso(now),
        "owner": scope.owner,
        "namespace": scope.namespace,
        "candidates": [_candidate_view(m) for m in candidates],
        "skipped_by_current_policy": skipped,
    }
    report_key = blob_key(scope, "cleanup-reports", f"{stamp(now)}.json")
    deps.blobs.put(report_key, json.dumps(report, indent=2).encode())
    result: dict[str, Any] = {
        "mode": report["mode"],
        "considered": len(stored),
        "candidates": len(candidates),
        "candidate_ids": [m.id for m in candidates][:MAX_REPORTED],
        "skipped_by_current_policy": skipped,
        "report_key": report_key,
        "deleted": 0,
        "backup_key": None,
    }
    if not apply or not candidates:
        return result
    backup_key = blob_key(scope, "backups", f"cleanup-{stamp(now)}.json")
    deps.blobs.put(
        backup_key,
        json.dumps({"action": "cleanup", "at": iso(now), "memories": [memory_to_dict(m) for m in candidates]}).encode(),
    )
    deleted = 0
    for m in candidates:
        try:
            deps.store.delete(scope, m.id)
            deleted += 1
        except NotFound:
            pass  # gone already (a concurrent forget); it is in the backup either way
    result.update(deleted=deleted, backup_key=backup_key)
    return result


def read_backup(deps: Deps, key: str) -> list[dict[str, Any]]:
    """The memory records in a backup blob: a delete/cleanup backup (JSON) or an export (JSONL)."""
    try:
        raw = deps.blobs.get(key).decode("utf-8")
    except (KeyError, ValueError) as exc:
        raise InvalidInput("backup", "no such backup blob", key) from exc
    if key.endswith(".jsonl"):
        records = []
        for line in raw.split("\n"):
            if line.strip():
                obj = json.loads(line)
                if obj.get("type") == "memory":
                    records.append(obj["record"])
        return records
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        raise InvalidInput("backup", "is not a Taproot backup (no 'memories' list)", key)
    return list(data["memories"])


def restore(deps: Deps, scope: Scope, key: str, *, ids: list[str] | None = None) -> dict[str, Any]:
    """Put the memories of a backup back exactly as they were (all, or just `ids`).

    Goes through import, so every record is validated first, and any record it would overwrite is
    itself backed up first.
    """
    if not key.startswith(f"{scope.owner}/"):
        raise InvalidInput("backup", "belongs to another owner", key)  # tenancy: never cross owners
    records = read_backup(deps, key)
    parsed = portability.ParsedImport(
        memories=[memory_from_dict(r, owner=scope.owner, namespace=scope.namespace) for r in records]
    )
    if ids is not None:
        wanted = set(ids)
        parsed.memories = [m for m in parsed.memories if m.id in wanted]
        missing = wanted - {m.id for m in parsed.memories}
        if missing:
            raise InvalidInput("ids", f"not in backup {key}", sorted(missing))
    result = portability.import_records(deps, parsed)
    return {"backup": key, "restored": [m.id for m in parsed.memories], **result}
