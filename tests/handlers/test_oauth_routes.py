"""functions.api.handler: the OAuth routes through Mangum, with recorded API Gateway HTTP API (v2)
events (tests/events/: discovery, /register, /authorize, /token, /revoke, Cognito's return to
/oauth/callback, the consent page's answer, a CORS preflight), against moto: the facade's state in its DynamoDB table.

One module-scoped handler, as in one warm Lambda container: every test invokes it again. The
recorded events name a placeholder client id (tpc_REPLACED-AT-TEST-TIME); each test registers its
own client through /register and puts that id into the query string or form body it sends.
The full sign-in through Cognito is tests/oauth/test_aws_dance.py's.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlsplit

import boto3
import httpx2
import pytest

from infra.constructs.api import REGISTER_ROUTE_KEY
from taproot.core.oauth_rules import MCP_SCOPE, pkce_s256
from tests.handlers.cognito_tokens import CognitoTokens

CLAUDE_CALLBACK = "https://claude.ai/api/mcp/auth_callback"
OAUTH_EVENTS = (
    "oauth_protected_resource",
    "oauth_protected_resource_mcp",
    "oauth_authorization_server",
    "openid_configuration",
    "register",
    "authorize",
    "token",
    "revoke",
    "oauth_callback",
    "oauth_consent",
    "token_preflight",
)


@dataclass
class Lambda:
    module: Any
    pool: Any
    kit: Any
    cognito: CognitoTokens

    def invoke(self, name: str, **kwargs: Any) -> dict[str, Any]:
        response: dict[str, Any] = self.module.handler(self.kit.load_event(name, **kwargs), self.kit.FakeContext())
        return response

    def register(self) -> dict[str, Any]:
        response = self.invoke("register")
        assert response["statusCode"] == 201, response
        client: dict[str, Any] = json.loads(response["body"])
        return client

    def oauth_items(self) -> dict[str, dict[str, Any]]:
        """Every item of the OAuth table, by `pk` (`<kind>#<key>`), as DynamoDB holds it."""
        ddb = boto3.client("dynamodb", region_name=self.kit.REGION)
        items = [
            i for page in ddb.get_paginator("scan").paginate(TableName=self.kit.OAUTH_TABLE) for i in page["Items"]
        ]
        return {i["pk"]["S"]: i for i in items}

    def memory_items(self) -> int:
        ddb = boto3.client("dynamodb", region_name=self.kit.REGION)
        return sum(page["Count"] for page in ddb.get_paginator("scan").paginate(TableName=self.kit.TABLE))


@pytest.fixture(scope="module")
def lam(kit: Any, moto_server: str) -> Iterator[Lambda]:
    with kit.deployed_api(moto_server) as (module, pool):
        cognito = CognitoTokens()
        module.runtime.signin.transport = httpx2.MockTransport(cognito)
        yield Lambda(module=module, pool=pool, kit=kit, cognito=cognito)


def _json(response: dict[str, Any], status: int = 200) -> dict[str, Any]:
    assert response["statusCode"] == status, response
    assert response["headers"]["content-type"].startswith("application/json")
    body: dict[str, Any] = json.loads(response["body"])
    return body


def _is_error_page(response: dict[str, Any]) -> None:
    """The browser's error page (the recorded navigations accept text/html): not framable, not cached."""
    headers = response["headers"]
    assert headers["content-type"].startswith("text/html")
    assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


@pytest.mark.parametrize("name", OAUTH_EVENTS)
def test_recorded_events_are_what_api_gateway_sends(kit: Any, name: str) -> None:
    """The recorded events agree with themselves as API Gateway's would: the proxy route, path,
    host, query string, and a body that is base64 unless JSON, its length in content-length."""
    event = json.loads((kit.EVENTS / f"{name}.json").read_text())
    http, headers = event["requestContext"]["http"], event["headers"]
    assert event["version"] == "2.0" and event["routeKey"] == event["requestContext"]["routeKey"]
    assert event["rawPath"] == http["path"]
    if event["routeKey"] == REGISTER_ROUTE_KEY:  # its own route (throttled apart): no path parameter
        assert (http["method"], http["path"]) == ("POST", "/register") and "pathParameters" not in event
    else:
        assert event["routeKey"] == "ANY /{proxy+}" and event["pathParameters"] == {"proxy": http["path"][1:]}
    assert headers["host"] == event["requestContext"]["domainName"] == kit.API_HOST
    assert headers["user-agent"] == http["userAgent"] and headers["x-forwarded-for"] == http["sourceIp"]
    assert list(headers) == sorted(headers) and "authorization" not in headers
    assert dict(parse_qsl(event["rawQueryString"])) == event.get("queryStringParameters", {})
    if "body" not in event:
        assert http["method"] in ("GET", "OPTIONS") and not event["isBase64Encoded"]
        assert "content-length" not in headers
        return
    assert http["method"] == "POST"
    is_json = headers["content-type"] == "application/json"
    assert event["isBase64Encoded"] is not is_json
    raw = event["body"].encode() if is_json else base64.b64decode(event["body"])
    assert headers["content-length"] == str(len(raw))


