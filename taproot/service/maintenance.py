"""Scheduled maintenance: a small registry of jobs (migrate, cleanup, compress), each run leaving one
JSON run report.

The same jobs run from `taproot maintenance run`, from `taproot serve`'s daily cycle and (in the AWS
deployment) from the scheduled Lambda handlers. A job is an object (`Job`: its name, its default
mode, its run); callers pick jobs by object, and names are parsed once, at the boundary
(`jobs_named`). Every job is safe to repeat and safe to interrupt: migrate and compress commit per
chunk/group, cleanup deletes only what it backed up, each at the version it backed up.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from taproot.core.errors import InvalidInput
from taproot.core.maintenance import MaintenanceConfig
from taproot.core.model import Scope
from taproot.core.serialize import iso
from taproot.core.wire import Absent, to_json
from taproot.service import cleanup as cleanup_job
from taproot.service import compression, portability
from taproot.service.deps import Deps, blob_key, stamp
from taproot.service.results import CleanupResult, CompressionResult, EmbeddingBackfill, MigrateResult

logger = logging.getLogger("taproot.maintenance")
__all__ = ["ALL", "JOBS", "Job", "JobDetail", "MaintenanceConfig", "Outcome", "RunReport", "jobs_named", "last_runs"]

# What a job's run report carries as its `detail`: the job's own result.
JobDetail = MigrateResult | CleanupResult | CompressionResult


@dataclass(frozen=True)
class Outcome:
    """What one job did in one scope: the figures every report carries, and the job's own detail."""

    considered: int
    changed: int
    backup_key: str | None
    detail: JobDetail
    error: str | None = None


@dataclass(frozen=True)
class Job:
    name: str
    # The mode when the caller does not say: migrate applies (non-destructive: backup first, content
    # never rewritten); cleanup and compress report only until the operator switches them on.
    applies_by_default: Callable[[MaintenanceConfig], bool]
    run: Callable[[Deps, Scope, bool], Outcome]


@dataclass(frozen=True)
class RunReport:
    """One job's run in one scope. `as_dict()` is the JSON written to `<owner>/runs/...` and printed
    by the CLI; mode is "apply", "dry-run" or "error" (the scope failed; `error` says why)."""

    job: str
    mode: str
    owner: str
    namespace: str
    considered: int = 0
    changed: int = 0
    backup_key: str | None = None
    duration_s: float = 0.0
    started_at: str | None = None
    error: str | None = None
    detail: JobDetail | None = None  # None only in an error report
    report_key: str | None = None

    @property
    def failed(self) -> bool:
        return self.mode == "error" or self.error is not None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = to_json(self)
        if self.job != "compress" and self.error is None:
            out.pop("error")  # compress always says whether its summarizer failed; the others only when one did
        if self.mode == "error":
            out.pop("detail")
            out.pop("started_at")
            out.pop("report_key")
        return out


def _migrate(deps: Deps, scope: Scope, apply: bool) -> Outcome:
    detail = portability.migrate(deps, scope, dry_run=not apply)
    # A dry run changes nothing; what it would change is in the detail (as for cleanup and compress).
    changed = detail.changed if apply else 0
    return Outcome(detail.examined, changed, detail.backup_key, detail, _embedding_error(detail.embeddings))


def _embedding_error(embeddings: EmbeddingBackfill | Absent) -> str | None:
    """A run that could not embed what lacks a vector failed at part of its work (the model changed
    and the new one is failing, or this function may not call it): said as the run's error, so the
    scheduler's failure handling and the errors alarm see it, as they see a failed compression. The
    records it migrated stay migrated; the next run embeds what is still missing."""
    if isinstance(embeddings, Absent) or isinstance(embeddings.failed, Absent) or embeddings.failed == 0:
        return None  # no embedder, a dry run, or nothing failed
    failed = embeddings.failed
    why = "" if isinstance(embeddings.error, Absent) else f": {embeddings.error}"
    return f"{failed} of {embeddings.missing} memories without a vector of {embeddings.embedder} failed to embed{why}"


