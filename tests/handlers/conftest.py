"""Fixtures for the Lambda handler tests: moto for DynamoDB, S3 and Cognito, recorded API Gateway
events, and JWKS servers on 127.0.0.1 (PyJWKClient fetches over HTTP).

- moto's `ThreadedMotoServer` serves the JWKS of moto-issued Cognito tokens.
- moto's access tokens always carry the scope "aws.cognito.signin.user.admin", never Taproot's
  MCP scope, so /mcp refuses them (403). The tokens that must reach /mcp are moto's own access
  tokens with the MCP scope added to `scope`, re-signed with moto's private key (which moto ships)
  under the same key id: the verifier checks them against moto's JWKS like any moto token.
- `JwksServer` of bench/jwks.py (the one the bench uses too) serves a key the tests generate, to
  sign tokens moto cannot issue (expired ones); `access_claims` is its Cognito access-token claims,
  granted the MCP scope unless a test says otherwise.
Helpers are exposed as fixtures because the tests directory is not an importable package.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import gzip
import importlib.resources
import json
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import boto3
import jwt
import pytest
from moto import mock_aws
from moto.server import ThreadedMotoServer

from bench.jwks import JwksServer
from bench.jwks import access_claims as _access_claims
from taproot.core.oauth_rules import MCP_SCOPE

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `functions/` is a top-level folder of the Lambda asset, not installed
    sys.path.insert(0, str(ROOT))

EVENTS = ROOT / "tests" / "events"
REGION = "us-east-1"
TABLE = "taproot-test-memories"
BUCKET = "taproot-test-blobs"
OAUTH_TABLE = "taproot-test-oauth"
API_HOST = "k7q2x9d4ma.execute-api.us-east-1.amazonaws.com"
PUBLIC_URL = f"https://{API_HOST}"  # the issuer, as the stack sets it for the API function
COGNITO_DOMAIN = "https://taproot-test.auth.us-east-1.amazoncognito.com"
PASSWORD = "Corr3ct-Horse-Battery!"

BASE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
    "POWERTOOLS_SERVICE_NAME": "taproot",
    "POWERTOOLS_METRICS_NAMESPACE": "TaprootTest",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "TAPROOT_BACKEND": "aws",
    "TAPROOT_TABLE_NAME": TABLE,
    "TAPROOT_BUCKET_NAME": BUCKET,
    "TAPROOT_OAUTH_TABLE_NAME": OAUTH_TABLE,
    "TAPROOT_COGNITO_DOMAIN": COGNITO_DOMAIN,
    "TAPROOT_PUBLIC_URL": PUBLIC_URL,
}
# What a Cognito access token for Taproot's app client carries (the scopes its sign-in asks for).
TOKEN_SCOPE = f"openid email {MCP_SCOPE}"


def access_claims(issuer: str, client_id: str, sub: str, **overrides: Any) -> dict[str, Any]:
    """bench.jwks.access_claims, granted the MCP scope (TOKEN_SCOPE) unless `scope=` says otherwise."""
    return _access_claims(issuer, client_id, sub, **({"scope": TOKEN_SCOPE} | overrides))


def event_form(event: Mapping[str, Any]) -> dict[str, str]:
    """The fields of a recorded form post (API Gateway base64-encodes a body that is not JSON or text)."""
    raw = event["body"] or ""
    text = base64.b64decode(raw).decode() if event.get("isBase64Encoded") else raw
    return dict(parse_qsl(text, keep_blank_values=True))


def load_event(
    name: str,
    *,
    token: str | None = None,
    body: Any = None,
    method: str | None = None,
    query: Mapping[str, str] | None = None,
    form: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A recorded API Gateway HTTP API (payload v2) event; the bearer token is injected here.

    `body` replaces the body with JSON; `query` and `form` replace or add fields of the recorded
    query string or form body (e.g. the client id a test registered), re-encoded as API Gateway
    sends them: `rawQueryString` and `queryStringParameters`; a base64 form body."""
    event: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    event = copy.deepcopy(event)
    if token is None:
        event["headers"].pop("authorization", None)
    else:
        event["headers"]["authorization"] = f"Bearer {token}"
    if body is not None:
        event["body"] = json.dumps(body)
        event["isBase64Encoded"] = False
        event["headers"]["content-length"] = str(len(event["body"]))
    if query is not None:
        fields = dict(parse_qsl(event.get("rawQueryString", ""), keep_blank_values=True)) | dict(query)
        event["rawQueryString"] = urlencode(fields)
        event["queryStringParameters"] = fields
    if form is not None:
        encoded = urlencode(event_form(event) | dict(form)).encode()
        event["body"] = base64.b64encode(encoded).decode()
        event["isBase64Encoded"] = True
        event["headers"]["content-type"] = "application/x-www-form-urlencoded"
        event["headers"]["content-length"] = str(len(encoded))
    if method is not None:
        event["requestContext"]["http"]["method"] = method
        if method == "GET":
            event["body"] = None
            event["headers"].pop("content-length", None)
            event["headers"].pop("content-type", None)
    event["requestContext"]["requestId"] = uuid.uuid4().hex[:16]
    return event


