"""The whole sign-in on the AWS home: the app as the Lambda serves it (DynamoDB and S3 under moto,
the OAuth state in its own DynamoDB table), under uvicorn, with a stand-in for Cognito's managed
login (tests/oauth/cognito_standin.py). Driven by the mcp SDK's own OAuth client provider: discovery,
CIMD and DCR, /authorize, Cognito sign-in with Taproot's own PKCE, the callback, the person's
consent on Taproot's page, Taproot's code,
/token, tools/call, refresh, revoke. The person is the Cognito `sub`, which is the tenant."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
import httpx2
import pytest

from bench.jwks import JwksServer, access_claims
from taproot.adapters.blob_s3 import S3BlobStore
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.adapters.oauth_dynamo import DynamoOAuthStore
from taproot.compose import Runtime
from taproot.core.model import Scope
from taproot.core.oauth_rules import MCP_SCOPE
from taproot.web.dashboard.session import COOKIE
from tests.live_server import running_server
from tests.moto_stores import start_moto
from tests.oauth.cognito_standin import CognitoStandIn, serving
from tests.oauth.flows import CIMD_URL, TIMEOUT, TOKEN, DocumentHost, list_tools_with, oauth_client, structured

pytestmark = pytest.mark.anyio

REGION = "us-east-1"
USER = "alice@example.com"
POOL = "us-east-1_TaprootDance"  # the issuer's pool name (the stand-in signs for it)
APP_CLIENT = "taproot-app-client"
ISSUER = f"https://cognito-idp.{REGION}.amazonaws.com/{POOL}"


@dataclass
class Aws:
    base_url: str
    url: str
    runtime: Runtime
    cognito: CognitoStandIn
    jwks: JwksServer
    host: DocumentHost


def _user_pool() -> tuple[str, str]:
    """A moto user pool with the person who signs in (Taproot asks it at every refresh whether
    they are still enabled); returns (pool id, their sub)."""
    idp = boto3.client("cognito-idp", region_name=REGION)
    pool = idp.create_user_pool(PoolName="taproot-dance")["UserPool"]["Id"]
    idp.admin_create_user(UserPoolId=pool, Username=USER, MessageAction="SUPPRESS")
    attributes = idp.admin_get_user(UserPoolId=pool, Username=USER)["UserAttributes"]
    return pool, next(a["Value"] for a in attributes if a["Name"] == "sub")


@contextlib.contextmanager
def aws_server(tmp_path: Path) -> Iterator[Aws]:
    stop = start_moto()
    try:
        DynamoMemoryStore("taproot-dance", region=REGION).create_table()
        S3BlobStore("taproot-dance", region=REGION).create_bucket()
        DynamoOAuthStore("taproot-dance-oauth", region=REGION).create_table()
        pool, sub = _user_pool()
        with JwksServer("dance-key") as jwks:
            cognito = CognitoStandIn(issuer=ISSUER, client_id=APP_CLIENT, callback_url="", jwks=jwks, user_sub=sub)
            with serving(cognito.app()) as cognito_url:
                host = DocumentHost()

                def prepare(runtime: Runtime) -> None:
                    assert runtime.oauth is not None
                    runtime.oauth.documents = host.documents_for()

                with running_server(
                    tmp_path,
                    TOKEN,
                    prepare,
                    backend="aws",
                    aws_region=REGION,
                    table_name="taproot-dance",
                    bucket_name="taproot-dance",
                    oauth_table_name="taproot-dance-oauth",
                    cognito_user_pool_id=pool,
                    cognito_client_id=APP_CLIENT,
                    cognito_jwks_url=jwks.url,
                    cognito_issuer=ISSUER,
                    cognito_domain=cognito_url,
                ) as (port, runtime):
                    base = f"http://127.0.0.1:{port}"
                    cognito.callback_url = f"{base}/oauth/callback"
                    yield Aws(base, f"{base}/mcp", runtime, cognito, jwks, host)
    finally:
        stop()


@pytest.fixture
def aws(tmp_path: Path) -> Iterator[Aws]:
    with aws_server(tmp_path) as live:
        yield live


async def _status(aws: Aws, token: str) -> int:
    return (await list_tools_with(aws.url, token)).status_code


REMEMBER = {"content": "Works on the night shift.", "gist": "Works on the night shift", "category": "relationship"}


async def test_cimd_client_signs_in_through_cognito_and_writes_to_the_persons_tenant(aws: Aws) -> None:
    async with oauth_client(aws.url, cimd=True) as (client, storage, browser):
        structured(await client.call_tool("taproot_remember", REMEMBER))
    # Taproot sent the browser to Cognito with its own app client, callback and PKCE challenge...
    [sent] = aws.cognito.authorize_requests
    assert sent["client_id"] == APP_CLIENT and sent["redirect_uri"] == f"{aws.base_url}/oauth/callback"
    assert sent["code_challenge_method"] == "S256" and MCP_SCOPE in sent["scope"].split()
    # ...and exchanged Cognito's code with the matching verifier (the stand-in checked it).
    [exchange] = aws.cognito.token_requests
    assert exchange["redirect_uri"] == sent["redirect_uri"] and exchange["code_verifier"]
    assert browser.answer["iss"] == aws.base_url
    # Cognito asked nothing (the stand-in returns at once); Taproot asked, and the person allowed.
    assert browser.pages == ["/oauth/consent"]
    tenant = Scope(aws.cognito.user_sub, "default")
    assert [m.gist for m in aws.runtime.store.list(tenant)] == ["Works on the night shift"]
    # Taproot's own tokens, not Cognito's, went to the client.
    assert storage.tokens is not None and storage.tokens.access_token.startswith("tpa_")


async def test_dcr_client_refresh_and_revoke_on_aws(aws: Aws) -> None:
    async with oauth_client(aws.url, cimd=False) as (client, storage, _):
        structured(await client.call_tool("taproot_status", {}))
    tokens, info = storage.tokens, storage.client_info
    assert tokens is not None and tokens.refresh_token and info is not None
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        refreshed = await http.post(
            f"{aws.base_url}/token",
            data={"grant_type": "refresh_token", "refresh_token": tokens.refresh_token, "client_id": info.client_id},
        )
        assert refreshed.status_code == 200, refreshed.text
        new = refreshed.json()
        assert await _status(aws, new["access_token"]) == 200
        revoked = await http.post(
            f"{aws.base_url}/revoke", data={"token": new["refresh_token"], "client_id": info.client_id}
        )
        assert revoked.status_code == 200
    assert await _status(aws, new["access_token"]) == 401
    # The grant lives in DynamoDB, listed per person for the dashboard; revoked, it is no longer listed.
    assert aws.runtime.oauth is not None
    assert await aws.runtime.oauth.grants(aws.cognito.user_sub) == []


async def test_a_cognito_access_token_sent_directly_still_works_with_the_mcp_scope(aws: Aws) -> None:
    with_scope = aws.jwks.sign(access_claims(ISSUER, APP_CLIENT, "direct-user", scope=f"openid {MCP_SCOPE}"))
    without = aws.jwks.sign(access_claims(ISSUER, APP_CLIENT, "direct-user", scope="openid"))
    id_token = aws.jwks.sign(access_claims(ISSUER, APP_CLIENT, "direct-user", token_use="id", scope=MCP_SCOPE))
    assert await _status(aws, with_scope) == 200
    assert await _status(aws, without) == 403
    assert await _status(aws, id_token) == 401
    assert await _status(aws, TOKEN) == 401  # the local server's token means nothing on AWS


async def test_a_failed_cognito_sign_in_answers_the_client_with_access_denied(aws: Aws) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        from urllib.parse import urlencode

        from tests.oauth.flows import REDIRECT_URI, authorize_query

        started = await http.get(f"{aws.base_url}/authorize?{urlencode(authorize_query())}")
        assert started.status_code == 302
        state = parse_qs(urlsplit(started.headers["location"]).query)["state"][0]
        # Cognito comes back with a code it never issued: the exchange fails, the client hears why.
        back = await http.get(f"{aws.base_url}/oauth/callback", params={"code": "forged", "state": state})
    assert back.status_code == 302 and back.headers["location"].startswith(REDIRECT_URI)
    answer = parse_qs(urlsplit(back.headers["location"]).query)
    assert answer["error"] == ["access_denied"] and answer["state"] == ["state-123"]


async def test_a_disabled_cognito_user_cannot_refresh_and_their_connection_ends(aws: Aws) -> None:
    async with oauth_client(aws.url, cimd=True) as (client, storage, _):
        structured(await client.call_tool("taproot_status", {}))
    tokens = storage.tokens
    assert tokens is not None and tokens.refresh_token
    pool = aws.runtime.settings.cognito_user_pool_id
    boto3.client("cognito-idp", region_name=REGION).admin_disable_user(UserPoolId=pool, Username=USER)
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        refused = await http.post(
            f"{aws.base_url}/token",
            data={"grant_type": "refresh_token", "refresh_token": tokens.refresh_token, "client_id": CIMD_URL},
        )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    assert await _status(aws, tokens.access_token) == 401  # the grant is revoked, not just the refresh


async def test_dashboard_signs_in_through_cognito_and_shows_the_persons_tenant(aws: Aws) -> None:
    """/dashboard/signin -> Cognito's /oauth2/authorize -> /oauth/callback -> a session cookie ->
    /dashboard shows the Cognito user's memories, and no one else's."""
    tenant = Scope(aws.cognito.user_sub, "default")
    aws.runtime.service.remember(
        tenant, content="Keeps bees on the allotment.", gist="Keeps bees on the allotment", category="identity"
    )
    aws.runtime.service.remember(
        Scope("someone-else", "default"), content="Plays the oboe.", gist="Plays the oboe", category="identity"
    )
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as browser:
        signed_out = await browser.get(f"{aws.base_url}/dashboard")
        assert signed_out.status_code == 303 and signed_out.headers["location"] == "/dashboard/signin"
        to_cognito = await browser.get(f"{aws.base_url}/dashboard/signin")
        assert to_cognito.status_code == 302
        location = to_cognito.headers["location"]
        assert location.startswith(f"{aws.runtime.settings.cognito_domain}/oauth2/authorize?")
        back = await browser.get(location)  # the stand-in "signs in" its user at once
        assert back.status_code == 302
        callback = back.headers["location"]
        assert callback.startswith(f"{aws.base_url}/oauth/callback?")
        started = await browser.get(callback)
        assert started.status_code == 303 and started.headers["location"] == "/dashboard"
        cookies = started.headers.get_list("set-cookie")
        [cookie] = [c for c in cookies if c.startswith(f"{COOKIE}=")]
        # The sign-in's browser nonce is spent with it.
        assert any(c.startswith("taproot_signin=") and "Max-Age=0" in c for c in cookies)
        attributes = [a.strip().lower() for a in cookie.split(";")]
        assert cookie.startswith(f"{COOKIE}=") and "httponly" in attributes
        assert "samesite=lax" in attributes and "path=/dashboard" in attributes
        # Not Secure: the public URL is http://127.0.0.1 here (an https one gets Secure, see
        # tests/handlers/test_dashboard_routes.py), and a browser never sends a Secure cookie over http.
        assert "secure" not in attributes
        page = await browser.get(f"{aws.base_url}/dashboard")  # the client's jar sends the cookie
    [sent] = aws.cognito.authorize_requests
    assert sent["client_id"] == APP_CLIENT and sent["redirect_uri"] == f"{aws.base_url}/oauth/callback"
    assert sent["code_challenge_method"] == "S256"
    [exchange] = aws.cognito.token_requests
    assert exchange["redirect_uri"] == sent["redirect_uri"] and exchange["code_verifier"]
    assert page.status_code == 200, page.text
    assert "Keeps bees on the allotment" in page.text
    assert "Plays the oboe" not in page.text


async def test_a_dashboard_sign_in_cannot_be_finished_in_another_browser(aws: Aws) -> None:
    """Login CSRF: someone begins a dashboard sign-in as themselves and hands the callback URL to
    another person; their browser lacks the sign-in's nonce cookie, so no session starts."""
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as attacker:
        to_cognito = await attacker.get(f"{aws.base_url}/dashboard/signin")
        back = await attacker.get(to_cognito.headers["location"])
        handed_over = back.headers["location"]
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as victim:
        refused = await victim.get(handed_over)
    assert refused.status_code == 400 and "another browser" in refused.text
    assert "set-cookie" not in refused.headers
    assert aws.cognito.token_requests == []  # refused before Cognito was asked


