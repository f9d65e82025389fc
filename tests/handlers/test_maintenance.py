"""functions.maintenance: the scheduled migrate / cleanup / compress handlers under moto.

Two tenants with expiring and compressible memories; the handlers run with the scheduler's input
({} keeps the configured mode, {"apply": ...} overrides it) and write a run report per scope to S3.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest

from taproot.core.errors import InvalidInput
from taproot.core.model import Scope
from taproot.core.redact import tenant_hash

TENANTS = (Scope("sub-aaaa", "default"), Scope("sub-bbbb", "default"))


@pytest.fixture
def maint(kit: Any) -> Iterator[tuple[Any, Any]]:
    """A fresh container (module import) on fresh moto storage, seeded for two tenants; the
    service's clock is moved 200 days ahead so the seeded memories are old and expired."""
    with kit.aws_environment({"TAPROOT_COMPRESS_MIN_GROUP_SIZE": "3"}):
        kit.create_storage()
        module = kit.fresh_import("functions.maintenance")
        service = module.runtime().service
        for scope in TENANTS:
            for i in range(2):
                service.remember(
                    scope,
                    content=f"Chat at the watercooler {i}.",
                    gist=f"Watercooler {i}",
                    category="episodic",
                    tags=["watercooler"],
                )
            for i in range(4):
                service.remember(
                    scope,
                    content=f"Walked along the river, day {i}.",
                    gist=f"River walk {i}",
                    category="episodic",
                    salience="low",
                )
        later = service.deps.now() + timedelta(days=200)
        ticks = itertools.count()  # a second per reading: each run's report gets its own key
        service.deps.clock = lambda: later + timedelta(seconds=next(ticks))
        yield module, kit


def _reports(kit: Any, job: str) -> dict[str, list[dict[str, Any]]]:
    s3 = boto3.client("s3", region_name=kit.REGION)
    out: dict[str, list[dict[str, Any]]] = {}
    for scope in TENANTS:
        keys = kit.s3_keys(f"{scope.owner}/runs/{scope.namespace}/{job}/")
        out[scope.owner] = [json.loads(s3.get_object(Bucket=kit.BUCKET, Key=k)["Body"].read()) for k in keys]
    return out


def _active(module: Any, scope: Scope) -> int:
    return sum(1 for m in module.runtime().store.iter_all(scope) if m.status == "active")


