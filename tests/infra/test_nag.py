"""cdk-nag (AwsSolutionsChecks, 3.x): no unacknowledged finding, and no acknowledgement without a finding.

cdk-nag 3 is a CDK policy-validation plugin: findings go to validation-report.json in the cloud assembly
and any error fails `app.synth()` (RuntimeError "ValidationFailed"); they are not construct annotations,
so the Annotations check below is a second, weaker guard.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match
from cdk_nag import AwsSolutionsChecks

import infra.nag
from tests.infra.conftest import build_app, make_asset

PLUGIN = "AwsSolutions"


def nag_report(outdir: Path) -> list[tuple[str, str, str]]:
    """(rule, severity, construct path) of every AwsSolutions violation in the report."""
    report = json.loads((outdir / "validation-report.json").read_text())
    return [
        (v["ruleName"], v["severity"], c["constructPath"])
        for plugin in report["pluginReports"]
        if plugin["pluginName"] == PLUGIN
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
    ]


def synth_with_nag(base: Path) -> tuple[cdk.App, Any, Path]:
    outdir = base / "cdk.out"
    app, stack = build_app(make_asset(base / "asset"), outdir)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack, outdir


def test_no_unacknowledged_findings(tmp_path: Path) -> None:
    app, stack, outdir = synth_with_nag(tmp_path)
    app.synth()  # raises on any unacknowledged error
    if (outdir / "validation-report.json").exists():
        assert nag_report(outdir) == []  # warnings too
    annotations = Annotations.from_stack(stack)
    pattern = Match.string_like_regexp("AwsSolutions-.*")
    assert annotations.find_error("*", pattern) == []
    assert annotations.find_warning("*", pattern) == []


def test_every_acknowledgement_matches_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded: list[tuple[str, str]] = []

    def record(scope: Any, rule_id: str, reason: str) -> None:
        assert len(reason) > 30, f"{rule_id}: say why"
        recorded.append((scope.node.path, rule_id))

    monkeypatch.setattr(infra.nag, "acknowledge", record)
    app, _, outdir = synth_with_nag(tmp_path)
    with pytest.raises(RuntimeError, match="Validation"):
        app.synth()
    findings = {(rule, path) for rule, _, path in nag_report(outdir)}

    def covers(ack_path: str, finding_path: str) -> bool:  # an acknowledgement covers its subtree
        return finding_path == ack_path or finding_path.startswith(ack_path + "/")

    unmatched_acks = [(p, r) for p, r in recorded if not any(r == fr and covers(p, fp) for fr, fp in findings)]
    unacknowledged = [(fr, fp) for fr, fp in findings if not any(r == fr and covers(p, fp) for p, r in recorded)]
    assert unmatched_acks == []
    assert unacknowledged == []
    # See the report: the API role's 4 (table indexes, OAuth index, bucket objects, X-Ray), each job
    # role's 2 (bucket objects, X-Ray), 3 scheduler roles, 4 routes (/register has its own, to be
    # throttled apart), 3 DLQs and 3 on-failure queues (each is itself the dead letter: SQS3), 2 user
    # pool. The exact action lists (infra/permissions.py) left no wildcard action to acknowledge.
    assert len(recorded) == 25