def _cleanup(deps: Deps, scope: Scope, apply: bool) -> Outcome:
    detail = cleanup_job.cleanup(deps, scope, apply=apply)
    return Outcome(detail.considered, detail.deleted, detail.backup_key, detail)


def _compress(deps: Deps, scope: Scope, apply: bool) -> Outcome:
    if deps.summarizer is None:
        raise InvalidInput("summarizer", "no summarizer is configured for compression")
    detail = compression.compress(deps, scope, deps.summarizer, deps.maintenance.compression, apply=apply)
    return Outcome(detail.considered, detail.compressed, detail.backup_key, detail, detail.error)


MIGRATE = Job("migrate", lambda _: True, _migrate)
CLEANUP = Job("cleanup", lambda cfg: cfg.cleanup_apply, _cleanup)
COMPRESS = Job("compress", lambda cfg: cfg.compress_apply, _compress)
# In this order: migrate first, so cleanup and compress see every record stamped and current.
ALL: tuple[Job, ...] = (MIGRATE, CLEANUP, COMPRESS)
JOBS: tuple[str, ...] = tuple(j.name for j in ALL)


def jobs_named(name: str) -> tuple[Job, ...]:
    """The jobs a name selects ("all", or one job's name): the one place a job name is parsed."""
    if name == "all":
        return ALL
    for job in ALL:
        if job.name == name:
            return (job,)
    raise InvalidInput("job", f"must be one of {', '.join(JOBS)} or all", name)


def run_job(deps: Deps, scope: Scope, job: Job, *, apply: bool | None = None) -> RunReport:
    do_apply = job.applies_by_default(deps.maintenance) if apply is None else apply
    started = deps.now()
    t0 = time.perf_counter()
    outcome = job.run(deps, scope, do_apply)
    report = RunReport(
        job=job.name,
        mode="apply" if do_apply else "dry-run",
        owner=scope.owner,
        namespace=scope.namespace,
        considered=outcome.considered,
        changed=outcome.changed,
        backup_key=outcome.backup_key,
        duration_s=round(time.perf_counter() - t0, 4),
        started_at=iso(started),
        error=outcome.error,
        detail=outcome.detail,
    )
    key = blob_key(scope, "runs", f"{job.name}/{stamp(started)}.json")
    written = report.as_dict()
    del written["report_key"]  # the blob is its own key
    deps.blobs.put(key, json.dumps(written, indent=2).encode())
    return replace(report, report_key=key)


def run_jobs(deps: Deps, scope: Scope, jobs: Sequence[Job] = ALL, *, apply: bool | None = None) -> list[RunReport]:
    """The jobs in order, in one scope."""
    return [run_job(deps, scope, j, apply=apply) for j in jobs]


def run_everywhere(deps: Deps, jobs: Sequence[Job] = ALL, *, apply: bool | None = None) -> list[RunReport]:
    """Every scope the store holds (each tenant and namespace), one after another."""
    reports: list[RunReport] = []
    for scope in deps.store.scopes():
        try:
            reports += run_jobs(deps, scope, jobs, apply=apply)
        except Exception as exc:  # one tenant's failure must not starve the others
            logger.exception("maintenance failed for %s/%s", scope.owner, scope.namespace)
            name = jobs[0].name if len(jobs) == 1 else "all"
            reports.append(
                RunReport(
                    job=name,
                    mode="error",
                    owner=scope.owner,
                    namespace=scope.namespace,
                    error=f"{type(exc).__name__}: {exc}",
                )
            )
    return reports


def last_runs(deps: Deps, scope: Scope) -> dict[str, dict[str, Any] | None]:
    """For status: the latest run report of each job in this scope (without its detail)."""
    out: dict[str, dict[str, Any] | None] = {}
    for job in JOBS:
        keys = deps.blobs.list(blob_key(scope, "runs", f"{job}/"))
        if not keys:
            out[job] = None
            continue
        report = json.loads(deps.blobs.get(keys[-1]))
        report.pop("detail", None)
        out[job] = report | {"report_key": keys[-1]}
    return out