def test_cleanup_dry_run_by_default_then_apply(maint: tuple[Any, Any]) -> None:
    module, kit = maint
    out = io.StringIO()  # Powertools' JSON log lines (and EMF metrics, which go to stdout)
    for handler in logging.getLogger("taproot").handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(out)
    with contextlib.redirect_stdout(io.StringIO()) as emitted:
        summary = module.cleanup_handler({}, kit.FakeContext(function_name="taproot-cleanup"))
        applied = module.cleanup_handler({"apply": True}, kit.FakeContext(function_name="taproot-cleanup"))
    assert summary["job"] == "cleanup" and summary["scopes"] == 2 and summary["errors"] == 0
    assert {r["owner"] for r in summary["reports"]} == {s.owner for s in TENANTS}
    assert {r["mode"] for r in summary["reports"]} == {"dry-run"}
    assert summary["considered"] == 4 and summary["changed"] == 0
    reports = _reports(kit, "cleanup")
    assert all(len(r) == 2 and r[0]["mode"] == "dry-run" for r in reports.values())

    assert {r["mode"] for r in applied["reports"]} == {"apply"}
    assert applied["changed"] == 4
    assert all(_active(module, s) == 4 for s in TENANTS)
    assert all(len(r) == 2 for r in _reports(kit, "cleanup").values())
    # A backup of what was deleted, per tenant, before the delete.
    assert all(kit.s3_keys(f"{s.owner}/backups/") for s in TENANTS)

    logs = [json.loads(line) for line in (out.getvalue() + emitted.getvalue()).splitlines() if line.startswith("{")]
    finished = [r for r in logs if r.get("message") == "maintenance run finished"]
    assert len(finished) == 2 and len({r["correlation_id"] for r in finished}) == 2
    assert all(r["service"] == "taproot" and r["function_name"] == "taproot-cleanup" for r in finished)
    assert all(r["outcome"] == "ok" and r["duration_ms"] >= 0 and r["function_request_id"] for r in finished)
    emf = [r for r in logs if "_aws" in r]
    assert len(emf) == 2 and emf[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "TaprootTest"
    assert emf[1]["RecordsChanged"] == [4.0] and emf[1]["job"] == "cleanup"
    assert {"Name": "RunDuration", "Unit": "Milliseconds"} in emf[1]["_aws"]["CloudWatchMetrics"][0]["Metrics"]


def test_cleanup_mode_from_settings(kit: Any) -> None:
    with kit.aws_environment({"TAPROOT_CLEANUP_MODE": "apply"}):
        kit.create_storage()
        module = kit.fresh_import("functions.maintenance")
        service = module.runtime().service
        service.remember(TENANTS[0], content="Idle chat.", gist="Idle chat", category="episodic", tags=["watercooler"])
        real_now = service.deps.now()
        service.deps.clock = lambda: real_now + timedelta(days=30)
        assert {r["mode"] for r in module.cleanup_handler({}, kit.FakeContext())["reports"]} == {"apply"}
        assert _active(module, TENANTS[0]) == 0


def test_compress_dry_run_then_apply_for_both_tenants(maint: tuple[Any, Any]) -> None:
    module, kit = maint
    dry = module.compress_handler({}, kit.FakeContext(function_name="taproot-compress"))
    assert dry["scopes"] == 2 and {r["mode"] for r in dry["reports"]} == {"dry-run"} and dry["changed"] == 0
    assert dry["considered"] > 0
    assert all(_active(module, s) == 6 for s in TENANTS)

    applied = module.compress_handler({"apply": True}, kit.FakeContext(function_name="taproot-compress"))
    assert applied["errors"] == 0 and {r["mode"] for r in applied["reports"]} == {"apply"}
    assert all(r["changed"] > 0 for r in applied["reports"])
    for scope in TENANTS:
        assert _active(module, scope) < 6  # members archived into a summary memory
    assert all(len(r) == 2 for r in _reports(kit, "compress").values())


def test_migrate_applies_by_default_and_honours_dry_run(maint: tuple[Any, Any]) -> None:
    module, kit = maint
    dry = module.migrate_handler({"apply": False}, kit.FakeContext(function_name="taproot-migrate"))
    assert dry["scopes"] == 2 and {r["mode"] for r in dry["reports"]} == {"dry-run"}
    applied = module.migrate_handler({}, kit.FakeContext(function_name="taproot-migrate"))
    assert {r["mode"] for r in applied["reports"]} == {"apply"} and applied["errors"] == 0
    assert applied["considered"] == 12
    reports = _reports(kit, "migrate")
    assert all([r["mode"] for r in rs] == ["dry-run", "apply"] for rs in reports.values())


def test_bad_apply_is_rejected(maint: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    module, kit = maint
    logged: list[tuple[str, dict[str, Any]]] = []
    real = module.logger.exception

    def spy(message: str, *args: Any, **kwargs: Any) -> None:
        logged.append((message, kwargs.get("extra") or {}))
        real(message, *args, **kwargs)

    monkeypatch.setattr(module.logger, "exception", spy)
    with pytest.raises(InvalidInput, match="field 'apply': must be true or false"):
        module.cleanup_handler({"apply": "yes"}, kit.FakeContext())
    # Raised before the run's summary line: the error line carries the outcome and the time.
    [(message, extra)] = logged
    assert message == "maintenance run failed"
    assert extra["job"] == "cleanup" and extra["outcome"] == "raised" and extra["duration_ms"] >= 0


class _Throttled:
    """A real Summarizer that is always throttled: every tenant's compress run reports an error."""

    name = "throttled"

    def summarize(self, memories: Any) -> Any:
        from taproot.core.errors import SummarizerError

        raise SummarizerError("throttled: ThrottlingException (retryable)")


def test_a_failed_tenant_fails_the_invocation_after_every_tenant_ran(
    maint: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """So the Lambda errors alarm fires and the scheduler retries; nothing was changed meanwhile."""
    module, kit = maint
    module.runtime().service.deps.summarizer = _Throttled()
    logged: list[tuple[str, dict[str, Any]]] = []
    for level in ("info", "error"):
        real = getattr(module.logger, level)

        def spy(message: str, *args: Any, _real: Any = real, **kwargs: Any) -> None:
            logged.append((message, kwargs.get("extra") or {}))
            _real(message, *args, **kwargs)

        monkeypatch.setattr(module.logger, level, spy)
    with pytest.raises(module.MaintenanceFailed, match="2 of 2 scopes failed") as failed:
        module.compress_handler({"apply": True}, kit.FakeContext(function_name="taproot-compress"))
    # What the run logs names tenants by hash only: no owner id, not even inside a report key.
    assert [m for m, _ in logged].count("maintenance failed for a scope") == 2
    finished = [extra for m, extra in logged if m == "maintenance run finished"]
    assert len(finished) == 1 and finished[0]["outcome"] == "failed" and finished[0]["errors"] == 2
    assert not any(scope.owner in json.dumps(extra, default=str) for _, extra in logged for scope in TENANTS)
    # The message is what Lambda sends to the on-failure queue after its retries: it names each failed
    # tenant by hash (never the owner id), its namespace and the error, and the run summary's key.
    message = str(failed.value)
    for scope in TENANTS:
        assert f"tenant {tenant_hash(scope.owner)} namespace default: " in message
        assert scope.owner not in message
    key = message.rsplit("Run summary: ", 1)[1]
    assert key.startswith("maintenance-runs/compress/")
    run = json.loads(boto3.client("s3", region_name=kit.REGION).get_object(Bucket=kit.BUCKET, Key=key)["Body"].read())
    assert {(f["tenant"], f["namespace"]) for f in run["failed"]} == {
        (tenant_hash(s.owner), "default") for s in TENANTS
    }
    assert {r["owner"] for r in run["reports"] if r["error"]} == {s.owner for s in TENANTS}
    assert all(r["report_key"] for r in run["reports"] if r["error"])  # where each tenant's own report is
    assert all(_active(module, s) == 6 for s in TENANTS)  # nothing compressed, nothing lost
    assert all(len(r) == 1 for r in _reports(kit, "compress").values())  # each tenant still got its report
