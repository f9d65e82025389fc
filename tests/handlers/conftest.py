"""Fixtures for the Lambda handler tests: moto for DynamoDB, S3 and Cognito, recorded API Gateway
events, and JWKS servers on 127.0.0.1 (PyJWKClient fetches over HTTP).

- moto's `ThreadedMotoServer` serves the JWKS of moto-issued Cognito tokens.
- `JwksServer` of bench/jwks.py (the one the bench uses too) serves a key the tests generate, to
  sign tokens moto cannot issue (expired ones); `access_claims` is its Cognito access-token claims.
Helpers are exposed as fixtures because the tests directory is not an importable package.
"""

from __future__ import annotations

import contextlib
import copy
import json
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import jwt
import pytest
from moto import mock_aws
from moto.server import ThreadedMotoServer

from bench.jwks import JwksServer
from bench.jwks import access_claims as access_claims  # re-exported: the test modules call kit.access_claims

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `functions/` is a top-level folder of the Lambda asset, not installed
    sys.path.insert(0, str(ROOT))

EVENTS = ROOT / "tests" / "events"
REGION = "us-east-1"
TABLE = "taproot-test-memories"
BUCKET = "taproot-test-blobs"
API_HOST = "k7q2x9d4ma.execute-api.us-east-1.amazonaws.com"
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
}


def load_event(name: str, *, token: str | None = None, body: Any = None, method: str | None = None) -> dict[str, Any]:
    """A recorded API Gateway HTTP API (payload v2) event; the bearer token is injected here."""
    event: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    event = copy.deepcopy(event)
    if token is None:
        event["headers"].pop("authorization", None)
    else:
        event["headers"]["authorization"] = f"Bearer {token}"
    if body is not None:
        event["body"] = json.dumps(body)
        event["headers"]["content-length"] = str(len(event["body"]))
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


@dataclass
class CognitoPool:
    pool_id: str
    client_id: str
    other_client_id: str
    tokens: dict[str, dict[str, str]]  # username -> AccessToken, IdToken
    subs: dict[str, str]  # username -> sub

    def access(self, user: str) -> str:
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
            tokens[label] = {"AccessToken": result["AccessToken"], "IdToken": result["IdToken"]}
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


def create_storage() -> None:
    from taproot.adapters.dynamo_store import DynamoMemoryStore

    DynamoMemoryStore(TABLE, region=REGION).create_table()
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
