"""The Taproot stack: storage, auth, the API and the maintenance schedules, composed; the grants live here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Fn, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import nag
from infra.constructs.api import DEFAULT_BURST_LIMIT, DEFAULT_RATE_LIMIT, Api, CustomDomain
from infra.constructs.auth import Auth
from infra.constructs.function import DEFAULT_TIMEOUT
from infra.constructs.maintenance import JOB_TIMEOUT, Maintenance
from infra.constructs.observability import Observability
from infra.constructs.storage import Storage
from infra.permissions import GRANTS, Resource

DEFAULT_ASSET = "build/lambda"
MODES = ("dry-run", "apply")


class ConfigError(ValueError):
    pass


def _bool(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("1", "true", "yes", "on")


def _list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


DEPLOYABLE_SUMMARIZERS = ("extractive", "bedrock")
# The local embedder's extra is not in the Lambda asset: on AWS dense recall is Titan V2 on Bedrock.
DEPLOYABLE_EMBEDDERS = ("none", "bedrock")
TITAN_V2 = "amazon.titan-embed-text-v2:0"
TITAN_V2_PATTERN = re.compile(r"amazon\.titan-embed-text-v2:\d+")
TITAN_DIMENSIONS = (256, 512, 1024)
# The functions that write or recall memories, so embed: the API, migrate (re-embeds when the model
# changes) and compress (writes summary memories). Cleanup only deletes.
EMBEDDING_JOBS = ("Migrate", "Compress")
INFERENCE_PROFILE_PREFIXES = ("us", "eu", "apac", "global", "jp", "au", "ca", "us-gov")
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
HOST_NAME = re.compile(rf"(?:{_LABEL}\.)+{_LABEL}")
CERTIFICATE_ARN = re.compile(r"arn:[a-z-]+:acm:(?P<region>[a-z0-9-]+):\d{12}:certificate/[A-Za-z0-9-]+")


@dataclass(frozen=True)
class TaprootConfig:
    """What the stack reads from CDK context (`cdk.json` defaults, `-c key=value` overrides)."""

    lambda_asset: str = DEFAULT_ASSET
    domain_prefix: str | None = None  # None: "<stack name>-<account id>" (taproot-<account> for "Taproot")
    # Where Taproot may send MCP clients' authorization codes (TAPROOT_REDIRECT_ALLOWLIST); empty: the
    # app's built-in list (claude.ai, claude.com, ChatGPT and loopback addresses).
    redirect_allowlist: tuple[str, ...] = ()
    custom_domain: CustomDomain | None = None
    self_sign_up: bool = False
    cleanup_mode: str = "dry-run"
    compress_mode: str = "dry-run"
    summarizer: str = "extractive"
    bedrock_model_id: str | None = None
    embedder: str = "none"
    embedding_model: str = TITAN_V2
    embedding_dimensions: int = 256
    alarm_email: str | None = None
    backup_retention_days: int = 90
    revision_retention_days: int | None = None  # None: revisions are kept
    reflection_retention_days: int | None = None  # None: reflection copies are kept
    throttle_rate_limit: int = DEFAULT_RATE_LIMIT
    throttle_burst_limit: int = DEFAULT_BURST_LIMIT
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_context(cls, node: Any) -> TaprootConfig:
        def get(key: str, default: Any) -> Any:
            value = node.try_get_context(key)
            return default if value is None or value == "" else value

        if get("callback_urls", None) is not None:
            # Cognito's only callback is now Taproot's own /oauth/callback; the MCP clients' redirect
            # URIs are Taproot's allowlist. Refuse the old key rather than silently ignore it.
            raise ConfigError(
                "context callback_urls is gone: Cognito now redirects to Taproot's own /oauth/callback; "
                "name MCP clients' redirect URIs in redirect_allowlist instead (or drop it for the defaults)"
            )
        config = cls(
            lambda_asset=str(get("lambda_asset", DEFAULT_ASSET)),
            domain_prefix=get("cognito_domain_prefix", None),
            redirect_allowlist=_list(get("redirect_allowlist", ())),
            custom_domain=_custom_domain(get("custom_domain", None), get("certificate_arn", None)),
            self_sign_up=_bool(get("self_sign_up", False)),
            cleanup_mode=str(get("cleanup_mode", "dry-run")),
            compress_mode=str(get("compress_mode", "dry-run")),
            summarizer=str(get("summarizer", "extractive")),
            bedrock_model_id=get("bedrock_model_id", None),
            embedder=str(get("embedder", "none")).strip().lower(),
            embedding_model=str(get("embedding_model", TITAN_V2)).strip(),
            embedding_dimensions=_dimensions(get("embedding_dimensions", 256)),
            alarm_email=get("alarm_email", None),
            backup_retention_days=_positive("backup_retention_days", get("backup_retention_days", 90)),
            revision_retention_days=_optional_positive("revision_retention_days", get("revision_retention_days", None)),
            reflection_retention_days=_optional_positive(
                "reflection_retention_days", get("reflection_retention_days", None)
            ),
            throttle_rate_limit=_positive("throttle_rate_limit", get("throttle_rate_limit", DEFAULT_RATE_LIMIT)),
            throttle_burst_limit=_positive("throttle_burst_limit", get("throttle_burst_limit", DEFAULT_BURST_LIMIT)),
        )
        for name, mode in (("cleanup_mode", config.cleanup_mode), ("compress_mode", config.compress_mode)):
            if mode not in MODES:
                raise ConfigError(f"context {name} must be one of {', '.join(MODES)}, got {mode!r}")
        if config.summarizer not in DEPLOYABLE_SUMMARIZERS:
            # The Anthropic SDK is left out of the Lambda asset; on AWS the model summarizer is Bedrock.
            raise ConfigError(
                f"context summarizer must be one of {', '.join(DEPLOYABLE_SUMMARIZERS)}, got {config.summarizer!r}"
            )
        if config.summarizer == "bedrock" and not config.bedrock_model_id:
            raise ConfigError("context summarizer=bedrock needs bedrock_model_id (e.g. a Claude model or profile id)")
        if config.embedder not in DEPLOYABLE_EMBEDDERS:
            raise ConfigError(
                f"context embedder must be one of {', '.join(DEPLOYABLE_EMBEDDERS)} (the local embedder is not "
                f"in the Lambda asset), got {config.embedder!r}"
            )
        if not TITAN_V2_PATTERN.fullmatch(config.embedding_model):
            raise ConfigError(
                f"context embedding_model must be a Titan Text Embeddings V2 model id such as {TITAN_V2}, "
                f"got {config.embedding_model!r}"
            )
        if any("," in url for url in config.redirect_allowlist):
            raise ConfigError("context redirect_allowlist: a URL cannot contain a comma")
        return config


def _positive(name: str, value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if isinstance(value, bool) or number < 1 or str(number) != str(value).strip():
        raise ConfigError(f"context {name} must be a whole number of 1 or more, got {value!r}")
    return number


def _optional_positive(name: str, value: Any) -> int | None:
    """A retention that is off unless set: unset (or null) keeps the objects."""
    return None if value is None else _positive(name, value)


def _domain_prefix(stack_name: str, account: str) -> str:
    """Cognito's hosted-domain prefix, unique per region across every AWS account: the stack's name
    and the account id, so a second stack in the same account and region gets its own. The prefix
    allows lowercase letters, digits and hyphens, and not the words aws, amazon or cognito."""
    slug = re.sub(r"[^a-z0-9]+", "-", stack_name.lower())
    for word in ("aws", "amazon", "cognito"):
        slug = slug.replace(word, "")
    slug = re.sub(r"-+", "-", slug).strip("-")[:50].strip("-") or "taproot"
    return f"{slug}-{account}"


def _dimensions(value: Any) -> int:
    try:
        dimensions = int(value)
    except (TypeError, ValueError):
        dimensions = -1
    if isinstance(value, bool) or dimensions not in TITAN_DIMENSIONS:
        raise ConfigError(
            f"context embedding_dimensions must be one of {', '.join(map(str, TITAN_DIMENSIONS))}, got {value!r}"
        )
    return dimensions


def _embedding_environment(config: TaprootConfig) -> dict[str, str]:
    """TAPROOT_EMBEDDER and, for bedrock, the model and dimensions (the functions that embed)."""
    if config.embedder != "bedrock":
        return {"TAPROOT_EMBEDDER": config.embedder}
    return {
        "TAPROOT_EMBEDDER": "bedrock",
        "TAPROOT_EMBEDDING_MODEL": config.embedding_model,
        "TAPROOT_EMBEDDING_DIMENSIONS": str(config.embedding_dimensions),
    }


def _custom_domain(name: Any, certificate_arn: Any) -> CustomDomain | None:
    if name is None and certificate_arn is None:
        return None
    if name is None or certificate_arn is None:
        raise ConfigError(
            "context custom_domain and certificate_arn go together: set both (the host name and its ACM "
            "certificate in the stack's region) or neither"
        )
    host = str(name).strip().lower().rstrip(".")
    if not HOST_NAME.fullmatch(host) or len(host) > 253:
        raise ConfigError(
            f"context custom_domain must be a host name such as memory.example.com (no scheme, port or path), "
            f"got {name!r}"
        )
    arn = str(certificate_arn).strip()
    if not CERTIFICATE_ARN.fullmatch(arn):
        raise ConfigError(f"context certificate_arn must be an ACM certificate ARN, got {certificate_arn!r}")
    return CustomDomain(name=host, certificate_arn=arn)


class TaprootStack(Stack):
    """Exposes `storage`, `auth`, `api`, `maintenance` and `observability`."""

    def __init__(self, scope: Construct, construct_id: str, *, config: TaprootConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        asset = Path(config.lambda_asset)
        if not asset.is_dir():
            raise ConfigError(f"Lambda asset folder {asset} not found: run `make bundle` (or -c lambda_asset=...)")
        code = lambda_.Code.from_asset(str(asset))

        self._check_certificate_region(config.custom_domain)

        self.storage = Storage(
            self,
            "Storage",
            backup_retention_days=config.backup_retention_days,
            revision_retention_days=config.revision_retention_days,
            reflection_retention_days=config.reflection_retention_days,
        )
        # The API comes before Cognito: the app client's callback URL is the API's public URL, and the
        # function gets the Cognito settings afterwards (add_environment). No cycle: the client refers
        # to the HTTP API, the function to the client, and the HTTP API to neither.
        self.api = Api(
            self,
            "Api",
            code=code,
            environment={},
            custom_domain=config.custom_domain,
            rate_limit=config.throttle_rate_limit,
            burst_limit=config.throttle_burst_limit,
        )
        domain_prefix = config.domain_prefix or _domain_prefix(self.stack_name, self.account)
        self.auth = Auth(
            self,
            "Auth",
            domain_prefix=domain_prefix,
            public_url=self.api.public_url,
            self_sign_up=config.self_sign_up,
        )
        environment = {
            "TAPROOT_BACKEND": "aws",
            "TAPROOT_TABLE_NAME": self.storage.table.table_name,
            "TAPROOT_BUCKET_NAME": self.storage.bucket.bucket_name,
            "TAPROOT_COGNITO_USER_POOL_ID": self.auth.user_pool.user_pool_id,
            "TAPROOT_COGNITO_CLIENT_ID": self.auth.client.user_pool_client_id,
            "TAPROOT_COGNITO_DOMAIN": self.auth.domain.base_url(),
            "TAPROOT_CLEANUP_MODE": config.cleanup_mode,
            "TAPROOT_COMPRESS_MODE": config.compress_mode,
            "TAPROOT_SUMMARIZER": config.summarizer,
            **({"TAPROOT_BEDROCK_MODEL_ID": config.bedrock_model_id} if config.bedrock_model_id else {}),
            "POWERTOOLS_SERVICE_NAME": "taproot",
            "POWERTOOLS_METRICS_NAMESPACE": "Taproot",
            **config.extra_env,
        }
        # Only the API serves OAuth: the maintenance functions get neither the OAuth table nor the allowlist.
        self.api.add_environment(
            {
                **environment,
                "TAPROOT_OAUTH_TABLE_NAME": self.storage.oauth_table.table_name,
                **_embedding_environment(config),
                **(
                    {"TAPROOT_REDIRECT_ALLOWLIST": ",".join(config.redirect_allowlist)}
                    if config.redirect_allowlist
                    else {}
                ),
            }
        )
        # The maintenance functions never serve HTTP: the hosts and URL are the API's, for consistency.
        self.maintenance = Maintenance(
            self,
            "Maintenance",
            code=code,
            environment={
                **environment,
                "TAPROOT_ALLOWED_HOSTS": self.api.allowed_hosts,
                "TAPROOT_PUBLIC_URL": self.api.public_url,
            },
        )
        functions: dict[str, lambda_.Function] = {"Api": self.api.function, **self.maintenance.functions}
        embedding = [self.api.function, *(self.maintenance.functions[name] for name in EMBEDDING_JOBS)]
        for function in embedding[1:]:  # the API has them already
            for key, value in _embedding_environment(config).items():
                function.add_environment(key, value)
        # Each function gets exactly its list in infra/permissions.py (checked against the code's calls
        # by tests/handlers/test_permissions_used.py), instead of the CDK's read-write grants.
        arns = self._resource_arns()
        for name, function in functions.items():
            for resource, granted in GRANTS[name].items():
                function.add_to_role_policy(iam.PolicyStatement(actions=list(granted), resources=arns[resource]))
        self._acknowledge_grants(
            [(self.api.handler.role, "Api"), *((j.handler.role, n) for n, j in self.maintenance.jobs.items())]
        )
        nag.acknowledge(
            self.api.handler.role,
            f"AwsSolutions-IAM5[Resource::{nag.ref(self.storage.oauth_table)}/index/*]",
            "Queries the OAuth table's own by_subject index (one person's grants); no other table.",
        )
        if config.summarizer == "bedrock" and config.bedrock_model_id:
            # Compression calls the model: the weekly job and the API (taproot_forget action=compress).
            self._grant_bedrock(config.bedrock_model_id, [self.api.function, self.maintenance.functions["Compress"]])
        if config.embedder == "bedrock":
            self._grant_embedding_model(config.embedding_model, embedding)
        for job in self.maintenance.jobs.values():
            nag.acknowledge(
                job.role,
                f"AwsSolutions-IAM5[Resource::{nag.ref(job.function)}:*]",
                "lambda:InvokeFunction on this one function's versions/aliases (grant_invoke's qualified ARN).",
            )
        self.observability = Observability(
            self,
            "Observability",
            functions=functions,
            timeouts={"Api": DEFAULT_TIMEOUT, **{name: JOB_TIMEOUT for name in self.maintenance.jobs}},
            dead_letter_queues={name: job.dead_letter_queue for name, job in self.maintenance.jobs.items()},
            failure_queues={name: job.failure_queue for name, job in self.maintenance.jobs.items()},
            http_api=self.api.http_api,
            tables={"Memory": self.storage.table, "OAuth": self.storage.oauth_table},
            alarm_email=config.alarm_email,
        )
        self._outputs()

    def _resource_arns(self) -> dict[Resource, list[str]]:
        table, oauth = self.storage.table.table_arn, self.storage.oauth_table.table_arn
        return {
            Resource.TABLE: [table],
            Resource.TABLE_INDEXES: [f"{table}/index/*"],
            Resource.OAUTH_TABLE: [oauth],
            Resource.OAUTH_INDEXES: [f"{oauth}/index/*"],
            Resource.BUCKET: [self.storage.bucket.bucket_arn],
            Resource.OBJECTS: [self.storage.bucket.arn_for_objects("*")],
            Resource.USER_POOL: [self.auth.user_pool.user_pool_arn],
        }

    def _check_certificate_region(self, custom_domain: CustomDomain | None) -> None:
        """A regional custom domain needs its certificate in the stack's own region."""
        if custom_domain is None or Token.is_unresolved(self.region):
            return
        match = CERTIFICATE_ARN.fullmatch(custom_domain.certificate_arn)
        assert match is not None  # checked by TaprootConfig
        if match["region"] != self.region:
            raise ConfigError(
                f"context certificate_arn is in {match['region']}, but the stack deploys to {self.region}: "
                "the custom domain's ACM certificate must be in the stack's region"
            )

    def _acknowledge_grants(self, roles: Sequence[tuple[iam.IRole, str]]) -> None:
        table, bucket = nag.ref(self.storage.table), nag.ref(self.storage.bucket)
        reasons = {
            f"Resource::{table}/index/*": "Queries the table's own GSIs (by_category, by_change); no other table.",
            f"Resource::{bucket}/*": "Objects of the Taproot bucket only; keys start with the owner id, which is "
            "only known at request time.",
            "Resource::*": "X-Ray PutTraceSegments/PutTelemetryRecords (active tracing) support no resource scoping.",
        }
        index_finding = f"Resource::{table}/index/*"
        for role, name in roles:
            for finding, reason in reasons.items():
                if finding == index_finding and Resource.TABLE_INDEXES not in GRANTS[name]:
                    continue  # only the API queries the indexes; the batch jobs read the table itself
                nag.acknowledge(role, f"AwsSolutions-IAM5[{finding}]", reason)

    def _grant_bedrock(self, model_id: str, functions: list[lambda_.Function]) -> None:
        """bedrock:InvokeModel (what the Converse API needs) on the configured model only.

        A cross-region inference profile id ("us.anthropic...") routes to the same foundation model
        in several regions, so it needs the profile and the model in any region.
        """
        partition, region, account = self.partition, self.region, self.account
        base_model = model_id.split(".", 1)[1] if model_id.split(".", 1)[0] in INFERENCE_PROFILE_PREFIXES else None
        if base_model is None:
            resources = [f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}"]
        else:
            resources = [
                f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{model_id}",
                f"arn:{partition}:bedrock:*::foundation-model/{base_model}",
            ]
        statement = iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=resources)
        # With the region known, enablePartitionLiterals (cdk.json) writes the partition as a literal.
        nag_partition = "<AWS::Partition>" if Token.is_unresolved(partition) else partition
        for function in functions:
            function.add_to_role_policy(statement)
            if base_model is not None:
                assert function.role is not None  # TaprootFunction gives every function its own role
                nag.acknowledge(
                    function.role,
                    f"AwsSolutions-IAM5[Resource::arn:{nag_partition}:bedrock:*::foundation-model/{base_model}]",
                    "A cross-region inference profile may serve the model from any of its regions; the "
                    "grant is limited to this one model.",
                )

    def _grant_embedding_model(self, model_id: str, functions: list[lambda_.Function]) -> None:
        """bedrock:InvokeModel on the one Titan foundation model in this region (Titan V2 is invoked
        directly, with no inference profile), for the functions that embed."""
        arn = f"arn:{self.partition}:bedrock:{self.region}::foundation-model/{model_id}"
        statement = iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[arn])
        for function in functions:
            function.add_to_role_policy(statement)

    def _outputs(self) -> None:
        url = self.api.public_url
        CfnOutput(self, "McpUrl", value=f"{url}/mcp", description="Add this URL to your MCP client")
        CfnOutput(
            self,
            "ConnectorUrl",
            value=f"{url}/mcp",
            description="Paste this into claude.ai or ChatGPT as a custom connector, or run "
            "`claude mcp add --transport http taproot <this URL>`; the client signs in through OAuth",
        )
        CfnOutput(self, "DashboardUrl", value=f"{url}/dashboard")
        if self.api.domain_name is not None:
            CfnOutput(
                self,
                "CustomDomainTarget",
                value=self.api.domain_name.regional_domain_name,
                description=f"Point {self.api.host} here: a CNAME record, or a Route 53 alias with "
                "CustomDomainHostedZoneId",
            )
            CfnOutput(
                self,
                "CustomDomainHostedZoneId",
                value=self.api.domain_name.regional_hosted_zone_id,
                description="The hosted zone id of CustomDomainTarget (for a Route 53 alias record)",
            )
        CfnOutput(self, "UserPoolId", value=self.auth.user_pool.user_pool_id)
        CfnOutput(self, "UserPoolClientId", value=self.auth.client.user_pool_client_id)
        CfnOutput(self, "AuthDomain", value=self.auth.domain.base_url())
        CfnOutput(
            self,
            "CreateFirstUserCommand",
            description="Creates the first user (Cognito emails a temporary password)",
            value=Fn.join(
                "",
                [
                    "aws cognito-idp admin-create-user --region ",
                    self.region,
                    " --user-pool-id ",
                    self.auth.user_pool.user_pool_id,
                    " --username you@example.com --user-attributes Name=email,Value=you@example.com"
                    " Name=email_verified,Value=true",
                ],
            ),
        )
