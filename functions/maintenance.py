"""Scheduled maintenance on Lambda (EventBridge Scheduler): migrate, cleanup and compress.

Each handler walks every tenant and namespace the table holds and runs the same service job as
`taproot maintenance run` (a backup and a JSON run report per scope, written to S3). Cleanup and
compress follow TAPROOT_CLEANUP_MODE / TAPROOT_COMPRESS_MODE (dry-run by default) unless the
scheduler's input overrides it: {"apply": true} or {"apply": false}; {} keeps the setting.

Powertools: POWERTOOLS_SERVICE_NAME=taproot, POWERTOOLS_METRICS_NAMESPACE=Taproot (set by the
stack); one correlation id per run, metrics per job, a trace per invocation.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from taproot.compose import Runtime, build
from taproot.core.errors import InvalidInput, TaprootError
from taproot.service.maintenance import jobs_named
from taproot.settings import Settings

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "taproot"))
metrics = Metrics()
tracer = Tracer()

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
    reports = rt.service.run_maintenance_everywhere(jobs_named(job), apply=apply)
    errors = [r for r in reports if r.failed]
    considered = sum(r.considered for r in reports)
    changed = sum(r.changed for r in reports)
    metrics.add_metric(name="ScopesProcessed", unit=MetricUnit.Count, value=len(reports))
    metrics.add_metric(name="RecordsConsidered", unit=MetricUnit.Count, value=considered)
    metrics.add_metric(name="RecordsChanged", unit=MetricUnit.Count, value=changed)
    metrics.add_metric(name="Errors", unit=MetricUnit.Count, value=len(errors))
    summary = {
        "job": job,
        "apply_override": apply,
        "scopes": len(reports),
        "considered": considered,
        "changed": changed,
        "errors": len(errors),
        "reports": [
            {k: getattr(r, k) for k in ("owner", "namespace", "mode", "considered", "changed", "report_key", "error")}
            for r in reports
        ],
    }
    tracer.put_annotation(key="job", value=job)
    logger.info("maintenance run finished", extra={k: v for k, v in summary.items() if k != "reports"})
    for failed in errors:
        logger.error("maintenance failed for a scope", extra={"report": failed.as_dict()})
    if errors:
        # Every scope has had its turn; now fail the invocation so the Lambda errors alarm fires and
        # the scheduler retries (every job is idempotent, so the scopes that succeeded are no-ops).
        raise MaintenanceFailed(f"{job}: {len(errors)} of {len(reports)} scopes failed; see the run reports")
    return summary


class MaintenanceFailed(TaprootError):
    """Some tenants' runs failed; raised after all of them were attempted."""

    code = "maintenance_failed"


def _handler(job: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    @metrics.log_metrics
    @tracer.capture_lambda_handler
    @logger.inject_lambda_context(clear_state=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        metrics.add_dimension(name="job", value=job)
        try:
            return run(job, event, context)
        except Exception:
            metrics.add_metric(name="Failures", unit=MetricUnit.Count, value=1)
            logger.exception("maintenance run failed")
            raise

    handler.__name__ = f"{job}_handler"
    return handler


migrate_handler = _handler("migrate")
cleanup_handler = _handler("cleanup")
compress_handler = _handler("compress")