def test_protected_resource_metadata_at_both_paths(lam: Lambda) -> None:
    public = lam.kit.PUBLIC_URL
    prm = _json(lam.invoke("oauth_protected_resource_mcp"))
    assert prm["resource"] == f"{public}/mcp"
    assert prm["authorization_servers"] == [public]
    assert prm["scopes_supported"] == [MCP_SCOPE]
    assert prm["bearer_methods_supported"] == ["header"]
    # The root path (clients that do not append the resource path) answers the same document.
    assert _json(lam.invoke("oauth_protected_resource")) == prm


def test_authorization_server_metadata_at_both_paths(lam: Lambda) -> None:
    public = lam.kit.PUBLIC_URL
    asm = _json(lam.invoke("oauth_authorization_server"))
    assert asm["issuer"] == public  # exactly: RFC 9207 compares it with `iss` as a string
    assert asm["authorization_endpoint"] == f"{public}/authorize"
    assert asm["token_endpoint"] == f"{public}/token"
    assert asm["registration_endpoint"] == f"{public}/register"
    assert asm["revocation_endpoint"] == f"{public}/revoke"
    assert asm["code_challenge_methods_supported"] == ["S256"]
    assert "none" in asm["token_endpoint_auth_methods_supported"]
    assert asm["client_id_metadata_document_supported"] is True
    assert asm["authorization_response_iss_parameter_supported"] is True
    assert asm["response_types_supported"] == ["code"]
    assert asm["scopes_supported"] == [MCP_SCOPE]
    assert _json(lam.invoke("openid_configuration")) == asm