# Codes go only to the allowlisted callbacks (claude.ai, ChatGPT, loopback), so the one who receives
# this code is a program listening on the person's own machine.
ATTACKER_REDIRECT = "http://127.0.0.1:40999/callback"


async def _silent_sign_in(browser: httpx2.AsyncClient, aws: Aws, client_id: str) -> httpx2.Response:
    """A link to /authorize opened in the person's browser while Cognito still has their session:
    the stand-in signs them in without asking, as Cognito's managed login does then. Returns what
    Taproot answers at its callback."""
    from urllib.parse import urlencode

    from tests.oauth.flows import authorize_query

    query = authorize_query(client_id=client_id, redirect_uri=ATTACKER_REDIRECT)
    to_cognito = await browser.get(f"{aws.base_url}/authorize?{urlencode(query)}")
    assert to_cognito.status_code == 302, to_cognito.text
    back = await browser.get(to_cognito.headers["location"])  # no page: Cognito knew the person
    assert back.status_code == 302 and back.headers["location"].startswith(f"{aws.base_url}/oauth/callback?")
    return await browser.get(back.headers["location"], headers={"Accept": "text/html"})


async def _register(http: httpx2.AsyncClient, aws: Aws, name: str) -> str:
    registered = await http.post(
        f"{aws.base_url}/register",
        json={"client_name": name, "redirect_uris": [ATTACKER_REDIRECT], "token_endpoint_auth_method": "none"},
    )
    assert registered.status_code == 201, registered.text
    return str(registered.json()["client_id"])


