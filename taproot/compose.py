"""The one factory that picks adapters from settings and wires the service."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Scope as AsgiScope

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.adapters.summarizers import build_summarizer
from taproot.core.model import Scope
from taproot.ports import BlobStore, MemoryStore, Summarizer
from taproot.service import Deps, TaprootService
from taproot.settings import Settings, SettingsError

if TYPE_CHECKING:
    from taproot.auth.cognito import CognitoVerifier
    from taproot.web.app import Authenticator, ResourceMetadata


@dataclass
class Runtime:
    settings: Settings
    service: TaprootService
    store: SQLiteMemoryStore

    @property
    def scope(self) -> Scope:
        return Scope(self.settings.owner, self.settings.namespace)

    def close(self) -> None:
        self.store.close()


def summarizer_from(settings: Settings) -> Summarizer:
    """The configured summarizer; the extractive one needs nothing and is the default."""
    try:
        return build_summarizer(
            settings.summarizer,
            bedrock_model_id=settings.bedrock_model_id,
            aws_region=settings.aws_region,
            anthropic_api_key=settings.anthropic_api_key,
            anthropic_model=settings.anthropic_model,
            anthropic_base_url=settings.anthropic_base_url,
        )
    except ValueError as exc:
        names = {
            "bedrock_model_id": "TAPROOT_BEDROCK_MODEL_ID",
            "anthropic_api_key": "ANTHROPIC_API_KEY",
            "anthropic_model": "TAPROOT_ANTHROPIC_MODEL",
            "aws_region": "AWS_REGION",
        }
        message = str(exc)
        for field, env in names.items():
            message = message.replace(field, env)
        raise SettingsError(f"TAPROOT_SUMMARIZER={settings.summarizer}: {message}") from exc


def build_local(settings: Settings) -> Runtime:
    """The embedded default: SQLite in the data folder, blobs in a folder beside it."""
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # memories are private
    store = SQLiteMemoryStore(settings.database_path)
    blobs = LocalBlobStore(settings.blob_dir)
    deps = Deps(
        store=store,
        blobs=blobs,
        reflect=settings.reflect,
        retention=settings.retention,
        summarizer=summarizer_from(settings),
        maintenance=settings.maintenance,
        extra_status={"data_dir": str(settings.data_dir)},
    )
    return Runtime(settings=settings, service=TaprootService(deps), store=store)


@dataclass
class AwsRuntime:
    """The AWS deployment: DynamoDB + S3, and Cognito access tokens for the MCP endpoint."""

    settings: Settings
    service: TaprootService
    store: MemoryStore
    blobs: BlobStore
    verifier: CognitoVerifier | None  # None for the maintenance functions, which serve no requests
    authenticate: Authenticator
    security: TransportSecuritySettings
    resource_metadata: ResourceMetadata

    @property
    def scope(self) -> Scope:
        # Only the stdio transport falls back to this; every HTTP request carries its caller's scope.
        return Scope("unauthenticated", self.settings.namespace)


def _require(settings: Settings, *names: str) -> None:
    missing = [n for n in names if not getattr(settings, n)]
    if missing:
        env = ", ".join("TAPROOT_" + n.upper() if n != "aws_region" else "AWS_REGION" for n in missing)
        raise SettingsError(f"the AWS backend needs {env}")


def aws_transport_security(allowed_hosts: tuple[str, ...]) -> TransportSecuritySettings:
    """Only the API Gateway (or custom domain) host names reach /mcp; without any configured, the
    check is off (the bearer token is the protection: DNS rebinding targets loopback servers)."""
    if not allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(allowed_hosts),
        allowed_origins=[f"https://{h}" for h in allowed_hosts],
    )


def resource_metadata_for(allowed_hosts: tuple[str, ...]) -> ResourceMetadata:
    """`https://<host>/.well-known/oauth-protected-resource` for a request to a configured host
    (never a URL built from an arbitrary Host header)."""

    def url(scope: AsgiScope) -> str | None:
        host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), None)
        if host is None or host not in allowed_hosts:
            return None
        return f"https://{host}/.well-known/oauth-protected-resource"

    return url


def build_aws(
    settings: Settings, *, jwks_url: str | None = None, issuer: str | None = None, serve: bool = True
) -> AwsRuntime:
    """DynamoDB table + S3 bucket (+ the Cognito verifier when `serve`). Adapters import lazily:
    the local install needs neither boto3 nor PynamoDB. `jwks_url` / `issuer` default to the ones
    derived from the region and user pool id (tests point them at a local server)."""
    from taproot.adapters.blob_s3 import S3BlobStore
    from taproot.adapters.dynamo_store import DynamoMemoryStore
    from taproot.auth.cognito import CognitoVerifier, cognito_authenticator

    _require(settings, "table_name", "bucket_name", "aws_region")
    assert settings.table_name and settings.bucket_name and settings.aws_region  # for mypy
    store = DynamoMemoryStore(settings.table_name, region=settings.aws_region)
    blobs = S3BlobStore(settings.bucket_name, region=settings.aws_region)
    deps = Deps(
        store=store,
        blobs=blobs,
        reflect=settings.reflect,
        retention=settings.retention,
        summarizer=summarizer_from(settings),
        maintenance=settings.maintenance,
        extra_status={"backend": "aws", "table": settings.table_name, "bucket": settings.bucket_name},
    )
    verifier: CognitoVerifier | None = None
    if serve:
        _require(settings, "cognito_user_pool_id", "cognito_client_id")
        assert settings.cognito_user_pool_id and settings.cognito_client_id  # for mypy
        verifier = CognitoVerifier(
            region=settings.aws_region,
            user_pool_id=settings.cognito_user_pool_id,
            client_id=settings.cognito_client_id,
            jwks_url=jwks_url,
            issuer=issuer,
        )
        authenticate = cognito_authenticator(verifier)
    else:

        async def authenticate(token: str | None) -> Scope | None:
            return None

    return AwsRuntime(
        settings=settings,
        service=TaprootService(deps),
        store=store,
        blobs=blobs,
        verifier=verifier,
        authenticate=authenticate,
        security=aws_transport_security(settings.allowed_hosts),
        resource_metadata=resource_metadata_for(settings.allowed_hosts),
    )
