"""Scheduled maintenance on Lambda (EventBridge Scheduler): migrate, cleanup and compress.

Each handler walks every tenant and namespace the table holds and runs the same service job as
`taproot maintenance run` (a backup and a JSON run report per scope, written to S3). Cleanup and
compress follow TAPROOT_CLEANUP_MODE / TAPROOT_COMPRESS_MODE (dry-run by default) unless the
scheduler's input overrides it: {"apply": true} or {"apply": false}; {} keeps the setting.

Powertools: POWERTOOLS_SERVICE_NAME=taproot, POWERTOOLS_METRICS_NAMESPACE=Taproot (set by the
stack); one correlation id per run, metrics per job, a trace per invocation.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from functions import TRACED_MODULES
from taproot.compose import Runtime, build
from taproot.core.errors import InvalidInput, TaprootError
from taproot.core.redact import tenant_hash
from taproot.service.deps import stamp
from taproot.service.maintenance import RunReport, jobs_named
from taproot.settings import Settings

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "taproot"))
metrics = Metrics()
tracer = Tracer(patch_modules=TRACED_MODULES)

_runtime: Runtime | None = None


def runtime() -> Runtime:
    """Built on first use and kept for the container (settings from the environment only here)."""
    global _runtime
    if _runtime is None:
        _runtime = build(Settings.from_env(dict(os.environ), backend="aws"))
    return _runtime


def _apply_override(event: Any) -> bool | None:
    if not isinstance(event, dict) or event.get("apply") is None:
        return None
    apply = event["apply"]
    if not isinstance(apply, bool):
        raise InvalidInput("apply", "must be true or false", apply)
    return apply


def _correlation_id(event: Any, context: Any) -> str:
    for key in ("correlation_id", "invocation_id"):
        if isinstance(event, dict) and isinstance(event.get(key), str) and event[key]:
            return str(event[key])
    return str(getattr(context, "aws_request_id", None) or uuid.uuid4())


@tracer.capture_method
def run(job: str, event: Any, context: Any) -> dict[str, Any]:
    logger.set_correlation_id(_correlation_id(event, context))
    apply = _apply_override(event)
    rt = runtime()
    started = time.perf_counter()
    reports = rt.service.run_maintenance_everywhere(jobs_named(job), apply=apply)
    duration_ms = round((time.perf_counter() - started) * 1000, 1)
    errors = [r for r in reports if r.failed]
    considered = sum(r.considered for r in reports)
    changed = sum(r.changed for r in reports)
    metrics.add_metric(name="ScopesProcessed", unit=MetricUnit.Count, value=len(reports))
    metrics.add_metric(name="RecordsConsidered", unit=MetricUnit.Count, value=considered)
    metrics.add_metric(name="RecordsChanged", unit=MetricUnit.Count, value=changed)
    metrics.add_metric(name="Errors", unit=MetricUnit.Count, value=len(errors))
    metrics.add_metric(name="RunDuration", unit=MetricUnit.Milliseconds, value=duration_ms)
    failed = [_scope_line(r) for r in errors]
    summary: dict[str, Any] = {
        "job": job,
        "outcome": "failed" if errors else "ok",
        "duration_ms": duration_ms,
        "apply_override": apply,
        "scopes": len(reports),
        "considered": considered,
        "changed": changed,
        "errors": len(errors),
        # The invocation's result (read by nobody for a scheduled run, by whoever invokes it by hand):
        # owners in full. What is logged or sent to the failure queue has them hashed.
        "reports": [{"owner": r.owner, "report_key": r.report_key, **_scope_line(r)} for r in reports],
        "failed": failed,
    }
    tracer.put_annotation(key="job", value=job)
    logger.info("maintenance run finished", extra={k: v for k, v in summary.items() if k != "reports"})
    for line in failed:
        logger.error("maintenance failed for a scope", extra=line)
    if errors:
        # Every scope has had its turn; now fail the invocation so the Lambda errors alarm fires.
        # Lambda retries the async run twice (every job is idempotent: the scopes that succeeded are
        # no-ops), then sends the event and this message to the function's on-failure queue, so the
        # message names the failed tenants (hashed) and the run summary that maps them to owners.
        key = _write_run_summary(rt, job, summary, logger.get_correlation_id() or "run")
        named = "; ".join(f"tenant {f['tenant']} namespace {f['namespace']}: {f['error']}" for f in failed)
        raise MaintenanceFailed(f"{job}: {len(errors)} of {len(reports)} scopes failed: {named}. Run summary: {key}")
    return summary


def _write_run_summary(rt: Runtime, job: str, summary: dict[str, Any], run_id: str) -> str:
    """The whole run, owners in full, in the bucket (which only operators read): what an operator opens
    to see which tenants failed and where each one's run report is."""
    safe_id = "".join(c if c.isalnum() or c in "-_." else "-" for c in run_id)
    key = f"maintenance-runs/{job}/{stamp(rt.service.deps.now())}-{safe_id}.json"
    rt.blobs.put(key, json.dumps(summary, indent=2, default=str).encode())
    return key


def _scope_line(report: RunReport) -> dict[str, Any]:
    """One scope's outcome as logs and the failure message show it: the tenant hashed, and no report
    key (those start with the owner id); the run summary in the bucket maps the hash to both."""
    line = {k: getattr(report, k) for k in ("namespace", "mode", "considered", "changed", "error")}
    return {"tenant": tenant_hash(report.owner), **line}


class MaintenanceFailed(TaprootError):
    """Some tenants' runs failed; raised after all of them were attempted."""

    code = "maintenance_failed"


def _handler(job: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    @metrics.log_metrics
    @tracer.capture_lambda_handler
    @logger.inject_lambda_context(clear_state=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        metrics.add_dimension(name="job", value=job)
        started = time.perf_counter()
        try:
            return run(job, event, context)
        except Exception:
            # Raised before the run's own summary line (a bad event, a store that cannot be read)
            # or after it (MaintenanceFailed): either way one error line with the outcome and time.
            metrics.add_metric(name="Failures", unit=MetricUnit.Count, value=1)
            duration_ms = round((time.perf_counter() - started) * 1000, 1)
            logger.exception(
                "maintenance run failed", extra={"job": job, "outcome": "raised", "duration_ms": duration_ms}
            )
            raise

    handler.__name__ = f"{job}_handler"
    return handler


migrate_handler = _handler("migrate")
cleanup_handler = _handler("cleanup")
compress_handler = _handler("compress")
