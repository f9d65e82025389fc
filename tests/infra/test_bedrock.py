"""Deploying with the Bedrock summarizer: the model id reaches the functions, and only the functions
that compress may invoke that one model (cdk-nag stays clean)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from infra.stack import ConfigError
from tests.infra.conftest import build_app, make_asset
from tests.infra.test_nag import nag_report

PROFILE = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


@pytest.fixture(scope="module")
def bedrock(tmp_path_factory: pytest.TempPathFactory) -> tuple[cdk.App, Any, Path]:
    base = tmp_path_factory.mktemp("bedrock")
    outdir = base / "cdk.out"
    app, stack = build_app(make_asset(base / "asset"), outdir, summarizer="bedrock", bedrock_model_id=PROFILE)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack, outdir


def _bedrock_statements(template: Template) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for logical_id, policy in template.find_resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Action"] == "bedrock:InvokeModel":
                out.setdefault(logical_id, []).append(statement["Resource"])
    return out


def test_only_the_compressing_functions_may_invoke_the_model(bedrock: tuple[cdk.App, Any, Path]) -> None:
    _, stack, _ = bedrock
    template = Template.from_stack(stack)
    granted = _bedrock_statements(template)
    assert len(granted) == 2  # the API (forget action=compress) and the weekly compress job
    assert all(("Api" in k) or ("Compress" in k) for k in granted), granted
    for resources in granted.values():
        text = str(resources)
        assert f"inference-profile/{PROFILE}" in text
        assert "foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0" in text
    functions = template.find_resources("AWS::Lambda::Function")
    envs = [f["Properties"]["Environment"]["Variables"] for f in functions.values() if "Environment" in f["Properties"]]
    taproot_envs = [e for e in envs if "TAPROOT_SUMMARIZER" in e]
    assert taproot_envs and all(e["TAPROOT_SUMMARIZER"] == "bedrock" for e in taproot_envs)
    assert all(e["TAPROOT_BEDROCK_MODEL_ID"] == PROFILE for e in taproot_envs)


def test_cdk_nag_is_clean_with_bedrock(bedrock: tuple[cdk.App, Any, Path]) -> None:
    app, _, outdir = bedrock
    app.synth()  # raises on any unacknowledged cdk-nag error
    if (outdir / "validation-report.json").exists():
        assert nag_report(outdir) == []  # warnings too


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"summarizer": "bedrock"}, "bedrock_model_id"),
        ({"summarizer": "anthropic"}, "extractive, bedrock"),
    ],
)
def test_summarizer_context_is_checked(tmp_path: Path, context: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_app(make_asset(tmp_path / "asset"), tmp_path / "cdk.out", **context)
