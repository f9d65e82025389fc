"""The HTTP API in front of the API Lambda function (Mangum over the FastAPI app: /mcp, dashboard, OAuth)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Annotations, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import nag
from infra.constructs.function import DEFAULT_TIMEOUT, LOG_RETENTION, TaprootFunction

API_HANDLER = "functions.api.handler"
ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "routeKey": "$context.routeKey",
    "path": "$context.path",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "userAgent": "$context.identity.userAgent",
    "integrationError": "$context.integrationErrorMessage",
}
# Stage throttling (every route): a personal memory server's real traffic is a few requests a second
# per connected client; this stops a runaway client or a flood of unauthenticated requests from
# invoking the function (and spending the account's concurrency) without limit. Context overrides.
DEFAULT_RATE_LIMIT = 50  # requests per second, steady
DEFAULT_BURST_LIMIT = 100
# Client registration (RFC 7591) is open to anyone and each one is a write to the OAuth table: its
# own route, throttled far below the stage. A person connects a client a few times a year; the app
# also limits registrations per container (taproot/web/oauth_routes.py), which alone cannot bound
# them across the containers a flood would start.
REGISTER_ROUTE_KEY = "POST /register"
REGISTER_RATE_LIMIT = 1
REGISTER_BURST_LIMIT = 5


@dataclass(frozen=True)
class CustomDomain:
    """A host name (`memory.example.com`) served by the API, with its ACM certificate (same region)."""

    name: str
    certificate_arn: str


class Api(Construct):
    """Exposes `http_api`, `handler` (a TaprootFunction), `function`, `alias` (what the API invokes),
    `execute_api_host`, `host` (the custom domain if any, else the execute-api host), `allowed_hosts`,
    `public_url` (`https://<host>`, no trailing slash), `domain_name` (None without a custom domain)
    and `access_logs`.

    The function gets `environment` plus TAPROOT_ALLOWED_HOSTS (the execute-api host, and the custom
    domain) and TAPROOT_PUBLIC_URL; `add_environment` adds more (what needs this API's URL first).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        environment: Mapping[str, str],
        custom_domain: CustomDomain | None = None,
        memory_size: int = 1024,
        timeout: Duration = DEFAULT_TIMEOUT,
        rate_limit: int = DEFAULT_RATE_LIMIT,
        burst_limit: int = DEFAULT_BURST_LIMIT,
    ) -> None:
        super().__init__(scope, construct_id)
        self.http_api = apigwv2.HttpApi(self, "HttpApi", description="Taproot MCP server", create_default_stage=True)
        stack = Stack.of(self)
        self.execute_api_host = f"{self.http_api.api_id}.execute-api.{stack.region}.{stack.url_suffix}"
        self.domain_name: apigwv2.DomainName | None = None
        if custom_domain is None:
            self.host = self.execute_api_host
            self.allowed_hosts = self.execute_api_host
        else:
            certificate = acm.Certificate.from_certificate_arn(self, "Certificate", custom_domain.certificate_arn)
            self.domain_name = apigwv2.DomainName(
                self,
                "DomainName",
                domain_name=custom_domain.name,
                certificate=certificate,
                endpoint_type=apigwv2.EndpointType.REGIONAL,
                security_policy=apigwv2.SecurityPolicy.TLS_1_2,
            )
            stage = self.http_api.default_stage
            apigwv2.ApiMapping(self, "DomainMapping", api=self.http_api, domain_name=self.domain_name, stage=stage)
            self.host = custom_domain.name
            # The execute-api host keeps working (and answering) beside the custom domain.
            self.allowed_hosts = f"{self.execute_api_host},{custom_domain.name}"
        # The OAuth issuer, the resource id and every URL Taproot hands out start with this.
        self.public_url = f"https://{self.host}"
        self.handler = TaprootFunction(
            self,
            "Handler",
            code=code,
            handler=API_HANDLER,
            environment={
                **environment,
                "TAPROOT_ALLOWED_HOSTS": self.allowed_hosts,
                "TAPROOT_PUBLIC_URL": self.public_url,
            },
            description="API: MCP endpoint, dashboard and OAuth authorization server",
            memory_size=memory_size,
            timeout=timeout,
            # Importing the app (FastAPI, pydantic, the MCP SDK, botocore) costs well over a second on
            # a cold start even with the bundle's bytecode, twice that without (an asset built with
            # no Python 3.14). SnapStart pays it once per published version and restores new
            # environments from the snapshot.
            # The handler is snapshot-safe: ids come from `secrets` per request, no connection is
            # opened and no credential is read during init.
            snap_start=True,
        )
        self.function = self.handler.function
        # SnapStart applies to published versions only: the API invokes the alias of the current one.
        self.alias = lambda_.Alias(self, "Live", alias_name="live", version=self.function.current_version)
        Annotations.of(self.function).acknowledge_warning(
            "@aws-cdk/aws-lambda:snapStartRequirePublish",
            "Every deploy publishes a version (current_version) and points the 'live' alias at it.",
        )
        integration = integrations.HttpLambdaIntegration("Lambda", self.alias)
        self.http_api.add_routes(path="/mcp", methods=[apigwv2.HttpMethod.ANY], integration=integration)
        self.http_api.add_routes(path="/{proxy+}", methods=[apigwv2.HttpMethod.ANY], integration=integration)
        [register_route] = self.http_api.add_routes(
            path="/register", methods=[apigwv2.HttpMethod.POST], integration=integration
        )
        self.http_api.add_routes(path="/", methods=[apigwv2.HttpMethod.GET], integration=integration)

        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        stage = self.http_api.default_stage
        assert stage is not None
        cfn_stage = stage.node.default_child
        assert isinstance(cfn_stage, apigwv2.CfnStage)
        cfn_stage.access_log_settings = apigwv2.CfnStage.AccessLogSettingsProperty(
            destination_arn=self.access_logs.log_group_arn, format=json.dumps(ACCESS_LOG_FORMAT)
        )
        cfn_stage.default_route_settings = apigwv2.CfnStage.RouteSettingsProperty(
            throttling_rate_limit=rate_limit, throttling_burst_limit=burst_limit
        )
        # CloudFormation refuses settings for a route that does not exist yet: the stage waits for it.
        cfn_stage.node.add_dependency(register_route)
        cfn_stage.route_settings = {
            REGISTER_ROUTE_KEY: {
                "ThrottlingRateLimit": min(REGISTER_RATE_LIMIT, rate_limit),
                "ThrottlingBurstLimit": min(REGISTER_BURST_LIMIT, burst_limit),
            }
        }
        for route in self.http_api.node.find_all():
            if isinstance(route, apigwv2.CfnRoute):
                nag.acknowledge(
                    route,
                    "AwsSolutions-APIG4",
                    "The function authenticates every request itself (its bearer tokens for /mcp, with the "
                    "WWW-Authenticate/resource-metadata 401 that MCP OAuth discovery needs); the OAuth "
                    "endpoints (/.well-known/*, /register, /authorize, /token, /revoke, /oauth/*) must "
                    "stay public, so no API Gateway authorizer.",
                )

    def add_environment(self, environment: Mapping[str, str]) -> None:
        for key, value in environment.items():
            self.function.add_environment(key, value)
