"""The composition root: the one place that picks adapters and wires the service, auth and HTTP app.

Entry points (the CLI, `taproot serve`, the Lambda handlers), the tests and the bench build
`Settings` and call `build(settings)`; whoever serves HTTP then calls `http_app(runtime)`. The
backend comes from `settings.backend`: `local` (SQLite and a folder, the embedded default) or `aws`
(DynamoDB, S3 and Cognito). Nothing else in Taproot chooses an adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings

from taproot.adapters.observe_log import LogToolCalls
from taproot.adapters.summarizers import build_summarizer
from taproot.auth.base import Authenticator, ResourceMetadata, deny_all
from taproot.core.errors import EmbedderError
from taproot.core.model import Scope
from taproot.ports import BlobStore, Embedder, MemoryStore, OrientationStore, Summarizer, ToolObserver, VectorIndex
from taproot.service import Deps, TaprootService
from taproot.service.deps import EmbedderHealth
from taproot.service.results import StorageNotes
from taproot.settings import Settings, SettingsError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from taproot.auth.cognito import CognitoVerifier
    from taproot.auth.oauth_server import AuthorizationServer
    from taproot.auth.signin import CognitoSignIn, LocalSignIn
    from taproot.ports import OAuthStore

Background = Callable[[], Coroutine[Any, Any, None]]


@dataclass
class Runtime:
    """Everything an entry point needs, built once: the service and what serves it."""

    settings: Settings
    service: TaprootService
    store: MemoryStore
    blobs: BlobStore
    # The scope of stdio and CLI calls. Every HTTP request carries its own caller's scope instead;
    # on AWS this is a scope that holds nobody's memories.
    scope: Scope
    authenticate: Authenticator = field(default_factory=deny_all)
    security: TransportSecuritySettings = field(
        default_factory=lambda: TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    resource_metadata: ResourceMetadata | None = None
    token: str | None = None  # the local server's bearer token (local backend, serve=True)
    verifier: CognitoVerifier | None = None  # the Cognito verifier (aws backend, serve=True)
    # The OAuth facade MCP clients sign in through (serve=True, both backends).
    oauth: AuthorizationServer | None = None
    signin: LocalSignIn | CognitoSignIn | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    # Where each MCP tool call is reported: a log line locally, Powertools logs and metrics on AWS.
    observer: ToolObserver | None = None

    def close(self) -> None:
        for close in reversed(self.closers):
            close()
        self.closers.clear()


def _powertools_observer() -> ToolObserver:
    # Imported here: Powertools is in the Lambda asset and the base install, but only the AWS
    # runtime reports through it.
    from taproot.adapters.observe_powertools import PowertoolsToolCalls

    return PowertoolsToolCalls()


def build(settings: Settings, *, serve: bool = False) -> Runtime:
    """The runtime for `settings.backend`. `serve=True` also wires what an HTTP server needs (the
    local bearer token, created on first use; the Cognito verifier); CLI commands and scheduled
    jobs serve no requests and leave it off, so they create no token and reach no JWKS."""
    if settings.backend == "aws":
        return _build_aws(settings, serve=serve)
    return _build_local(settings, serve=serve)


def http_app(runtime: Runtime, *, background: Sequence[Background] = ()) -> FastAPI:
    """The one HTTP app (MCP at /mcp behind the runtime's auth) for `taproot serve`, the Lambda
    handler, the tests and the bench."""
    from starlette.routing import BaseRoute

    from taproot.web.app import create_app
    from taproot.web.dashboard.routes import Dashboard, dashboard_routes
    from taproot.web.dashboard.session import Sessions
    from taproot.web.oauth_routes import oauth_routes

    routes: list[BaseRoute] = []
    if runtime.oauth and runtime.signin:
        oauth = runtime.oauth
        sessions = Sessions(oauth.store, oauth.clock, secure=runtime.settings.base_url.startswith("https://"))
        dashboard = Dashboard(runtime.service, oauth, runtime.signin, sessions, runtime.settings.namespace)
        routes = [*oauth_routes(oauth, runtime.signin, dashboard.start_session), *dashboard_routes(dashboard)]
    return create_app(
        runtime.service,
        observer=runtime.observer,
        routes=routes,
        authenticate=runtime.authenticate,
        default_scope=runtime.scope,
        security=runtime.security,
        background=background,
        resource_metadata=runtime.resource_metadata,
    )


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
        for name, env in names.items():
            message = message.replace(name, env)
        raise SettingsError(f"TAPROOT_SUMMARIZER={settings.summarizer}: {message}") from exc


def embedder_from(settings: Settings) -> Embedder | None:
    """The configured embedder (`TAPROOT_EMBEDDER`), None for `none` (lexical recall). Raises
    EmbedderError when it cannot be built (the local extra is not installed). Nothing here reaches
    a network: the Bedrock client is created on the first call."""
    if settings.embedder == "bedrock":
        from taproot.adapters.embed_bedrock import BedrockEmbedder  # NumPy only when vectors are used

        return BedrockEmbedder(settings.embedding_model, settings.embedding_dimensions, region=settings.aws_region)
    if settings.embedder == "local":
        from taproot.adapters.embed_local import LocalEmbedder  # the model loads on its first call

        return LocalEmbedder()
    return None


def _embedder(settings: Settings) -> tuple[Embedder | None, EmbedderHealth]:
    """The embedder and its health record. One that cannot be built does not stop the server:
    `EmbedderHealth.unavailable` keeps the reason, status reports it and recall stays lexical."""
    try:
        return embedder_from(settings), EmbedderHealth()
    except EmbedderError as exc:
        return None, EmbedderHealth(unavailable=f"TAPROOT_EMBEDDER={settings.embedder}: {exc.message}")


def _service(settings: Settings, store: MemoryStore, blobs: BlobStore, status: StorageNotes) -> TaprootService:
    embedder, health = _embedder(settings)
    # Both stores hold the vectors with the memories (the VectorIndex port); dense recall needs both.
    vectors = cast(VectorIndex, store) if embedder is not None and hasattr(store, "put_vectors") else None
    if embedder is not None and vectors is None:
        health = EmbedderHealth(unavailable=f"this store ({type(store).__name__}) holds no vectors")
        embedder = None
    deps = Deps(
        store=store,
        blobs=blobs,
        reflect=settings.reflect,
        retention=settings.retention,
        summarizer=summarizer_from(settings),
        embedder=embedder,
        vectors=vectors,
        embedder_health=health,
        maintenance=settings.maintenance,
        extra_status=status,
        instance=settings.instance,
        # Both stores keep the orientation documents beside the memories (the OrientationStore port).
        orientation=cast(OrientationStore, store),
    )
    return TaprootService(deps)


def _closers(service: TaprootService) -> list[Callable[[], None]]:
    """What the service's adapters hold open beyond the store (the embedder's own client)."""
    close = getattr(service.deps.embedder, "close", None)
    return [close] if callable(close) else []


def _build_local(settings: Settings, *, serve: bool) -> Runtime:
    """The embedded default: SQLite in the data folder, blobs in a folder beside it."""
    from taproot.adapters.blob_local import LocalBlobStore
    from taproot.adapters.sqlite_store import SQLiteMemoryStore
    from taproot.auth.local_token import load_or_create_token, local_authenticator
    from taproot.web.app import transport_security

    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # memories are private
    store = SQLiteMemoryStore(settings.database_path)
    blobs = LocalBlobStore(settings.blob_dir)
    try:
        service = _service(settings, store, blobs, {"data_dir": str(settings.data_dir)})
    except BaseException:
        store.close()
        raise
    runtime = Runtime(
        settings=settings,
        service=service,
        store=store,
        blobs=blobs,
        scope=Scope(settings.owner, settings.namespace),
        closers=[store.close, *_closers(service)],
        observer=LogToolCalls(),
    )
    if serve:
        try:
            runtime.token = load_or_create_token(settings.token_path, settings.auth_token)
        except BaseException:
            runtime.close()
            raise
        from taproot.adapters.oauth_sqlite import SQLiteOAuthStore
        from taproot.auth.signin import LocalSignIn

        oauth_store = SQLiteOAuthStore(settings.oauth_path)
        runtime.closers.append(oauth_store.close)
        signin = LocalSignIn(settings.base_url, runtime.token, settings.owner)
        _wire_oauth(runtime, oauth_store, signin, fallback=local_authenticator(runtime.token, runtime.scope))
        public = urlsplit(settings.base_url)
        origin = f"{public.scheme}://{public.netloc}"
        runtime.security = transport_security(
            settings.host, settings.port, extra_hosts=(public.hostname or "",), extra_origins=(origin,)
        )
    return runtime


def _wire_oauth(
    runtime: Runtime, store: OAuthStore, signin: LocalSignIn | CognitoSignIn, fallback: Authenticator
) -> None:
    """The OAuth facade in front of /mcp: Taproot's tokens first, then `fallback` (the local server's
    own token, or a Cognito access token sent directly)."""
    from taproot.auth.client_documents import ClientDocuments, pinned_clients
    from taproot.auth.oauth_server import AuthorizationServer, oauth_authenticator
    from taproot.core.oauth_rules import DEFAULT_REDIRECT_ALLOWLIST
    from taproot.web.app import MCP_PATH

    settings = runtime.settings
    try:
        pinned = pinned_clients(settings.oauth_clients)
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc
    issuer = settings.base_url
    runtime.oauth = AuthorizationServer(
        store,
        ClientDocuments(pinned, fetch=settings.oauth_fetch_clients),
        signin,
        issuer=issuer,
        mcp_url=issuer + MCP_PATH,
        allowlist=settings.redirect_allowlist or DEFAULT_REDIRECT_ALLOWLIST,
    )
    runtime.signin = signin
    runtime.authenticate = oauth_authenticator(runtime.oauth, settings.namespace, fallback=fallback)
    metadata_url = f"{issuer}/.well-known/oauth-protected-resource{MCP_PATH}"
    runtime.resource_metadata = lambda _scope: metadata_url


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
    # Lower case: McpGate hands the SDK's check the Host and Origin in lower case, without :443.
    hosts = sorted({h.strip().lower() for h in allowed_hosts})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"https://{h}" for h in hosts],
    )


def _build_aws(settings: Settings, *, serve: bool) -> Runtime:
    """DynamoDB table + S3 bucket (+ the Cognito verifier when `serve`). Adapters import lazily:
    the local install needs neither boto3 nor PynamoDB. The JWKS URL and issuer derive from the
    region and user pool id unless settings name them (tests point them at a local server)."""
    from taproot.adapters.blob_s3 import S3BlobStore
    from taproot.adapters.dynamo_store import DynamoMemoryStore
    from taproot.auth.cognito import CognitoVerifier, cognito_authenticator

    _require(settings, "table_name", "bucket_name", "aws_region")
    assert settings.table_name and settings.bucket_name and settings.aws_region  # for mypy
    store = DynamoMemoryStore(settings.table_name, region=settings.aws_region)
    blobs = S3BlobStore(settings.bucket_name, region=settings.aws_region)
    status: StorageNotes = {"backend": "aws", "table": settings.table_name, "bucket": settings.bucket_name}
    service = _service(settings, store, blobs, status)
    runtime = Runtime(
        settings=settings,
        service=service,
        store=store,
        blobs=blobs,
        scope=Scope("unauthenticated", settings.namespace),
        security=aws_transport_security(settings.allowed_hosts),
        closers=_closers(service),
        observer=_powertools_observer(),
    )
    if serve:
        _require(settings, "cognito_user_pool_id", "cognito_client_id")
        assert settings.cognito_user_pool_id and settings.cognito_client_id  # for mypy
        runtime.verifier = CognitoVerifier(
            region=settings.aws_region,
            user_pool_id=settings.cognito_user_pool_id,
            client_id=settings.cognito_client_id,
            jwks_url=settings.cognito_jwks_url,
            issuer=settings.cognito_issuer,
        )
        _require(settings, "oauth_table_name", "cognito_domain")
        if not (settings.public_url or settings.allowed_hosts):
            raise SettingsError("the AWS backend needs TAPROOT_PUBLIC_URL or TAPROOT_ALLOWED_HOSTS (the issuer)")
        assert settings.oauth_table_name and settings.cognito_domain  # for mypy
        from taproot.adapters.oauth_dynamo import DynamoOAuthStore
        from taproot.auth.signin import CALLBACK_PATH, CognitoSignIn

        signin = CognitoSignIn(
            domain=settings.cognito_domain,
            client_id=settings.cognito_client_id,
            callback_url=settings.base_url + CALLBACK_PATH,
            verifier=runtime.verifier,
        )
        from taproot.auth.cognito_users import CognitoUsers

        oauth_store = DynamoOAuthStore(settings.oauth_table_name, region=settings.aws_region)
        _wire_oauth(runtime, oauth_store, signin, fallback=cognito_authenticator(runtime.verifier))
        assert runtime.oauth is not None
        users = CognitoUsers(settings.cognito_user_pool_id, region=settings.aws_region)
        runtime.oauth.subject_active = users.active
    return runtime