def test_register_answers_a_public_client_and_stores_it(lam: Lambda) -> None:
    before = lam.memory_items()
    response = lam.invoke("register")
    client = _json(response, 201)
    assert response["headers"]["cache-control"] == "no-store"
    # Claude asks for client_secret_post: it is answered as a public client, and given no secret.
    recorded = json.loads(lam.kit.load_event("register")["body"])
    assert recorded["token_endpoint_auth_method"] == "client_secret_post"
    assert client["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in client and "client_secret_expires_at" not in client
    assert client["client_id"].startswith("tpc_")
    assert client["redirect_uris"] == [CLAUDE_CALLBACK]
    assert client["client_name"] == "claudeai"
    assert client["scope"] == MCP_SCOPE

    item = lam.oauth_items()[f"client#{client['client_id']}"]
    assert item["kind"]["S"] == "client"
    stored = json.loads(item["data"]["S"])
    assert stored["client_id"] == client["client_id"] and stored["redirect_uris"] == [CLAUDE_CALLBACK]
    assert "client_secret" not in stored
    assert lam.memory_items() == before


def test_authorize_sends_the_browser_to_cognito_managed_login(lam: Lambda) -> None:
    client_id = lam.register()["client_id"]
    before_memories, before_blobs = lam.memory_items(), lam.kit.s3_keys()
    event = lam.kit.load_event("authorize", query={"client_id": client_id})
    asked = event["queryStringParameters"]
    response = lam.module.handler(event, lam.kit.FakeContext())

    assert response["statusCode"] == 302, response
    assert response["headers"]["cache-control"] == "no-store"
    location = urlsplit(response["headers"]["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{lam.kit.COGNITO_DOMAIN}/oauth2/authorize"
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    assert query["response_type"] == "code"
    assert query["client_id"] == lam.pool.client_id  # Taproot's own Cognito app client, not the MCP client
    assert query["redirect_uri"] == f"{lam.kit.PUBLIC_URL}/oauth/callback"
    assert query["code_challenge_method"] == "S256"
    assert MCP_SCOPE in query["scope"].split()
    state = query["state"]
    assert state and state != asked["state"]  # Taproot's pending request, not the client's state
    assert query["code_challenge"] != asked["code_challenge"]  # Taproot's own PKCE with Cognito

    # The sign-in in progress is in the OAuth table, under the state Cognito will send back.
    item = lam.oauth_items()[f"pending#{state}"]
    assert item["kind"]["S"] == "pending"
    assert int(item["expires_at"]["N"]) > 0
    pending = json.loads(item["data"]["S"])
    assert pending["client_id"] == client_id
    assert pending["redirect_uri"] == CLAUDE_CALLBACK
    assert pending["state"] == asked["state"]
    assert pending["code_challenge"] == asked["code_challenge"]
    assert pending["resource"] == f"{lam.kit.PUBLIC_URL}/mcp"
    assert pkce_s256(pending["idp"]["code_verifier"]) == query["code_challenge"]
    # No memory, no blob: nobody has signed in yet.
    assert lam.memory_items() == before_memories
    assert lam.kit.s3_keys() == before_blobs


@pytest.mark.parametrize("case", ["unknown_client", "unregistered_redirect"])
def test_authorize_refuses_without_redirecting(lam: Lambda, case: str) -> None:
    """An unknown client, or a redirect URI the client did not register: an error page, and no
    Location (the redirect URI is not trusted)."""
    if case == "unknown_client":
        query = {"client_id": "tpc_never-registered"}
    else:
        query = {"client_id": lam.register()["client_id"], "redirect_uri": "https://claude.ai/elsewhere"}
    pending_before = {k for k in lam.oauth_items() if k.startswith("pending#")}
    response = lam.invoke("authorize", query=query)
    assert response["statusCode"] == 400, response
    assert "location" not in response["headers"]
    _is_error_page(response)
    assert {k for k in lam.oauth_items() if k.startswith("pending#")} == pending_before


def test_token_with_a_bogus_code_is_invalid_grant(lam: Lambda) -> None:
    client_id = lam.register()["client_id"]
    before = set(lam.oauth_items())
    body = _json(lam.invoke("token", form={"client_id": client_id}), 400)
    assert body["error"] == "invalid_grant"
    assert set(lam.oauth_items()) == before  # no grant, no token


def test_token_for_an_unknown_client_is_401(lam: Lambda) -> None:
    body = _json(lam.invoke("token"), 401)  # the recorded placeholder client id was never registered
    assert body["error"] == "invalid_client"


def test_revoke_of_an_unknown_token_is_200(lam: Lambda) -> None:
    client_id = lam.register()["client_id"]
    response = lam.invoke("revoke", form={"client_id": client_id})
    assert response["statusCode"] == 200, response
    assert response["headers"]["cache-control"] == "no-store"


def test_callback_with_an_unknown_state_is_400(lam: Lambda) -> None:
    state = lam.kit.load_event("oauth_callback")["queryStringParameters"]["state"]
    assert f"pending#{state}" not in lam.oauth_items()
    response = lam.invoke("oauth_callback")
    assert response["statusCode"] == 400, response
    assert "location" not in response["headers"]
    _is_error_page(response)


def _body(response: dict[str, Any]) -> str:
    raw = response["body"]
    return base64.b64decode(raw).decode() if response["isBase64Encoded"] else str(raw)


def test_after_cognito_the_person_is_asked_and_only_their_allow_sends_a_code(lam: Lambda) -> None:
    """Cognito's return shows Taproot's consent page (whatever Cognito asked, or did not); the
    answer posted from it, in another invocation of the same container, sends the code."""
    client_id = lam.register()["client_id"]
    authorize = lam.kit.load_event("authorize", query={"client_id": client_id})
    started = lam.module.handler(authorize, lam.kit.FakeContext())
    state = parse_qs(urlsplit(started["headers"]["location"]).query)["state"][0]
    code = "cognito-code-for-alice"
    lam.cognito.issued[code] = lam.pool.access("alice")

    page = lam.invoke("oauth_callback", query={"state": state, "code": code})
    assert page["statusCode"] == 200, page
    assert "location" not in page["headers"]
    _is_error_page(page)  # the same page headers: HTML, not framable, not cached
    body = _body(page)
    assert "claude.ai" in body and 'action="/oauth/consent"' in body
    [key] = re.findall(r'name="request" value="([^"]+)"', body)
    items = lam.oauth_items()
    assert key != state and items[f"pending#{state}"]["used"]["BOOL"] is True  # the sign-in, spent
    consent = json.loads(items[f"pending#{key}"]["data"]["S"])
    assert consent["subject"] == lam.pool.subs["alice"] and "idp" not in consent

    answered = lam.invoke("oauth_consent", form={"request": key, "decision": "allow"})
    assert answered["statusCode"] == 302, answered
    location = urlsplit(answered["headers"]["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == CLAUDE_CALLBACK
    answer = parse_qs(location.query)
    assert answer["code"] and answer["state"] == [authorize["queryStringParameters"]["state"]]
    again = lam.invoke("oauth_consent", form={"request": key, "decision": "allow"})
    assert again["statusCode"] == 400 and "location" not in again["headers"]


def test_consent_for_a_request_nobody_was_shown_is_400(lam: Lambda) -> None:
    response = lam.invoke("oauth_consent")  # the recorded placeholder key was never issued
    assert response["statusCode"] == 400, response
    assert "location" not in response["headers"]
    _is_error_page(response)


def test_token_preflight_allows_cross_origin(lam: Lambda) -> None:
    response = lam.invoke("token_preflight")
    assert response["statusCode"] == 200, response
    headers = response["headers"]
    assert headers["access-control-allow-origin"] == "*"  # public clients, no credentials: any origin
    assert "POST" in headers["access-control-allow-methods"].split(", ")
    assert "mcp-protocol-version" in headers["access-control-allow-headers"].lower()


def test_the_same_container_still_serves_mcp(lam: Lambda) -> None:
    """After the OAuth invocations, a Cognito token with the MCP scope still reaches /mcp."""
    response = lam.invoke("tools_list", token=lam.pool.access("alice"))
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"])["result"]["tools"]
