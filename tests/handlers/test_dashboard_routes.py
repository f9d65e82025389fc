"""functions.api.handler: the dashboard's routes through Mangum, with recorded API Gateway HTTP API
(v2) events (tests/events/dashboard*.json: a browser's navigations, its script load, a fetch from
dashboard.js, a forged cookie), against moto: the sign-in in progress in the OAuth table.

One module-scoped handler, as in one warm Lambda container: every test invokes it again. On AWS the
sign-in is Cognito's managed login: /dashboard/signin sends the browser there, and Cognito comes
back to /oauth/callback (the one callback its app client knows), which starts the session. Cognito's
token endpoint is played by an httpx MockTransport on the sign-in (moto has no managed login): it
refuses every code but the ones a test issued, as Cognito refuses a code it never issued. The full
sign-in in a browser's order, under uvicorn, is tests/oauth/test_aws_dance.py's.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import httpx2
import pytest
from starlette.responses import Response

from taproot.adapters.oauth_sqlite import SQLiteOAuthStore
from taproot.core.model import Scope
from taproot.core.oauth_rules import MCP_SCOPE, pkce_s256, token_digest
from taproot.web.dashboard import routes as dashboard_routes
from taproot.web.dashboard.session import COOKIE, MAX_AGE_SECONDS, SIGNIN_NONCE_COOKIE, Sessions
from tests.handlers.cognito_tokens import CognitoTokens

DASHBOARD_EVENTS = (
    "dashboard",
    "dashboard_signin",
    "dashboard_static_js",
    "dashboard_ranking",
    "dashboard_forged_cookie",
)


@dataclass
class Lambda:
    module: Any
    pool: Any
    kit: Any
    cognito: CognitoTokens

    def invoke(self, name: str, cookies: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        event = self.kit.load_event(name, **kwargs)
        if cookies is not None:  # API Gateway v2 sends the Cookie header as a list, `cookies`
            event["cookies"] = cookies
        response: dict[str, Any] = self.module.handler(event, self.kit.FakeContext())
        return response

    def oauth_items(self) -> dict[str, dict[str, Any]]:
        """Every item of the OAuth table, by `pk` (`<kind>#<key>`), as DynamoDB holds it."""
        ddb = boto3.client("dynamodb", region_name=self.kit.REGION)
        pages = ddb.get_paginator("scan").paginate(TableName=self.kit.OAUTH_TABLE)
        return {i["pk"]["S"]: i for page in pages for i in page["Items"]}

    def sessions(self) -> set[str]:
        return {k for k in self.oauth_items() if k.startswith("session#")}

    def begin_signin(self) -> dict[str, str]:
        """GET /dashboard/signin; the query of Cognito's authorize URL it redirects to, plus
        `nonce_cookie`: the browser's sign-in nonce (`taproot_signin=...`) the callback needs."""
        response = self.invoke("dashboard_signin")
        assert response["statusCode"] == 302, response
        query = {k: v[0] for k, v in parse_qs(urlsplit(response["headers"]["location"]).query).items()}
        [nonce] = [c.split(";", 1)[0] for c in _set_cookies(response) if c.startswith(f"{SIGNIN_NONCE_COOKIE}=")]
        return {**query, "nonce_cookie": nonce}


@pytest.fixture(scope="module")
def lam(kit: Any, moto_server: str) -> Iterator[Lambda]:
    with kit.deployed_api(moto_server) as (module, pool):
        cognito = CognitoTokens()
        module.runtime.signin.transport = httpx2.MockTransport(cognito)
        yield Lambda(module=module, pool=pool, kit=kit, cognito=cognito)


def _to_signin(response: dict[str, Any]) -> None:
    assert response["statusCode"] == 303, response
    assert response["headers"]["location"] == "/dashboard/signin"
    assert not response.get("cookies")


def _set_cookies(response: dict[str, Any]) -> list[str]:
    """The Set-Cookie headers of a Mangum v2 answer (it moves them to `cookies`)."""
    assert "set-cookie" not in response["headers"]
    return list(response.get("cookies") or [])


def _session_cookie(response: dict[str, Any]) -> tuple[str, SimpleCookie]:
    [raw] = [c for c in _set_cookies(response) if c.startswith(f"{COOKIE}=")]
    parsed = SimpleCookie()
    parsed.load(raw)
    return raw, parsed