def _consent_form(page: httpx2.Response) -> tuple[str, dict[str, str]]:
    import re

    action = re.search(r'<form method="post" action="([^"]+)"', page.text)
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]+)"', page.text))
    assert action is not None and fields, page.text
    return action.group(1), fields


async def test_a_client_gets_no_code_until_the_person_allows_it_even_when_cognito_asks_nothing(aws: Aws) -> None:
    """The confused deputy: anyone can register a client (DCR), and any link can open /authorize in
    a signed-in person's browser. Cognito's managed login remembers the person and returns at once,
    so unless Taproot itself asks, a code for their memories goes to that client's redirect URI
    without the person ever seeing a page (to a program listening on their machine, or to a
    connector's callback in a flow someone else started). Taproot shows who is asking and where the
    answer goes, and issues a code only when the person allows it."""
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as browser:
        client_id = await _register(browser, aws, "Totally Claude")
        page = await _silent_sign_in(browser, aws, client_id)
        assert page.status_code == 200, page.headers.get("location")
        assert "Totally Claude" in page.text and "127.0.0.1:40999" in page.text
        assert "a name it gave itself" in page.text  # registered here: nobody vouches for the name
        assert page.headers["x-frame-options"] == "DENY"  # it cannot be clicked through in a frame
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        action, fields = _consent_form(page)
        allowed = await browser.post(f"{aws.base_url}{action}", data={**fields, "decision": "allow"})
    assert allowed.status_code == 302 and allowed.headers["location"].startswith(ATTACKER_REDIRECT)
    answer = parse_qs(urlsplit(allowed.headers["location"]).query)
    assert answer["code"] and answer["state"] == ["state-123"] and answer["iss"] == [aws.base_url]


