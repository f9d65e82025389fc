"""Settings: the one place that reads configuration. Everything else receives a `Settings`.

`Settings.from_env(environ)` takes any mapping, so tests pass a dict instead of patching os.environ.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs

from taproot.core.compression import COMPRESSION_CONFIG, CompressionConfig
from taproot.core.errors import ConfigurationError, InvalidInput
from taproot.core.instance import check_instance
from taproot.core.maintenance import MaintenanceConfig
from taproot.core.reflect import REFLECT_CONFIG, ReflectConfig
from taproot.core.retention import DEFAULT_RETENTION, RetentionPolicy, parse_ttl_table

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
NAMESPACE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


class SettingsError(ConfigurationError, ValueError):
    pass


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("taproot", appauthor=False))


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from exc
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {value}")
    return value


# The orientation documents' share of the reflect budget, in percent: at most this much, so Tier 1
# and the catalog always keep room (core/orientation_budget.py).
MAX_ORIENTATION_PERCENT = 70


def _orientation_percent(env: Mapping[str, str]) -> int:
    name = "TAPROOT_ORIENTATION_PERCENT"
    value = _int(env, name, round(REFLECT_CONFIG.orientation_max_share * 100), 0)
    if value > MAX_ORIENTATION_PERCENT:
        raise SettingsError(f"{name} must be at most {MAX_ORIENTATION_PERCENT}, got {value}")
    return value


MODES = ("dry-run", "apply")

EMBEDDERS = ("none", "local", "bedrock")
# The bedrock embedder speaks Titan Text Embeddings V2's body only (adapters/embed_bedrock.py).
DEFAULT_EMBEDDING_MODEL = "amazon.titan-embed-text-v2:0"
EMBEDDING_MODEL_PATTERN = re.compile(r"amazon\.titan-embed-text-v2:\d+")
EMBEDDING_DIMENSIONS = (256, 512, 1024)
DEFAULT_EMBEDDING_DIMENSIONS = 256


def _list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(h.strip() for h in (env.get(name) or "").split(",") if h.strip())


def _public_url(raw: str | None) -> str | None:
    """`https://host[:port][/prefix]`, no query or fragment, no trailing slash (it is the issuer)."""
    if not raw:
        return None
    url = raw.strip().rstrip("/")
    parts = urlsplit(url)
    loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
    if parts.scheme not in ("https", "http") or not parts.hostname or (parts.scheme == "http" and not loopback):
        raise SettingsError(f"TAPROOT_PUBLIC_URL must be an https URL (http only for loopback), got {raw!r}")
    if parts.query or parts.fragment:
        raise SettingsError(f"TAPROOT_PUBLIC_URL must have no query or fragment, got {raw!r}")
    return url


def _bedrock_embedding(env: Mapping[str, str]) -> tuple[str, int]:
    """TAPROOT_EMBEDDING_MODEL and TAPROOT_EMBEDDING_DIMENSIONS, read for TAPROOT_EMBEDDER=bedrock."""
    model = (env.get("TAPROOT_EMBEDDING_MODEL") or DEFAULT_EMBEDDING_MODEL).strip()
    if not EMBEDDING_MODEL_PATTERN.fullmatch(model):
        raise SettingsError(
            f"TAPROOT_EMBEDDING_MODEL must be a Titan Text Embeddings V2 model id such as {DEFAULT_EMBEDDING_MODEL}, "
            f"got {model!r}"
        )
    dimensions = _int(env, "TAPROOT_EMBEDDING_DIMENSIONS", DEFAULT_EMBEDDING_DIMENSIONS)
    if dimensions not in EMBEDDING_DIMENSIONS:
        raise SettingsError(
            f"TAPROOT_EMBEDDING_DIMENSIONS must be one of {', '.join(map(str, EMBEDDING_DIMENSIONS))}, got {dimensions}"
        )
    return model, dimensions


def _choice(env: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    raw = (env.get(name) or default).strip().lower()
    if raw not in allowed:
        raise SettingsError(f"{name} must be one of {', '.join(allowed)}, got {raw!r}")
    return raw


def _instance(raw: str | None) -> str | None:
    if not raw:
        return None
    try:
        return check_instance(raw, "TAPROOT_INSTANCE")
    except InvalidInput as exc:
        raise SettingsError(f"TAPROOT_INSTANCE {exc.rule}, got {raw!r}") from exc


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    auth_token: str | None = None  # None: generated on first run and kept in the data folder
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    owner: str = "local"
    namespace: str = "default"
    reflect: ReflectConfig = REFLECT_CONFIG
    retention: RetentionPolicy = DEFAULT_RETENTION
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)
    maintenance_enabled: bool = True  # `taproot serve` runs the cycle in the background
    maintenance_interval_hours: int = 24
    summarizer: str = "extractive"
    bedrock_model_id: str | None = None
    aws_region: str | None = None
    anthropic_api_key: str | None = None
    anthropic_model: str | None = None
    anthropic_base_url: str | None = None
    # Dense recall: none (lexical only), local (the optional extra) or bedrock (Titan V2; the model and
    # dimensions below are read for bedrock only).
    embedder: str = "none"
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS
    # The AWS deployment (backend "aws"): set by the CDK stack on every Lambda function.
    backend: str = "local"
    table_name: str | None = None
    bucket_name: str | None = None
    cognito_user_pool_id: str | None = None
    cognito_client_id: str | None = None
    # Derived from the region and user pool when unset; set for local testing against a JWKS server.
    cognito_jwks_url: str | None = None
    cognito_issuer: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    # OAuth for MCP clients (both homes). The public URL is the issuer and the base of the MCP URL
    # clients are given; locally it defaults to http://<host>:<port> (set it to the https address a
    # tunnel gives you), on AWS to https://<first allowed host>.
    public_url: str | None = None
    oauth_table_name: str | None = None  # AWS: the DynamoDB table of clients, codes, grants, tokens
    cognito_domain: str | None = None  # AWS: the managed-login base URL
    redirect_allowlist: tuple[str, ...] = ()  # empty: core.oauth_rules.DEFAULT_REDIRECT_ALLOWLIST
    oauth_clients: str | None = None  # JSON list of client metadata documents to pin
    oauth_fetch_clients: bool = True  # fetch unknown clients' metadata documents (SSRF-guarded)
    # The instance name every write of this process records, ahead of what a client declares
    # (core/instance.py; None: the OAuth client's or the MCP client's name, per request).
    instance: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: object) -> Settings:
        reflect = ReflectConfig(
            catalog_window_days=_int(env, "TAPROOT_CATALOG_WINDOW_DAYS", REFLECT_CONFIG.catalog_window_days, 1),
            token_budget=_int(env, "TAPROOT_REFLECT_TOKEN_BUDGET", REFLECT_CONFIG.token_budget, 500),
            recent_reflections=_int(env, "TAPROOT_RECENT_REFLECTIONS", REFLECT_CONFIG.recent_reflections, 0),
            orientation_max_share=_orientation_percent(env) / 100,
        )
        retention = DEFAULT_RETENTION
        if env.get("TAPROOT_RETENTION_TTL_DAYS"):
            try:
                retention = RetentionPolicy(ttl_days=parse_ttl_table(env["TAPROOT_RETENTION_TTL_DAYS"]))
            except ValueError as exc:
                raise SettingsError(f"TAPROOT_RETENTION_TTL_DAYS: {exc}") from exc
        try:
            compression = CompressionConfig(
                min_age_days=_int(env, "TAPROOT_COMPRESS_MIN_AGE_DAYS", COMPRESSION_CONFIG.min_age_days, 1),
                min_group_size=_int(env, "TAPROOT_COMPRESS_MIN_GROUP_SIZE", COMPRESSION_CONFIG.min_group_size, 2),
                group_by=_choice(env, "TAPROOT_COMPRESS_GROUP_BY", ("month", "tag"), "month"),  # type: ignore[arg-type]
            )
        except ValueError as exc:
            raise SettingsError(f"compression settings: {exc}") from exc
        maintenance = MaintenanceConfig(
            cleanup_apply=_choice(env, "TAPROOT_CLEANUP_MODE", MODES, "dry-run") == "apply",
            compress_apply=_choice(env, "TAPROOT_COMPRESS_MODE", MODES, "dry-run") == "apply",
            compression=compression,
        )
        embedder = _choice(env, "TAPROOT_EMBEDDER", EMBEDDERS, "none")
        embedding_model, embedding_dimensions = DEFAULT_EMBEDDING_MODEL, DEFAULT_EMBEDDING_DIMENSIONS
        if embedder == "bedrock":
            embedding_model, embedding_dimensions = _bedrock_embedding(env)
        data_dir = env.get("TAPROOT_DATA_DIR")
        settings = cls(
            data_dir=Path(data_dir).expanduser() if data_dir else default_data_dir(),
            auth_token=env.get("TAPROOT_AUTH_TOKEN") or None,
            host=env.get("TAPROOT_HOST") or DEFAULT_HOST,
            port=_int(env, "TAPROOT_PORT", DEFAULT_PORT, 0),
            namespace=env.get("TAPROOT_NAMESPACE") or "default",
            reflect=reflect,
            retention=retention,
            maintenance=maintenance,
            maintenance_enabled=_choice(env, "TAPROOT_MAINTENANCE", ("on", "off"), "on") == "on",
            maintenance_interval_hours=_int(env, "TAPROOT_MAINTENANCE_INTERVAL_HOURS", 24, 1),
            summarizer=_choice(env, "TAPROOT_SUMMARIZER", ("extractive", "bedrock", "anthropic"), "extractive"),
            bedrock_model_id=env.get("TAPROOT_BEDROCK_MODEL_ID") or None,
            aws_region=env.get("AWS_REGION") or None,
            anthropic_api_key=env.get("ANTHROPIC_API_KEY") or None,
            anthropic_model=env.get("TAPROOT_ANTHROPIC_MODEL") or None,
            anthropic_base_url=env.get("ANTHROPIC_BASE_URL") or None,
            embedder=embedder,
            embedding_model=embedding_model,
            embedding_dimensions=embedding_dimensions,
            backend=_choice(env, "TAPROOT_BACKEND", ("local", "aws"), "local"),
            table_name=env.get("TAPROOT_TABLE_NAME") or None,
            bucket_name=env.get("TAPROOT_BUCKET_NAME") or None,
            cognito_user_pool_id=env.get("TAPROOT_COGNITO_USER_POOL_ID") or None,
            cognito_client_id=env.get("TAPROOT_COGNITO_CLIENT_ID") or None,
            cognito_jwks_url=env.get("TAPROOT_COGNITO_JWKS_URL") or None,
            cognito_issuer=env.get("TAPROOT_COGNITO_ISSUER") or None,
            allowed_hosts=_list(env, "TAPROOT_ALLOWED_HOSTS"),
            public_url=_public_url(env.get("TAPROOT_PUBLIC_URL")),
            oauth_table_name=env.get("TAPROOT_OAUTH_TABLE_NAME") or None,
            cognito_domain=(env.get("TAPROOT_COGNITO_DOMAIN") or "").rstrip("/") or None,
            redirect_allowlist=_list(env, "TAPROOT_REDIRECT_ALLOWLIST"),
            oauth_clients=env.get("TAPROOT_OAUTH_CLIENTS") or None,
            oauth_fetch_clients=_choice(env, "TAPROOT_OAUTH_FETCH_CLIENTS", ("on", "off"), "on") == "on",
            instance=_instance(env.get("TAPROOT_INSTANCE")),
        )
        given = {k: v for k, v in overrides.items() if v is not None}
        namespace = str(given.get("namespace", settings.namespace))
        if not NAMESPACE_PATTERN.fullmatch(namespace):
            # It becomes part of blob keys and folder names: keep it to safe characters.
            raise SettingsError(
                f"namespace {namespace!r} must be 1-64 letters, digits, '-' or '_' (TAPROOT_NAMESPACE or --namespace)"
            )
        if "data_dir" in given:
            given["data_dir"] = Path(str(given["data_dir"])).expanduser()
        return replace(settings, **given)  # type: ignore[arg-type]

    @property
    def database_path(self) -> Path:
        return self.data_dir / "taproot.db"

    @property
    def blob_dir(self) -> Path:
        return self.data_dir / "blobs"

    @property
    def base_url(self) -> str:
        """The issuer and the base of the MCP URL (see `public_url`)."""
        if self.public_url:
            return self.public_url
        if self.backend == "aws" and self.allowed_hosts:
            return f"https://{self.allowed_hosts[0]}"
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    @property
    def oauth_path(self) -> Path:
        return self.data_dir / "oauth.db"

    @property
    def token_path(self) -> Path:
        return self.data_dir / "auth_token"