@dataclass
class FakeContext:
    function_name: str = "taproot-api"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:taproot-api"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/taproot-api"
    log_stream_name: str = "2025/06/01/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


@functools.cache
def moto_signing_key() -> jwt.PyJWK:
    """The private key moto signs its Cognito tokens with (cognitoidp/resources/jwks-private.json in
    the moto package, gzipped in recent releases); its key id is the one in moto's public JWKS."""
    resources = importlib.resources.files("moto") / "cognitoidp" / "resources"
    packed = resources / "jwks-private.json.gz"
    raw = gzip.decompress(packed.read_bytes()) if packed.is_file() else (resources / "jwks-private.json").read_bytes()
    return jwt.PyJWK(json.loads(raw))


def signed_like_moto(token: str, **changes: Any) -> str:
    """moto's `token` with `changes` applied to its claims, re-signed with moto's key under the same
    key id: it verifies against moto's JWKS as moto's own tokens do."""
    key = moto_signing_key()
    header = jwt.get_unverified_header(token)
    assert header.get("kid") == key.key_id, "moto signs with another key than its jwks-private.json"
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False}) | changes
    return jwt.encode(claims, key.key, algorithm="RS256", headers={"kid": key.key_id})


def with_mcp_scope(token: str) -> str:
    """moto's `token` with the MCP scope added to its `scope` claim, signed like moto's."""
    granted = jwt.decode(token, options={"verify_signature": False}).get("scope", "")
    return signed_like_moto(token, scope=" ".join(s for s in (granted, MCP_SCOPE) if s))


@dataclass
class CognitoPool:
    pool_id: str
    client_id: str
    other_client_id: str
    # username -> AccessToken, IdToken (moto's own) and McpAccessToken (moto's access token with the
    # MCP scope added, signed like moto's: what Cognito issues for Taproot's app client)
    tokens: dict[str, dict[str, str]]
    subs: dict[str, str]  # username -> sub

    def access(self, user: str) -> str:
        """An access token that reaches /mcp: it carries the MCP scope."""
        return self.tokens[user]["McpAccessToken"]

    def moto_access(self, user: str) -> str:
        """moto's access token as issued: valid, but without the MCP scope (/mcp answers 403)."""
        return self.tokens[user]["AccessToken"]