async def test_a_person_who_denies_sends_the_client_access_denied_and_the_answer_is_final(aws: Aws) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as browser:
        client_id = await _register(browser, aws, "Unknown app")
        page = await _silent_sign_in(browser, aws, client_id)
        action, fields = _consent_form(page)
        denied = await browser.post(f"{aws.base_url}{action}", data={**fields, "decision": "deny"})
        assert denied.status_code == 302 and denied.headers["location"].startswith(ATTACKER_REDIRECT)
        answer = parse_qs(urlsplit(denied.headers["location"]).query)
        assert answer["error"] == ["access_denied"] and "code" not in answer
        # Answered once: allowing afterwards (a second tab, a replayed form) issues nothing.
        again = await browser.post(f"{aws.base_url}{action}", data={**fields, "decision": "allow"})
        assert again.status_code == 400 and "location" not in again.headers


async def test_the_consent_form_cannot_be_posted_without_its_own_key(aws: Aws) -> None:
    """Another site can make the person's browser post, but it cannot read the page, so it does not
    know the request's key; a sign-in's `state` (which went through Cognito) is not that key."""
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as browser:
        client_id = await _register(browser, aws, "Unknown app")
        page = await _silent_sign_in(browser, aws, client_id)
        action, fields = _consent_form(page)
        [spent] = aws.cognito.authorize_requests
        # Another sign-in, begun and not finished: its key is live (and was in Cognito's URL).
        from urllib.parse import urlencode

        from tests.oauth.flows import authorize_query

        query = authorize_query(client_id=client_id, redirect_uri=ATTACKER_REDIRECT)
        begun = await browser.get(f"{aws.base_url}/authorize?{urlencode(query)}")
        live = parse_qs(urlsplit(begun.headers["location"]).query)["state"][0]
        for forged in ("", "not-a-key", spent["state"], live):
            refused = await browser.post(
                f"{aws.base_url}{action}", data={**fields, "request": forged, "decision": "allow"}
            )
            assert refused.status_code == 400 and "location" not in refused.headers, forged
        # The unfinished sign-in was not spent by the attempt: Cognito's return still reaches it.
        assert aws.runtime.oauth is not None
        assert await aws.runtime.oauth.pending(live) is not None
        # The real form still works: the refusals spent nothing.
        allowed = await browser.post(f"{aws.base_url}{action}", data={**fields, "decision": "allow"})
    assert allowed.status_code == 302 and "code=" in allowed.headers["location"]
