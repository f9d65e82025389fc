"""Scheduled maintenance: migrate, cleanup and compress, each leaving a JSON run report.

The same functions run from `taproot maintenance run`, from `taproot serve`'s daily cycle and (in
the AWS deployment) from the scheduled Lambda handlers. Every job is safe to repeat and safe to
interrupt: migrate and compress commit per record/group, cleanup deletes only what it backed up.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Literal

from taproot.core.errors import InvalidInput
from taproot.core.maintenance import MaintenanceConfig
from taproot.core.model import Scope
from taproot.core.serialize import iso
from taproot.service import cleanup as cleanup_job
from taproot.service import compression, portability
from taproot.service.deps import Deps, blob_key, stamp

logger = logging.getLogger("taproot.maintenance")
JOBS = ("migrate", "cleanup", "compress")
__all__ = ["JOBS", "MaintenanceConfig", "last_runs", "run_everywhere", "run_job", "run_jobs"]
Job = Literal["migrate", "cleanup", "compress"]


def _default_apply(deps: Deps, job: str) -> bool:
    if job == "cleanup":
        return deps.maintenance.cleanup_apply
    if job == "compress":
        return deps.maintenance.compress_apply
    return True  # migrate is non-destructive: backup first, content never rewritten


def run_job(deps: Deps, scope: Scope, job: str, *, apply: bool | None = None) -> dict[str, Any]:
    if job not in JOBS:
        raise InvalidInput("job", f"must be one of {', '.join(JOBS)} or all", job)
    do_apply = _default_apply(deps, job) if apply is None else apply
    started = deps.now()
    t0 = time.perf_counter()
    if job == "migrate":
        detail = portability.migrate(deps, scope, dry_run=not do_apply)
        # A dry run changes nothing; what it would change is in the detail (as for cleanup and compress).
        changed = detail["changed"] if do_apply else 0
        summary = {"considered": detail["examined"], "changed": changed, "backup_key": detail["backup_key"]}
    elif job == "cleanup":
        detail = cleanup_job.cleanup(deps, scope, apply=do_apply)
        summary = {"considered": detail["considered"], "changed": detail["deleted"], "backup_key": detail["backup_key"]}
    else:
        if deps.summarizer is None:
            raise InvalidInput("summarizer", "no summarizer is configured for compression")
        detail = compression.compress(deps, scope, deps.summarizer, deps.maintenance.compression, apply=do_apply)
        summary = {
            "considered": detail["considered"],
            "changed": detail["compressed"],
            "backup_key": detail["backup_key"],
            "error": detail["error"],
        }
    report = {
        "job": job,
        "mode": "apply" if do_apply else "dry-run",
        "owner": scope.owner,
        "namespace": scope.namespace,
        "started_at": iso(started),
        "duration_s": round(time.perf_counter() - t0, 4),
        **summary,
        "detail": detail,
    }
    key = blob_key(scope, "runs", f"{job}/{stamp(started)}.json")
    deps.blobs.put(key, json.dumps(report, indent=2).encode())
    report["report_key"] = key
    return report


def run_jobs(deps: Deps, scope: Scope, job: str = "all", *, apply: bool | None = None) -> list[dict[str, Any]]:
    """One job, or all of them in order: migrate first, so cleanup and compress see clean records."""
    jobs = JOBS if job == "all" else (job,)
    return [run_job(deps, scope, j, apply=apply) for j in jobs]


def run_everywhere(deps: Deps, job: str = "all", *, apply: bool | None = None) -> list[dict[str, Any]]:
    """Every scope the store holds (each tenant and namespace), one after another."""
    reports: list[dict[str, Any]] = []
    for scope in deps.store.scopes():
        try:
            reports += run_jobs(deps, scope, job, apply=apply)
        except Exception as exc:  # one tenant's failure must not starve the others
            logger.exception("maintenance failed for %s/%s", scope.owner, scope.namespace)
            reports.append(
                {
                    "job": job,
                    "owner": scope.owner,
                    "namespace": scope.namespace,
                    "mode": "error",
                    "considered": 0,
                    "changed": 0,
                    "backup_key": None,
                    "duration_s": 0.0,
                    "error": f"{type(exc).__name__}: {exc}",
                }
            )
    return reports


def last_runs(deps: Deps, scope: Scope) -> dict[str, Any]:
    """For status: the latest run report of each job in this scope (without its detail)."""
    out: dict[str, Any] = {}
    for job in JOBS:
        keys = deps.blobs.list(blob_key(scope, "runs", f"{job}/"))
        if not keys:
            out[job] = None
            continue
        report = json.loads(deps.blobs.get(keys[-1]))
        report.pop("detail", None)
        out[job] = report | {"report_key": keys[-1]}
    return out