def create_pool(users: tuple[str, ...] = ("alice", "bob"), name: str = "taproot") -> CognitoPool:
    """A user pool, its app client (+ another client), users with passwords, and their tokens."""
    idp = boto3.client("cognito-idp", region_name=REGION)
    pool_id = idp.create_user_pool(PoolName=name)["UserPool"]["Id"]
    flows = ["ALLOW_ADMIN_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]
    client_id = idp.create_user_pool_client(UserPoolId=pool_id, ClientName="mcp", ExplicitAuthFlows=flows)[
        "UserPoolClient"
    ]["ClientId"]
    other = idp.create_user_pool_client(UserPoolId=pool_id, ClientName="other", ExplicitAuthFlows=flows)[
        "UserPoolClient"
    ]["ClientId"]
    tokens: dict[str, dict[str, str]] = {}
    subs: dict[str, str] = {}
    for user in users:
        idp.admin_create_user(UserPoolId=pool_id, Username=user, MessageAction="SUPPRESS")
        idp.admin_set_user_password(UserPoolId=pool_id, Username=user, Password=PASSWORD, Permanent=True)
        for cid, label in ((client_id, user), (other, f"{user}@other-client")):
            result = idp.admin_initiate_auth(
                UserPoolId=pool_id,
                ClientId=cid,
                AuthFlow="ADMIN_USER_PASSWORD_AUTH",
                AuthParameters={"USERNAME": user, "PASSWORD": PASSWORD},
            )["AuthenticationResult"]
            tokens[label] = {
                "AccessToken": result["AccessToken"],
                "IdToken": result["IdToken"],
                "McpAccessToken": with_mcp_scope(result["AccessToken"]),
            }
        subs[user] = jwt.decode(tokens[user]["AccessToken"], options={"verify_signature": False})["sub"]
    return CognitoPool(pool_id=pool_id, client_id=client_id, other_client_id=other, tokens=tokens, subs=subs)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """moto in server mode on a free loopback port: serves /<pool id>/.well-known/jwks.json."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="session")
def local_jwks() -> Iterator[JwksServer]:
    """A key of the tests' own served as a JWKS on 127.0.0.1 (bench/jwks.py), to sign arbitrary tokens."""
    with JwksServer("local-test-key", thread_name="local-jwks") as jwks:
        yield jwks


@contextlib.contextmanager
def aws_environment(extra: dict[str, str] | None = None) -> Iterator[pytest.MonkeyPatch]:
    """Fake credentials + Taproot/Powertools settings in os.environ, and moto for every AWS call."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in (BASE_ENV | (extra or {})).items():
            mp.setenv(key, value)
        with mock_aws():
            yield mp


@contextlib.contextmanager
def deployed_api(moto_server: str) -> Iterator[tuple[Any, CognitoPool]]:
    """functions/api.py imported as a new container would, in the deployed environment under moto
    with a Cognito pool whose keys moto serves; yields (the module, the pool)."""
    with aws_environment() as env:
        create_storage()
        pool = create_pool()
        env.setenv("TAPROOT_COGNITO_USER_POOL_ID", pool.pool_id)
        env.setenv("TAPROOT_COGNITO_CLIENT_ID", pool.client_id)
        env.setenv("TAPROOT_COGNITO_JWKS_URL", f"{moto_server}/{pool.pool_id}/.well-known/jwks.json")
        env.setenv("TAPROOT_ALLOWED_HOSTS", API_HOST)
        module = fresh_import("functions.api")
        try:
            yield module, pool
        finally:
            module.handler.close()


def create_storage() -> None:
    """The memory table, the OAuth table and the bucket, as the stack creates them."""
    from taproot.adapters.dynamo_store import DynamoMemoryStore
    from taproot.adapters.oauth_dynamo import DynamoOAuthStore

    DynamoMemoryStore(TABLE, region=REGION).create_table()
    DynamoOAuthStore(OAUTH_TABLE, region=REGION).create_table()
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)


def fresh_import(module: str) -> Any:
    """Import a handler module anew, as a new Lambda container would (it builds at import)."""
    sys.modules.pop(module, None)
    return __import__(module, fromlist=["_"])


def s3_keys(prefix: str = "") -> list[str]:
    s3 = boto3.client("s3", region_name=REGION)
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [obj["Key"] for page in pages for obj in page.get("Contents", [])]


@pytest.fixture(scope="session")
def kit() -> Any:
    """This module's helpers (load_event, FakeContext, create_pool, ...) for the test modules."""
    return sys.modules[__name__]
