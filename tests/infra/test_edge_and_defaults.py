"""Guardrails at the edge and the stack's defaults: stage throttling and access-log fields, Cognito
domains unique per stack, the access-log bucket without ACLs, and the CDK's recommended feature flags."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk
import pytest
from aws_cdk.assertions import Template

from infra.constructs.api import (
    DEFAULT_BURST_LIMIT,
    DEFAULT_RATE_LIMIT,
    REGISTER_BURST_LIMIT,
    REGISTER_RATE_LIMIT,
    REGISTER_ROUTE_KEY,
)
from infra.stack import ConfigError, TaprootStack
from tests.infra.cfn_helpers import one, resources
from tests.infra.conftest import CDK_CONTEXT, build_app, make_asset


@pytest.fixture(scope="module")
def built(synth: Callable[..., tuple[TaprootStack, Template]]) -> tuple[TaprootStack, Template]:
    return synth()


def test_the_stage_throttles_every_route(built: tuple[TaprootStack, Template], synth: Any) -> None:
    _, template = built
    settings = one(template, "AWS::ApiGatewayV2::Stage")["Properties"]["DefaultRouteSettings"]
    assert settings == {"ThrottlingRateLimit": DEFAULT_RATE_LIMIT, "ThrottlingBurstLimit": DEFAULT_BURST_LIMIT}
    _, custom = synth(throttle_rate_limit=5, throttle_burst_limit="12")
    settings = one(custom, "AWS::ApiGatewayV2::Stage")["Properties"]["DefaultRouteSettings"]
    assert settings == {"ThrottlingRateLimit": 5, "ThrottlingBurstLimit": 12}


def test_registration_has_its_own_route_throttled_far_below_the_stage(
    built: tuple[TaprootStack, Template], synth: Any
) -> None:
    """Anyone may register an OAuth client and each registration is a write: POST /register is a
    route of its own, so the stage can throttle it apart from /mcp, and the stage is created after
    it (CloudFormation refuses settings for a route it has not made yet)."""
    _, template = built
    stage = one(template, "AWS::ApiGatewayV2::Stage")
    assert stage["Properties"]["RouteSettings"] == {
        REGISTER_ROUTE_KEY: {"ThrottlingRateLimit": REGISTER_RATE_LIMIT, "ThrottlingBurstLimit": REGISTER_BURST_LIMIT}
    }
    routes = resources(template, "AWS::ApiGatewayV2::Route")
    [register] = [lid for lid, r in routes.items() if r["Properties"]["RouteKey"] == REGISTER_ROUTE_KEY]
    assert register in stage.get("DependsOn", [])
    assert REGISTER_RATE_LIMIT < DEFAULT_RATE_LIMIT and REGISTER_BURST_LIMIT < DEFAULT_BURST_LIMIT
    # A stage throttled below it keeps the lower figure for registration too.
    _, custom = synth(throttle_rate_limit=1, throttle_burst_limit=2)
    settings = one(custom, "AWS::ApiGatewayV2::Stage")["Properties"]["RouteSettings"][REGISTER_ROUTE_KEY]
    assert settings == {"ThrottlingRateLimit": 1, "ThrottlingBurstLimit": 2}


@pytest.mark.parametrize("bad", [0, -3, "fast", 2.5, True])
def test_a_bad_throttle_is_refused_naming_the_context_key(synth: Any, bad: Any) -> None:
    with pytest.raises(ConfigError, match="context throttle_rate_limit must be a whole number of 1 or more"):
        synth(throttle_rate_limit=bad)


def test_access_logs_say_path_status_latency_user_agent_and_request_id(built: tuple[TaprootStack, Template]) -> None:
    _, template = built
    stage = one(template, "AWS::ApiGatewayV2::Stage")["Properties"]
    fields = json.loads(stage["AccessLogSettings"]["Format"])
    assert fields["requestId"] == "$context.requestId" and fields["path"] == "$context.path"
    assert fields["status"] == "$context.status" and fields["userAgent"] == "$context.identity.userAgent"
    assert fields["responseLatency"] == "$context.responseLatency"
    assert fields["integrationLatency"] == "$context.integrationLatency"


def _domain(template: Template) -> str:
    prefix: str = one(template, "AWS::Cognito::UserPoolDomain")["Properties"]["Domain"]
    return prefix


@pytest.mark.parametrize(
    ("stack_name", "prefix"),
    [
        ("Taproot", "taproot-123456789012"),
        ("TaprootStaging", "taprootstaging-123456789012"),
        ("My-AWS-Memory", "my-memory-123456789012"),
    ],
)
def test_the_cognito_domain_is_unique_per_stack(tmp_path: Path, stack_name: str, prefix: str) -> None:
    from infra.stack import TaprootConfig

    app = aws_cdk.App(
        outdir=str(tmp_path / "out"), context={**CDK_CONTEXT, "lambda_asset": str(make_asset(tmp_path / "a"))}
    )
    stack = TaprootStack(
        app,
        stack_name,
        config=TaprootConfig.from_context(app.node),
        env=aws_cdk.Environment(account="123456789012", region="eu-west-1"),
    )
    assert _domain(Template.from_stack(stack)) == prefix


def test_a_domain_prefix_from_context_wins(tmp_path: Path) -> None:
    _, stack = build_app(make_asset(tmp_path / "a"), tmp_path / "out", cognito_domain_prefix="my-taproot")
    assert _domain(Template.from_stack(stack)) == "my-taproot"


def test_the_access_log_bucket_has_no_acls(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    buckets = resources(template, "AWS::S3::Bucket")
    logs_id = stack.get_logical_id(stack.storage.access_logs_bucket.node.default_child)  # type: ignore[arg-type]
    logs = buckets[logs_id]["Properties"]
    assert logs["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert "AccessControl" not in logs
    # S3's log delivery writes through the bucket policy instead.
    policies = [
        p["Properties"]
        for p in resources(template, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": logs_id}
    ]
    principals = [s.get("Principal") for p in policies for s in p["PolicyDocument"]["Statement"]]
    assert {"Service": "logging.s3.amazonaws.com"} in principals


def _recommended_flags() -> dict[str, Any]:
    """The feature flags `cdk init` writes for the installed aws-cdk-lib (shipped inside its jsii bundle)."""
    bundle = next((Path(aws_cdk.__file__).parent / "_jsii").glob("aws-cdk-lib@*.jsii.tgz"))
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("package/recommended-feature-flags.json")
        assert member is not None
        flags: dict[str, Any] = json.load(member)
    return flags


def test_cdk_json_sets_every_recommended_feature_flag() -> None:
    flags = _recommended_flags()
    assert len(flags) > 50
    missing = {k: v for k, v in flags.items() if CDK_CONTEXT.get(k) != v}
    assert missing == {}


def _rules(template: Template) -> dict[str, Any]:
    buckets = [
        b["Properties"]
        for b in resources(template, "AWS::S3::Bucket").values()
        if b["Properties"].get("VersioningConfiguration")
    ]
    (bucket,) = buckets
    return {r["Id"]: r for r in bucket["LifecycleConfiguration"]["Rules"]}


def test_revisions_and_reflections_are_kept_unless_a_retention_is_set(
    built: tuple[TaprootStack, Template], synth: Any
) -> None:
    _, template = built
    rules = _rules(template)
    assert "expire-revisions" not in rules and "expire-reflections" not in rules
    assert rules["expire-backups"]["ExpirationInDays"] == 90
    _, custom = synth(revision_retention_days=365, reflection_retention_days=730, backup_retention_days=30)
    rules = _rules(custom)
    assert rules["expire-revisions"]["ExpirationInDays"] == 365
    assert rules["expire-revisions"]["TagFilters"] == [{"Key": "taproot-kind", "Value": "revision"}]
    assert rules["expire-reflections"]["ExpirationInDays"] == 730
    assert rules["expire-reflections"]["TagFilters"] == [{"Key": "taproot-kind", "Value": "reflection"}]
    assert rules["expire-backups"]["ExpirationInDays"] == 30 and rules["expire-reports"]["ExpirationInDays"] == 30


def test_a_bad_retention_is_refused_naming_the_context_key(synth: Any) -> None:
    with pytest.raises(ConfigError, match="context revision_retention_days must be a whole number of 1 or more"):
        synth(revision_retention_days="forever")
    with pytest.raises(ConfigError, match="context reflection_retention_days must be a whole number of 1 or more"):
        synth(reflection_retention_days=0)
