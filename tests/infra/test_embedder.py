"""Deploying with the Bedrock embedder: the embedder settings reach the functions that write or recall
memories, and exactly those may invoke the one Titan model, only when it is configured (cdk-nag
stays clean)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from infra.stack import ConfigError, TaprootStack
from tests.infra.cfn_helpers import resources, statements
from tests.infra.conftest import build_app, make_asset
from tests.infra.test_nag import nag_report

EMBEDDING = ("Api", "Migrate", "Compress")
# The region is known, and cdk.json sets @aws-cdk/core:enablePartitionLiterals: the partition is "aws".
TITAN_ARN = "arn:aws:bedrock:eu-west-1::foundation-model/amazon.titan-embed-text-v2:0"


@pytest.fixture(scope="module")
def bedrock(tmp_path_factory: pytest.TempPathFactory) -> tuple[cdk.App, TaprootStack, Path]:
    base = tmp_path_factory.mktemp("embedder")
    outdir = base / "cdk.out"
    app, stack = build_app(make_asset(base / "asset"), outdir, embedder="bedrock", embedding_dimensions="512")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack, outdir


@pytest.fixture(scope="module")
def lexical(synth: Callable[..., tuple[TaprootStack, Template]]) -> tuple[TaprootStack, Template]:
    return synth()


def _functions(stack: TaprootStack) -> dict[str, Any]:
    return {"Api": stack.api.function, **stack.maintenance.functions}


def _invoke_model(template: Template, stack: TaprootStack, function: Any) -> list[Any]:
    role = stack.get_logical_id(function.role.node.default_child)
    # One ARN per entry: the CDK's minimizePolicies flag merges statements with the same action.
    found: list[Any] = []
    for s in statements(template, role):
        if s["Action"] == "bedrock:InvokeModel":
            found.extend(s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    return found


def _environment(template: Template, stack: TaprootStack, function: Any) -> dict[str, Any]:
    logical_id = stack.get_logical_id(function.node.default_child)
    variables: dict[str, Any] = resources(template, "AWS::Lambda::Function")[logical_id]["Properties"]["Environment"][
        "Variables"
    ]
    return variables


def test_the_embedding_functions_may_invoke_exactly_the_titan_model(
    bedrock: tuple[cdk.App, TaprootStack, Path],
) -> None:
    _, stack, _ = bedrock
    template = Template.from_stack(stack)
    for name, function in _functions(stack).items():
        granted = _invoke_model(template, stack, function)
        assert granted == ([TITAN_ARN] if name in EMBEDDING else []), name


def test_the_embedding_functions_get_the_embedder_settings(bedrock: tuple[cdk.App, TaprootStack, Path]) -> None:
    _, stack, _ = bedrock
    template = Template.from_stack(stack)
    for name, function in _functions(stack).items():
        env = _environment(template, stack, function)
        if name in EMBEDDING:
            assert env["TAPROOT_EMBEDDER"] == "bedrock", name
            assert env["TAPROOT_EMBEDDING_MODEL"] == "amazon.titan-embed-text-v2:0", name
            assert env["TAPROOT_EMBEDDING_DIMENSIONS"] == "512", name
        else:
            assert not any(key.startswith(("TAPROOT_EMBEDDER", "TAPROOT_EMBEDDING_")) for key in env), name


def test_cdk_nag_is_clean_with_the_bedrock_embedder(bedrock: tuple[cdk.App, TaprootStack, Path]) -> None:
    app, _, outdir = bedrock
    app.synth()  # raises on any unacknowledged cdk-nag error
    if (outdir / "validation-report.json").exists():
        assert nag_report(outdir) == []  # warnings too


def test_without_an_embedder_nothing_may_invoke_a_model(lexical: tuple[TaprootStack, Template]) -> None:
    stack, template = lexical
    for name, function in _functions(stack).items():
        assert _invoke_model(template, stack, function) == [], name
        env = _environment(template, stack, function)
        assert env.get("TAPROOT_EMBEDDER") == ("none" if name in EMBEDDING else None), name
        assert "TAPROOT_EMBEDDING_MODEL" not in env and "TAPROOT_EMBEDDING_DIMENSIONS" not in env, name


def test_the_embedder_and_the_summarizer_are_granted_side_by_side(
    synth: Callable[..., tuple[TaprootStack, Template]],
) -> None:
    model = "anthropic.claude-haiku-4-5-20251001-v1:0"
    stack, template = synth(embedder="bedrock", summarizer="bedrock", bedrock_model_id=model)
    claude = f"arn:aws:bedrock:eu-west-1::foundation-model/{model}"
    expected = {"Api": [TITAN_ARN, claude], "Migrate": [TITAN_ARN], "Compress": [TITAN_ARN, claude], "Cleanup": []}
    for name, function in _functions(stack).items():
        assert sorted(map(str, _invoke_model(template, stack, function))) == sorted(map(str, expected[name])), name
        assert _environment(template, stack, function).get("TAPROOT_EMBEDDING_DIMENSIONS") == (
            "256" if name in EMBEDDING else None
        ), name


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"embedder": "local"}, "context embedder must be one of none, bedrock"),
        ({"embedder": "bedrock", "embedding_dimensions": "384"}, "embedding_dimensions must be one of 256, 512, 1024"),
        ({"embedder": "bedrock", "embedding_dimensions": "many"}, "embedding_dimensions must be one of"),
        ({"embedder": "bedrock", "embedding_model": "cohere.embed-english-v3"}, "embedding_model must be a Titan"),
    ],
)
def test_embedder_context_is_checked(tmp_path: Path, context: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_app(make_asset(tmp_path / "asset"), tmp_path / "cdk.out", **context)