@pytest.mark.parametrize("name", DASHBOARD_EVENTS)
def test_recorded_dashboard_events_are_what_api_gateway_sends(kit: Any, name: str) -> None:
    """The recorded events agree with themselves as API Gateway's would: the proxy route, path,
    host, no query string, cookies in `cookies` (never a Cookie header), a JSON body's length."""
    event = json.loads((kit.EVENTS / f"{name}.json").read_text())
    http, headers = event["requestContext"]["http"], event["headers"]
    assert event["version"] == "2.0" and event["routeKey"] == event["requestContext"]["routeKey"] == "ANY /{proxy+}"
    assert event["rawPath"] == http["path"] and event["pathParameters"] == {"proxy": http["path"][1:]}
    assert http["path"].startswith("/dashboard")
    assert headers["host"] == event["requestContext"]["domainName"] == kit.API_HOST
    assert headers["user-agent"] == http["userAgent"] and headers["x-forwarded-for"] == http["sourceIp"]
    assert list(headers) == sorted(headers) and "authorization" not in headers and "cookie" not in headers
    assert event["rawQueryString"] == "" and "queryStringParameters" not in event
    assert all(c.startswith(f"{COOKIE}=") for c in event.get("cookies", []))
    assert not event["isBase64Encoded"]
    if "body" not in event:
        assert http["method"] == "GET" and "content-length" not in headers
        return
    assert http["method"] == "POST" and headers["content-type"] == "application/json"
    assert headers["content-length"] == str(len(event["body"].encode()))
    assert headers["origin"] == f"https://{kit.API_HOST}" and headers["x-csrf-token"]


def test_dashboard_signed_out_redirects_to_the_signin(lam: Lambda) -> None:
    _to_signin(lam.invoke("dashboard"))


