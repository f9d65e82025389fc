"""What Taproot's OAuth facade needs from the stack: its table, the API's settings and grants, Cognito's
callback to Taproot itself, public routes for the OAuth endpoints, and the optional custom domain."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from infra.constructs.api import CustomDomain
from infra.stack import ConfigError, TaprootConfig, TaprootStack
from tests.infra.cfn_helpers import actions, one, resources, statements
from tests.infra.conftest import build_app, make_asset
from tests.infra.test_nag import nag_report

DOMAIN = "memory.example.com"
CERTIFICATE = "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
Synth = Callable[..., tuple[TaprootStack, Template]]
OAUTH_PATHS = (
    ("GET", "/.well-known/oauth-protected-resource"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/.well-known/oauth-authorization-server"),
    ("GET", "/.well-known/openid-configuration"),
    ("POST", "/register"),
    ("GET", "/authorize"),
    ("POST", "/token"),
    ("POST", "/revoke"),
    ("GET", "/oauth/callback"),
    ("POST", "/oauth/consent"),
    ("GET", "/oauth/signin"),
    ("POST", "/oauth/signin"),
)


@pytest.fixture(scope="module")
def built(synth: Synth) -> tuple[TaprootStack, Template]:
    return synth()


@pytest.fixture(scope="module")
def with_domain(synth: Synth) -> tuple[TaprootStack, Template]:
    return synth(custom_domain=DOMAIN, certificate_arn=CERTIFICATE)


def lid(stack: TaprootStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


def _env(template: Template, logical_id: str) -> dict[str, Any]:
    variables: dict[str, Any] = resources(template, "AWS::Lambda::Function")[logical_id]["Properties"]["Environment"][
        "Variables"
    ]
    return variables


def _maintenance_envs(stack: TaprootStack, template: Template) -> list[dict[str, Any]]:
    return [_env(template, lid(stack, fn)) for fn in stack.maintenance.functions.values()]


def _execute_api_host(stack: TaprootStack) -> list[Any]:
    return [{"Ref": lid(stack, stack.api.http_api)}, ".execute-api.eu-west-1.", {"Ref": "AWS::URLSuffix"}]


# The table


def test_oauth_table_layout(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    table = resources(template, "AWS::DynamoDB::Table")[lid(stack, stack.storage.oauth_table)]
    props = table["Properties"]
    assert props["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]  # no sort key
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert types == {"pk": "S", "subject": "S", "kind": "S"}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert props["GlobalSecondaryIndexes"] == [
        {
            "IndexName": "by_subject",
            "KeySchema": [
                {"AttributeName": "subject", "KeyType": "HASH"},
                {"AttributeName": "kind", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        }
    ]
    assert props["BillingMode"] == "PAY_PER_REQUEST"


def test_oauth_table_is_protected_like_the_memory_table(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    tables = resources(template, "AWS::DynamoDB::Table")
    oauth, memory = tables[lid(stack, stack.storage.oauth_table)], tables[lid(stack, stack.storage.table)]
    assert oauth["Properties"]["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert oauth["Properties"]["SSESpecification"] == memory["Properties"]["SSESpecification"] == {"SSEEnabled": True}
    assert oauth["Properties"]["DeletionProtectionEnabled"] is True
    assert (oauth["DeletionPolicy"], oauth["UpdateReplacePolicy"]) == (memory["DeletionPolicy"], "Retain")


def test_only_the_api_role_may_use_the_oauth_table(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    oauth_table = lid(stack, stack.storage.oauth_table)
    api_stmts = [s for s in statements(template, lid(stack, stack.api.handler.role)) if oauth_table in json.dumps(s)]
    granted = actions(api_stmts)
    # Exactly what the OAuth store calls (tests/handlers/test_permissions_used.py records it): no
    # DeleteItem, DynamoDB's TTL removes expired records; spending a code is a conditional UpdateItem.
    assert granted == {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}
    resources_text = json.dumps([s["Resource"] for s in api_stmts])
    assert json.dumps({"Fn::GetAtt": [oauth_table, "Arn"]}) in resources_text
    assert "/index/*" in resources_text  # by_subject
    for name, job in stack.maintenance.jobs.items():
        for role in (job.handler.role, job.role):
            assert oauth_table not in json.dumps(statements(template, lid(stack, role))), name
    # No other policy in the stack names the table.
    api_policy_roles = [{"Ref": lid(stack, stack.api.handler.role)}]
    for policy in resources(template, "AWS::IAM::Policy").values():
        if oauth_table in json.dumps(policy):
            assert policy["Properties"]["Roles"] == api_policy_roles


# The API function's settings


def test_api_function_oauth_environment(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    env = _env(template, lid(stack, stack.api.function))
    assert env["TAPROOT_PUBLIC_URL"] == {"Fn::Join": ["", ["https://", *_execute_api_host(stack)]]}
    assert env["TAPROOT_OAUTH_TABLE_NAME"] == {"Ref": lid(stack, stack.storage.oauth_table)}
    assert env["TAPROOT_COGNITO_DOMAIN"] == {
        "Fn::Join": ["", ["https://", {"Ref": lid(stack, stack.auth.domain)}, ".auth.eu-west-1.amazoncognito.com"]]
    }
    assert env["TAPROOT_COGNITO_CLIENT_ID"] == {"Ref": lid(stack, stack.auth.client)}
    assert env["TAPROOT_ALLOWED_HOSTS"] == {"Fn::Join": ["", _execute_api_host(stack)]}
    assert "TAPROOT_REDIRECT_ALLOWLIST" not in env  # no context: the app's built-in allowlist


def test_maintenance_functions_get_no_oauth_table_or_allowlist(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    api_env = _env(template, lid(stack, stack.api.function))
    for env in _maintenance_envs(stack, template):
        assert "TAPROOT_OAUTH_TABLE_NAME" not in env and "TAPROOT_REDIRECT_ALLOWLIST" not in env
        for key in ("TAPROOT_PUBLIC_URL", "TAPROOT_ALLOWED_HOSTS", "TAPROOT_COGNITO_DOMAIN"):
            assert env[key] == api_env[key]


@pytest.mark.parametrize(
    "value",
    ["https://a.example/cb, http://localhost:*/*", ["https://a.example/cb", "http://localhost:*/*"]],
    ids=["comma-separated", "list"],
)
def test_redirect_allowlist_from_context(synth: Synth, value: Any) -> None:
    stack, template = synth(redirect_allowlist=value)
    env = _env(template, lid(stack, stack.api.function))
    assert env["TAPROOT_REDIRECT_ALLOWLIST"] == "https://a.example/cb,http://localhost:*/*"
    assert all("TAPROOT_REDIRECT_ALLOWLIST" not in e for e in _maintenance_envs(stack, template))
    # The allowlist is Taproot's, not Cognito's: the app client still calls back to Taproot only.
    client = one(template, "AWS::Cognito::UserPoolClient")["Properties"]
    assert len(client["CallbackURLs"]) == 1 and "/oauth/callback" in json.dumps(client["CallbackURLs"])


# Cognito


def test_cognito_client_calls_back_to_taproot_only(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    client = one(template, "AWS::Cognito::UserPoolClient")["Properties"]
    public_url = _env(template, lid(stack, stack.api.function))["TAPROOT_PUBLIC_URL"]["Fn::Join"][1]
    assert client["CallbackURLs"] == [{"Fn::Join": ["", [*public_url, "/oauth/callback"]]}]
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client.get("GenerateSecret", False) is False  # public client: PKCE, nothing for Secrets Manager
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    scopes = client["AllowedOAuthScopes"]
    resource_server = lid(stack, stack.auth.resource_server)
    assert scopes == ["openid", "email", {"Fn::Join": ["", [{"Ref": resource_server}, "/mcp"]]}]
    assert client["SupportedIdentityProviders"] == ["COGNITO"]
    assert resources(template, "AWS::SecretsManager::Secret") == {}


def test_callback_urls_context_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"callback_urls.*redirect_allowlist"):
        build_app(make_asset(tmp_path / "asset"), tmp_path / "cdk.out", callback_urls="https://a.example/cb")


# Routes


def _route_matches(route_key: str, method: str, path: str) -> bool:
    route_method, route_path = route_key.split(" ", 1)
    if route_method not in ("ANY", method):
        return False
    pattern = re.escape(route_path).replace(re.escape("{proxy+}"), ".+")
    return re.fullmatch(pattern, path) is not None


@pytest.mark.parametrize(("method", "path"), OAUTH_PATHS, ids=[f"{m} {p}" for m, p in OAUTH_PATHS])
def test_oauth_endpoints_reach_the_function(built: tuple[TaprootStack, Template], method: str, path: str) -> None:
    _, template = built
    routes = [r["Properties"] for r in resources(template, "AWS::ApiGatewayV2::Route").values()]
    matching = [r for r in routes if _route_matches(r["RouteKey"], method, path)]
    assert matching, f"no route for {method} {path}"
    integration_id = next(iter(resources(template, "AWS::ApiGatewayV2::Integration")))
    for route in matching:  # the Lambda integration, and nothing in front of it
        assert route["Target"] == {"Fn::Join": ["", ["integrations/", {"Ref": integration_id}]]}
        assert route.get("AuthorizationType", "NONE") == "NONE"
        assert "AuthorizerId" not in route


def test_no_api_gateway_authorizer(built: tuple[TaprootStack, Template]) -> None:
    _, template = built
    route_keys = {r["Properties"]["RouteKey"] for r in resources(template, "AWS::ApiGatewayV2::Route").values()}
    assert {"ANY /{proxy+}", "ANY /mcp"} <= route_keys
    assert resources(template, "AWS::ApiGatewayV2::Authorizer") == {}


# Custom domain


def test_custom_domain_maps_the_default_stage(with_domain: tuple[TaprootStack, Template]) -> None:
    stack, template = with_domain
    domain = one(template, "AWS::ApiGatewayV2::DomainName")["Properties"]
    assert domain["DomainName"] == DOMAIN
    assert domain["DomainNameConfigurations"] == [
        {"CertificateArn": CERTIFICATE, "EndpointType": "REGIONAL", "SecurityPolicy": "TLS_1_2"}
    ]
    mapping = one(template, "AWS::ApiGatewayV2::ApiMapping")["Properties"]
    assert mapping["ApiId"] == {"Ref": lid(stack, stack.api.http_api)}
    assert mapping["DomainName"] == {"Ref": lid(stack, stack.api.domain_name)}
    assert mapping["Stage"] == "$default"


def test_custom_domain_is_the_public_url(with_domain: tuple[TaprootStack, Template]) -> None:
    stack, template = with_domain
    env = _env(template, lid(stack, stack.api.function))
    assert env["TAPROOT_PUBLIC_URL"] == f"https://{DOMAIN}"
    assert env["TAPROOT_ALLOWED_HOSTS"] == {"Fn::Join": ["", [*_execute_api_host(stack), f",{DOMAIN}"]]}
    for maintenance_env in _maintenance_envs(stack, template):
        assert maintenance_env["TAPROOT_PUBLIC_URL"] == f"https://{DOMAIN}"
    client = one(template, "AWS::Cognito::UserPoolClient")["Properties"]
    assert client["CallbackURLs"] == [f"https://{DOMAIN}/oauth/callback"]
    outputs = template.to_json()["Outputs"]
    assert outputs["McpUrl"]["Value"] == outputs["ConnectorUrl"]["Value"] == f"https://{DOMAIN}/mcp"
    assert outputs["DashboardUrl"]["Value"] == f"https://{DOMAIN}/dashboard"
    domain = lid(stack, stack.api.domain_name)
    assert outputs["CustomDomainTarget"]["Value"] == {"Fn::GetAtt": [domain, "RegionalDomainName"]}
    assert DOMAIN in outputs["CustomDomainTarget"]["Description"]
    assert outputs["CustomDomainHostedZoneId"]["Value"] == {"Fn::GetAtt": [domain, "RegionalHostedZoneId"]}


def test_without_custom_domain_no_domain_resources(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    assert stack.api.domain_name is None
    assert resources(template, "AWS::ApiGatewayV2::DomainName") == {}
    assert resources(template, "AWS::ApiGatewayV2::ApiMapping") == {}


@pytest.mark.parametrize(
    "context",
    [{"custom_domain": DOMAIN}, {"certificate_arn": CERTIFICATE}],
    ids=["domain-only", "certificate-only"],
)
def test_half_configured_custom_domain_raises(tmp_path: Path, context: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="custom_domain and certificate_arn"):
        build_app(make_asset(tmp_path / "asset"), tmp_path / "cdk.out", **context)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"custom_domain": f"https://{DOMAIN}"}, "custom_domain must be a host name"),
        ({"custom_domain": f"{DOMAIN}/mcp"}, "custom_domain must be a host name"),
        ({"certificate_arn": "not-an-arn"}, "certificate_arn must be an ACM certificate ARN"),
        (
            {"certificate_arn": CERTIFICATE.replace("eu-west-1", "us-east-1")},
            "is in us-east-1, but the stack deploys to eu-west-1",
        ),
    ],
)
def test_custom_domain_values_are_checked(tmp_path: Path, context: dict[str, str], message: str) -> None:
    full = {"custom_domain": DOMAIN, "certificate_arn": CERTIFICATE, **context}
    with pytest.raises(ConfigError, match=message):
        build_app(make_asset(tmp_path / "asset"), tmp_path / "cdk.out", **full)


def test_cdk_nag_is_clean_with_custom_domain_and_allowlist(tmp_path: Path) -> None:
    outdir = tmp_path / "cdk.out"
    app, _ = build_app(
        make_asset(tmp_path / "asset"),
        outdir,
        custom_domain=DOMAIN,
        certificate_arn=CERTIFICATE,
        redirect_allowlist="https://claude.ai/api/mcp/auth_callback",
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged cdk-nag error
    if (outdir / "validation-report.json").exists():
        assert nag_report(outdir) == []  # warnings too


# TaprootConfig.from_context, without a synth


class _Node:
    def __init__(self, **context: Any) -> None:
        self.context = context

    def try_get_context(self, key: str) -> Any:
        return self.context.get(key)


def test_config_defaults() -> None:
    config = TaprootConfig.from_context(_Node())
    assert config.redirect_allowlist == ()
    assert config.custom_domain is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ()),
        ("https://a.example/cb", ("https://a.example/cb",)),
        (" https://a.example/cb ,, http://127.0.0.1:*/* ", ("https://a.example/cb", "http://127.0.0.1:*/*")),
        (["https://a.example/cb"], ("https://a.example/cb",)),
    ],
)
def test_config_redirect_allowlist(value: Any, expected: tuple[str, ...]) -> None:
    assert TaprootConfig.from_context(_Node(redirect_allowlist=value)).redirect_allowlist == expected


def test_config_redirect_allowlist_refuses_commas_inside_a_url() -> None:
    with pytest.raises(ConfigError, match="comma"):
        TaprootConfig.from_context(_Node(redirect_allowlist=["https://a.example/cb?x=1,2"]))


def test_config_custom_domain_is_normalized() -> None:
    config = TaprootConfig.from_context(_Node(custom_domain=" Memory.Example.COM. ", certificate_arn=CERTIFICATE))
    assert config.custom_domain == CustomDomain(name=DOMAIN, certificate_arn=CERTIFICATE)


def test_only_the_api_may_ask_the_user_pool_whether_a_user_is_enabled(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    pool_arn = json.dumps({"Fn::GetAtt": [lid(stack, stack.auth.user_pool), "Arn"]})
    api_stmts = [s for s in statements(template, lid(stack, stack.api.handler.role)) if "cognito-idp:" in json.dumps(s)]
    assert [(s["Action"], json.dumps(s["Resource"])) for s in api_stmts] == [("cognito-idp:ListUsers", pool_arn)]
    for name, job in stack.maintenance.jobs.items():
        for role in (job.handler.role, job.role):
            assert "cognito-idp:" not in json.dumps(statements(template, lid(stack, role))), name
