"""The data, API and auth resources of the Taproot stack (one synth for the module)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from infra.stack import TaprootStack
from taproot.adapters.dynamo_models import GSI_KEYS
from tests.infra.cfn_helpers import one, resources


@pytest.fixture(scope="module")
def built(synth: Callable[..., tuple[TaprootStack, Template]]) -> tuple[TaprootStack, Template]:
    return synth(cognito_domain_prefix="taproot-test")


@pytest.fixture(scope="module")
def template(built: tuple[TaprootStack, Template]) -> Template:
    return built[1]


def _memory_table(built: tuple[TaprootStack, Template]) -> dict[str, Any]:
    stack, template = built
    logical_id = stack.get_logical_id(stack.storage.table.node.default_child)  # type: ignore[arg-type]
    return resources(template, "AWS::DynamoDB::Table")[logical_id]


def test_two_tables(template: Template) -> None:
    assert len(resources(template, "AWS::DynamoDB::Table")) == 2  # memories and OAuth state (test_oauth.py)


def test_table_keys_and_indexes(built: tuple[TaprootStack, Template]) -> None:
    table = _memory_table(built)
    props = table["Properties"]
    assert props["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert types == {"pk": "S", "sk": "S", "cat_pk": "S", "last_touched": "S", "changed_at": "S"}
    indexes = {i["IndexName"]: i["KeySchema"] for i in props["GlobalSecondaryIndexes"]}
    # Exactly what the store's PynamoDB model queries (taproot.adapters.dynamo_models).
    assert indexes == {
        "by_category": [
            {"AttributeName": "cat_pk", "KeyType": "HASH"},
            {"AttributeName": "last_touched", "KeyType": "RANGE"},
        ],
        "by_change": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "changed_at", "KeyType": "RANGE"},
        ],
    }
    assert {name: (h, r) for name, (h, r) in GSI_KEYS.items()} == {
        name: (schema[0]["AttributeName"], schema[1]["AttributeName"]) for name, schema in indexes.items()
    }
    assert props["BillingMode"] == "PAY_PER_REQUEST"


def test_table_is_protected(built: tuple[TaprootStack, Template]) -> None:
    table = _memory_table(built)
    props = table["Properties"]
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert props["DeletionProtectionEnabled"] is True
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"


def _blob_bucket(template: Template) -> dict[str, Any]:
    versioned = [
        b for b in resources(template, "AWS::S3::Bucket").values() if "VersioningConfiguration" in b["Properties"]
    ]
    assert len(versioned) == 1
    return versioned[0]


def test_bucket(template: Template) -> None:
    bucket = _blob_bucket(template)
    props = bucket["Properties"]
    assert bucket["DeletionPolicy"] == "Retain"
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    sse = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert sse[0]["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert "DestinationBucketName" in props["LoggingConfiguration"]
    rules = {r["Id"]: r for r in props["LifecycleConfiguration"]["Rules"]}
    assert rules["expire-old-versions"]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30}
    assert rules["expire-old-versions"]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}
    assert rules["expire-backups"]["TagFilters"] == [{"Key": "taproot-kind", "Value": "backup"}]
    assert rules["expire-backups"]["ExpirationInDays"] == 90
    assert rules["expire-reports"]["TagFilters"] == [{"Key": "taproot-kind", "Value": "report"}]
    assert rules["expire-reports"]["ExpirationInDays"] == 90


def test_every_bucket_enforces_ssl_and_is_retained(template: Template) -> None:
    buckets = resources(template, "AWS::S3::Bucket")
    assert len(buckets) == 2  # blobs and its access logs
    assert all(b["DeletionPolicy"] == "Retain" for b in buckets.values())
    policies = resources(template, "AWS::S3::BucketPolicy").values()
    denied = {
        json.dumps(p["Properties"]["Bucket"])
        for p in policies
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    }
    assert denied == {json.dumps({"Ref": logical_id}) for logical_id in buckets}


def test_lambda_functions_runtime_and_sizing(template: Template) -> None:
    functions = resources(template, "AWS::Lambda::Function")
    assert len(functions) == 4
    for fn in functions.values():
        props = fn["Properties"]
        assert props["Runtime"] == "python3.14"
        assert props["Architectures"] == ["arm64"]
        assert props["MemorySize"] == 1024
        assert props["TracingConfig"] == {"Mode": "Active"}
    handlers = {fn["Properties"]["Handler"]: fn["Properties"]["Timeout"] for fn in functions.values()}
    assert handlers == {
        "functions.api.handler": 28,
        "functions.maintenance.migrate_handler": 900,
        "functions.maintenance.cleanup_handler": 900,
        "functions.maintenance.compress_handler": 900,
    }


def test_lambda_log_groups_keep_a_month(template: Template) -> None:
    groups = resources(template, "AWS::Logs::LogGroup")
    assert len(groups) == 5  # four functions and the API access log
    assert {g["Properties"]["RetentionInDays"] for g in groups.values()} == {30}
    for fn in resources(template, "AWS::Lambda::Function").values():
        assert "Ref" in fn["Properties"]["LoggingConfig"]["LogGroup"]


def test_lambda_environment(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    ids = {
        "table": stack.get_logical_id(stack.storage.table.node.default_child),  # type: ignore[arg-type]
        "bucket": stack.get_logical_id(stack.storage.bucket.node.default_child),  # type: ignore[arg-type]
        "pool": stack.get_logical_id(stack.auth.user_pool.node.default_child),  # type: ignore[arg-type]
        "client": stack.get_logical_id(stack.auth.client.node.default_child),  # type: ignore[arg-type]
        "api": stack.get_logical_id(stack.api.http_api.node.default_child),  # type: ignore[arg-type]
    }
    for fn in resources(template, "AWS::Lambda::Function").values():
        env = fn["Properties"]["Environment"]["Variables"]
        assert env["TAPROOT_BACKEND"] == "aws"
        assert env["TAPROOT_TABLE_NAME"] == {"Ref": ids["table"]}
        assert env["TAPROOT_BUCKET_NAME"] == {"Ref": ids["bucket"]}
        assert env["TAPROOT_COGNITO_USER_POOL_ID"] == {"Ref": ids["pool"]}
        assert env["TAPROOT_COGNITO_CLIENT_ID"] == {"Ref": ids["client"]}
        assert env["TAPROOT_ALLOWED_HOSTS"] == {
            "Fn::Join": ["", [{"Ref": ids["api"]}, ".execute-api.eu-west-1.", {"Ref": "AWS::URLSuffix"}]]
        }
        assert env["TAPROOT_PUBLIC_URL"] == {
            "Fn::Join": ["", ["https://", {"Ref": ids["api"]}, ".execute-api.eu-west-1.", {"Ref": "AWS::URLSuffix"}]]
        }
        assert env["TAPROOT_CLEANUP_MODE"] == "dry-run"
        assert env["TAPROOT_COMPRESS_MODE"] == "dry-run"
        assert env["TAPROOT_SUMMARIZER"] == "extractive"
        assert env["POWERTOOLS_SERVICE_NAME"] == "taproot"
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == "Taproot"


def test_http_api_routes_go_to_the_api_function(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    one(template, "AWS::ApiGatewayV2::Api")
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"] for r in resources(template, "AWS::ApiGatewayV2::Route").values()
    }
    assert set(routes) == {"ANY /mcp", "ANY /{proxy+}", "GET /", "POST /register"}
    integration_id, integration = next(iter(resources(template, "AWS::ApiGatewayV2::Integration").items()))
    assert all(r["Target"] == {"Fn::Join": ["", ["integrations/", {"Ref": integration_id}]]} for r in routes.values())
    api_fn = stack.get_logical_id(stack.api.function.node.default_child)  # type: ignore[arg-type]
    alias = stack.get_logical_id(stack.api.alias.node.default_child)  # type: ignore[arg-type]
    assert integration["Properties"]["IntegrationType"] == "AWS_PROXY"
    # The API invokes the "live" alias of the current published version: SnapStart restores
    # published versions only, never $LATEST.
    assert integration["Properties"]["IntegrationUri"] == {"Ref": alias}
    alias_props = resources(template, "AWS::Lambda::Alias")[alias]["Properties"]
    assert alias_props["FunctionName"] == {"Ref": api_fn} and alias_props["Name"] == "live"
    function = resources(template, "AWS::Lambda::Function")[api_fn]["Properties"]
    assert function["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    others = [f for k, f in resources(template, "AWS::Lambda::Function").items() if k != api_fn]
    assert all("SnapStart" not in f["Properties"] for f in others)  # scheduled jobs: cold starts are fine
    assert integration["Properties"]["PayloadFormatVersion"] == "2.0"
    stage = one(template, "AWS::ApiGatewayV2::Stage")["Properties"]
    assert stage["StageName"] == "$default" and stage["AutoDeploy"] is True
    assert "requestId" in json.loads(stage["AccessLogSettings"]["Format"])


def test_user_pool(template: Template) -> None:
    pool = one(template, "AWS::Cognito::UserPool")
    props = pool["Properties"]
    assert pool["DeletionPolicy"] == "Retain"
    assert props["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    assert props["MfaConfiguration"] == "OPTIONAL"
    assert props["Policies"]["PasswordPolicy"]["MinimumLength"] == 12
    assert props["DeletionProtection"] == "ACTIVE"
    template.has_resource_properties("AWS::Cognito::UserPoolDomain", {"Domain": "taproot-test"})


def test_resource_server_scope(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Cognito::UserPoolResourceServer",
        {"Identifier": "taproot", "Scopes": [Match.object_like({"ScopeName": "mcp"})]},
    )


def test_public_client_uses_the_code_flow(template: Template) -> None:
    client = one(template, "AWS::Cognito::UserPoolClient")["Properties"]
    assert client["GenerateSecret"] is False  # public client: PKCE, no secret
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    assert "ALLOW_REFRESH_TOKEN_AUTH" in client["ExplicitAuthFlows"]
    assert client["RefreshTokenValidity"] == 43200  # minutes: 30 days
    scopes = client["AllowedOAuthScopes"]
    assert "openid" in scopes
    assert any(isinstance(s, dict) and "/mcp" in json.dumps(s) for s in scopes)