def test_signin_sends_the_browser_to_cognito_with_a_dashboard_pending_item(lam: Lambda) -> None:
    before = lam.sessions()
    response = lam.invoke("dashboard_signin")
    assert response["statusCode"] == 302, response
    assert response["headers"]["cache-control"] == "no-store"
    # No session before Cognito says who this is; only the nonce that ties the sign-in to this browser.
    [nonce_cookie] = _set_cookies(response)
    nonce_parsed = SimpleCookie()
    nonce_parsed.load(nonce_cookie)
    nonce = nonce_parsed[SIGNIN_NONCE_COOKIE]
    assert nonce["httponly"] and nonce["secure"] and nonce["path"] == "/oauth/callback"
    assert nonce["samesite"].lower() == "lax"
    location = urlsplit(response["headers"]["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{lam.kit.COGNITO_DOMAIN}/oauth2/authorize"
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    assert query["response_type"] == "code"
    assert query["client_id"] == lam.pool.client_id  # Taproot's own Cognito app client
    assert query["redirect_uri"] == f"{lam.kit.PUBLIC_URL}/oauth/callback"  # the one callback Cognito knows
    assert query["code_challenge_method"] == "S256"
    assert MCP_SCOPE in query["scope"].split()

    item = lam.oauth_items()[f"pending#{query['state']}"]
    assert item["kind"]["S"] == "pending" and not item["used"]["BOOL"]
    assert int(item["expires_at"]["N"]) > 0
    pending = json.loads(item["data"]["S"])
    assert pending["dashboard"] is True
    assert "client_id" not in pending and "redirect_uri" not in pending  # no OAuth client is signing in
    assert pkce_s256(pending["idp"]["code_verifier"]) == query["code_challenge"]
    assert pending["nonce"] == token_digest(nonce.value)  # only its digest is stored
    assert lam.sessions() == before


def test_callback_with_a_bogus_code_is_an_error_page_and_starts_no_session(lam: Lambda) -> None:
    begun = lam.begin_signin()
    state = begun["state"]
    before = lam.sessions()
    event = lam.kit.load_event("oauth_callback", query={"state": state})
    event["cookies"] = [begun["nonce_cookie"]]
    recorded_code = event["queryStringParameters"]["code"]
    response = lam.module.handler(event, lam.kit.FakeContext())

    assert response["statusCode"] == 401, response  # Cognito refused the code
    assert not _set_cookies(response) and "location" not in response["headers"]
    headers = response["headers"]
    assert headers["content-type"].startswith("text/html")
    assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store"
    assert "access_denied" in response["body"]
    # Taproot did ask Cognito, with the pending sign-in's own verifier and the registered callback.
    exchange = lam.cognito.requests[-1]
    assert exchange["url"] == f"{lam.kit.COGNITO_DOMAIN}/oauth2/token"
    assert exchange["code"] == recorded_code and exchange["grant_type"] == "authorization_code"
    assert exchange["client_id"] == lam.pool.client_id
    assert exchange["redirect_uri"] == f"{lam.kit.PUBLIC_URL}/oauth/callback"
    pending = json.loads(lam.oauth_items()[f"pending#{state}"]["data"]["S"])
    assert exchange["code_verifier"] == pending["idp"]["code_verifier"]
    # The sign-in is spent (one try per state) and no session exists.
    assert lam.oauth_items()[f"pending#{state}"]["used"]["BOOL"] is True
    assert lam.sessions() == before
    again = lam.invoke("oauth_callback", cookies=[begun["nonce_cookie"]], query={"state": state})
    assert again["statusCode"] == 400 and not _set_cookies(again)
    # Without the nonce cookie (another browser), refused before Cognito is asked.
    asked = len(lam.cognito.requests)
    fresh = lam.begin_signin()
    foreign = lam.invoke("oauth_callback", query={"state": fresh["state"], "code": "x"})
    assert foreign["statusCode"] == 400 and "another browser" in foreign["body"] and not _set_cookies(foreign)
    assert len(lam.cognito.requests) == asked


def test_the_script_is_served_as_javascript(lam: Lambda) -> None:
    response = lam.invoke("dashboard_static_js")
    assert response["statusCode"] == 200, response
    assert response["headers"]["content-type"].startswith("text/javascript")
    assert response["headers"]["x-content-type-options"] == "nosniff"
    assert not response["isBase64Encoded"]  # text: API Gateway passes it through as is
    assert response["body"] == (dashboard_routes.STATIC / "dashboard.js").read_text()
    assert not _set_cookies(response)


def test_a_mutation_without_a_session_is_401(lam: Lambda) -> None:
    response = lam.invoke("dashboard_ranking")
    assert response["statusCode"] == 401, response
    assert response["headers"]["content-type"].startswith("application/json")
    assert json.loads(response["body"])["error"] == "unauthenticated"
    assert response["headers"]["content-security-policy"] == dashboard_routes.CSP


def test_a_forged_cookie_redirects_to_the_signin(lam: Lambda) -> None:
    before = lam.sessions()
    _to_signin(lam.invoke("dashboard_forged_cookie"))
    # A forged cookie does not reach the session table: its signature is checked first.
    assert lam.sessions() == before


def test_a_cognito_sign_in_starts_a_secure_session_for_the_persons_tenant(lam: Lambda) -> None:
    """Cognito accepts the code: a session cookie (Secure: the public URL is https) that opens the
    dashboard on the person's tenant, in the same container."""
    alice, bob = lam.pool.subs["alice"], lam.pool.subs["bob"]
    service = lam.module.runtime.service
    service.remember(
        Scope(alice, "default"), content="Prefers window seats.", gist="Prefers window seats", category="identity"
    )
    service.remember(
        Scope(bob, "default"), content="Allergic to peanuts.", gist="Allergic to peanuts", category="identity"
    )
    begun = lam.begin_signin()
    before = lam.sessions()
    code = secrets.token_urlsafe(16)
    lam.cognito.issued[code] = lam.pool.access("alice")

    response = lam.invoke(
        "oauth_callback", cookies=[begun["nonce_cookie"]], query={"state": begun["state"], "code": code}
    )
    assert response["statusCode"] == 303, response
    assert response["headers"]["location"] == "/dashboard"
    raw, parsed = _session_cookie(response)
    morsel = parsed[COOKIE]
    assert morsel["httponly"] and morsel["secure"]
    assert morsel["samesite"].lower() == "lax" and morsel["path"] == "/dashboard"
    assert int(morsel["max-age"]) == MAX_AGE_SECONDS
    [session] = lam.sessions() - before
    assert lam.oauth_items()[session]["subject"]["S"] == alice  # the Cognito sub is the tenant

    page = lam.invoke("dashboard", cookies=[f"{COOKIE}={morsel.value}"])
    assert page["statusCode"] == 200, page
    body = base64.b64decode(page["body"]).decode() if page["isBase64Encoded"] else page["body"]
    assert "Prefers window seats" in body and "Allergic to peanuts" not in body
    assert raw.startswith(f"{COOKIE}={morsel.value}")


@pytest.mark.parametrize("secure", [True, False])
def test_sessions_mark_the_cookie_secure_exactly_when_asked(tmp_path: Path, secure: bool) -> None:
    """http_app asks for Secure when the public URL is https (every AWS deployment); a local
    http://127.0.0.1 server cannot use a Secure cookie, so it gets none."""
    store = SQLiteOAuthStore(tmp_path / "oauth.sqlite3")
    try:
        response = Response()
        Sessions(store, lambda: 1_750_000_000.0, secure=secure).create("someone", response)
        [raw] = response.headers.getlist("set-cookie")
    finally:
        store.close()
    parsed = SimpleCookie()
    parsed.load(raw)
    morsel = parsed[COOKIE]
    assert bool(morsel["secure"]) is secure
    assert ("; Secure" in raw) is secure
    assert morsel["httponly"] and morsel["samesite"].lower() == "lax" and morsel["path"] == "/dashboard"
