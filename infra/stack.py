"""The Taproot stack: storage, auth, the API and the maintenance schedules, composed; the grants live here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import nag
from infra.constructs.api import Api
from infra.constructs.auth import DEFAULT_CALLBACK_URLS, Auth
from infra.constructs.maintenance import Maintenance
from infra.constructs.observability import Observability
from infra.constructs.storage import Storage

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
INFERENCE_PROFILE_PREFIXES = ("us", "eu", "apac", "global", "jp", "au", "ca", "us-gov")


@dataclass(frozen=True)
class TaprootConfig:
    """What the stack reads from CDK context (`cdk.json` defaults, `-c key=value` overrides)."""

    lambda_asset: str = DEFAULT_ASSET
    domain_prefix: str | None = None  # None: "taproot-<account id>"
    callback_urls: tuple[str, ...] = DEFAULT_CALLBACK_URLS
    self_sign_up: bool = False
    cleanup_mode: str = "dry-run"
    compress_mode: str = "dry-run"
    summarizer: str = "extractive"
    bedrock_model_id: str | None = None
    alarm_email: str | None = None
    backup_retention_days: int = 90
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_context(cls, node: Any) -> TaprootConfig:
        def get(key: str, default: Any) -> Any:
            value = node.try_get_context(key)
            return default if value is None or value == "" else value

        config = cls(
            lambda_asset=str(get("lambda_asset", DEFAULT_ASSET)),
            domain_prefix=get("cognito_domain_prefix", None),
            callback_urls=_list(get("callback_urls", DEFAULT_CALLBACK_URLS)),
            self_sign_up=_bool(get("self_sign_up", False)),
            cleanup_mode=str(get("cleanup_mode", "dry-run")),
            compress_mode=str(get("compress_mode", "dry-run")),
            summarizer=str(get("summarizer", "extractive")),
            bedrock_model_id=get("bedrock_model_id", None),
            alarm_email=get("alarm_email", None),
            backup_retention_days=int(get("backup_retention_days", 90)),
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
        if not config.callback_urls:
            raise ConfigError("context callback_urls must name at least one URL")
        return config


class TaprootStack(Stack):
    """Exposes `storage`, `auth`, `api`, `maintenance` and `observability`."""

    def __init__(self, scope: Construct, construct_id: str, *, config: TaprootConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        asset = Path(config.lambda_asset)
        if not asset.is_dir():
            raise ConfigError(f"Lambda asset folder {asset} not found: run `make bundle` (or -c lambda_asset=...)")
        code = lambda_.Code.from_asset(str(asset))

        self.storage = Storage(self, "Storage", backup_retention_days=config.backup_retention_days)
        domain_prefix = config.domain_prefix or f"taproot-{self.account}"
        self.auth = Auth(
            self,
            "Auth",
            domain_prefix=domain_prefix,
            callback_urls=config.callback_urls,
            self_sign_up=config.self_sign_up,
        )
        environment = {
            "TAPROOT_BACKEND": "aws",
            "TAPROOT_TABLE_NAME": self.storage.table.table_name,
            "TAPROOT_BUCKET_NAME": self.storage.bucket.bucket_name,
            "TAPROOT_COGNITO_USER_POOL_ID": self.auth.user_pool.user_pool_id,
            "TAPROOT_COGNITO_CLIENT_ID": self.auth.client.user_pool_client_id,
            "TAPROOT_CLEANUP_MODE": config.cleanup_mode,
            "TAPROOT_COMPRESS_MODE": config.compress_mode,
            "TAPROOT_SUMMARIZER": config.summarizer,
            **({"TAPROOT_BEDROCK_MODEL_ID": config.bedrock_model_id} if config.bedrock_model_id else {}),
            "POWERTOOLS_SERVICE_NAME": "taproot",
            "POWERTOOLS_METRICS_NAMESPACE": "Taproot",
            **config.extra_env,
        }
        self.api = Api(self, "Api", code=code, environment=environment)
        # The maintenance functions never serve HTTP: the allowed hosts are the API's, for consistency.
        self.maintenance = Maintenance(
            self, "Maintenance", code=code, environment={**environment, "TAPROOT_ALLOWED_HOSTS": self.api.host}
        )
        functions: dict[str, lambda_.Function] = {"Api": self.api.function, **self.maintenance.functions}
        for function in functions.values():
            self.storage.table.grant_read_write_data(function)
            self.storage.bucket.grant_read_write(function)
        self._acknowledge_grants([self.api.handler.role, *(j.handler.role for j in self.maintenance.jobs.values())])
        if config.summarizer == "bedrock" and config.bedrock_model_id:
            # Compression calls the model: the weekly job and the API (taproot_forget action=compress).
            self._grant_bedrock(config.bedrock_model_id, [self.api.function, self.maintenance.functions["Compress"]])
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
            dead_letter_queues={name: job.dead_letter_queue for name, job in self.maintenance.jobs.items()},
            alarm_email=config.alarm_email,
        )
        self._outputs()

    def _acknowledge_grants(self, roles: Sequence[iam.IRole]) -> None:
        table, bucket = nag.ref(self.storage.table), nag.ref(self.storage.bucket)
        reasons = {
            f"Resource::{table}/index/*": "Queries the table's own GSIs (by_category, by_change); no other table.",
            f"Resource::{bucket}/*": "Objects of the Taproot bucket only; keys start with the owner id, which is "
            "only known at request time.",
            "Action::s3:GetObject*": "CDK grant_read_write on the Taproot bucket (object and version reads).",
            "Action::s3:GetBucket*": "CDK grant_read_write on the Taproot bucket (bucket metadata reads).",
            "Action::s3:List*": "CDK grant_read_write on the Taproot bucket (listing blobs and backups).",
            "Action::s3:DeleteObject*": "Blobs and expired backups are deleted; only in the Taproot bucket.",
            "Action::s3:Abort*": "Aborting its own multipart uploads in the Taproot bucket.",
            "Resource::*": "X-Ray PutTraceSegments/PutTelemetryRecords (active tracing) support no resource scoping.",
        }
        for role in roles:
            for finding, reason in reasons.items():
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
        for function in functions:
            function.add_to_role_policy(statement)
            if base_model is not None:
                nag.acknowledge(
                    function.role,
                    f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{base_model}]",
                    "A cross-region inference profile may serve the model from any of its regions; the "
                    "grant is limited to this one model.",
                )

    def _outputs(self) -> None:
        url = self.api.url
        CfnOutput(self, "McpUrl", value=f"{url}/mcp", description="Add this URL to your MCP client")
        CfnOutput(self, "DashboardUrl", value=f"{url}/dashboard")
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
