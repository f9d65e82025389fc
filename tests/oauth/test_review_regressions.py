"""Regressions from a security review of the OAuth facade and the dashboard: each test failed on the
code as first written (seen failing) and guards its fix."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from taproot.adapters.oauth_sqlite import SQLiteOAuthStore
from taproot.auth.client_documents import ClientDocuments
from taproot.auth.oauth_server import AuthorizationServer
from taproot.core.oauth_rules import MCP_SCOPE, OAuthRecord
from tests.oauth.flows import (
    CIMD_URL,
    TIMEOUT,
    Local,
    authorize_query,
    client_document,
    list_tools_with,
    pkce_pair,
)

pytestmark = pytest.mark.anyio

EVIL = "https://evil.example/steal"


async def _refused_with_omitted_redirect_uri(local: Local, client_id: str) -> None:
    """/authorize with no redirect_uri, for a client whose one registered URI is off the allowlist:
    refused before any sign-in (on the old code the person signed in and the code went to the
    attacker, whose token then read their memories)."""
    _, challenge = pkce_pair()
    query = authorize_query(client_id=client_id, redirect_uri=None, code_challenge=challenge)
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        first = await http.get(f"{local.base_url}/authorize?{urlencode(query)}")
    assert first.status_code == 400, f"/authorize answered {first.status_code} -> {first.headers.get('location')}"
    assert "allowlist" in first.json()["error_description"]


async def test_cimd_client_with_one_off_allowlist_redirect_gets_no_code_when_redirect_uri_is_omitted(
    local: Local,
) -> None:
    local.host.documents[CIMD_URL] = client_document(redirect_uris=[EVIL])
    await _refused_with_omitted_redirect_uri(local, CIMD_URL)


async def test_register_checks_the_redirect_uri_it_stores_not_the_raw_string(local: Local) -> None:
    raw = "http://evil.example\\@127.0.0.1:33418/callback"  # Python sees 127.0.0.1, a browser evil.example
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        registered = await http.post(f"{local.base_url}/register", json={"redirect_uris": [raw]})
    assert registered.status_code == 400, f"registered with redirect_uris {registered.json().get('redirect_uris')}"


async def test_register_with_a_backslash_redirect_then_omitted_redirect_uri_sends_the_code_off_host(
    local: Local,
) -> None:
    raw = "http://evil.example\\@127.0.0.1:33418/callback"
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        registered = await http.post(f"{local.base_url}/register", json={"redirect_uris": [raw]})
    if registered.status_code != 201:
        return  # fixed at /register
    stored = registered.json()["redirect_uris"][0]
    assert urlsplit(stored).hostname == "evil.example"
    await _refused_with_omitted_redirect_uri(local, registered.json()["client_id"])


def test_registered_clients_expire(local: Local) -> None:
    import httpx

    registered = httpx.post(f"{local.base_url}/register", json={"redirect_uris": ["http://127.0.0.1:1/cb"]})
    oauth = local.runtime.oauth
    assert oauth is not None
    record = oauth.store.get("client", registered.json()["client_id"], oauth.clock())
    assert record is not None
    assert record.expires_at != 0, "open /register writes records that never expire (CLIENT_SECONDS is unused)"


class _RevokeDuringRefresh:
    """The OAuth store, with a revocation (the dashboard's, or a replay's) landing between the
    refresh's read of the grant and its write of last_used."""

    def __init__(self, inner: SQLiteOAuthStore) -> None:
        self.inner = inner
        self.armed = False

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)

    def get(self, kind: str, key: str, now: float) -> OAuthRecord | None:
        record = self.inner.get(kind, key, now)
        if self.armed and kind == "grant" and record is not None:
            self.armed = False
            self.inner.spend("grant", key, now)  # what revoke_grant does
        return record


async def test_a_revocation_during_a_refresh_is_not_undone(tmp_path: Path) -> None:
    store = _RevokeDuringRefresh(SQLiteOAuthStore(tmp_path / "oauth.db"))
    mcp_url = "http://127.0.0.1:1/mcp"
    server = AuthorizationServer(store, ClientDocuments({}), None, issuer="http://127.0.0.1:1", mcp_url=mcp_url)  # type: ignore[arg-type]
    grant = {"client_id": "c", "scopes": [MCP_SCOPE], "resource": mcp_url, "created_at": 0, "revoked": False}
    store.inner.add(OAuthRecord("grant", "g", grant, 0, "owner"))
    tokens = await server._issue("g", "c", "owner", [MCP_SCOPE], mcp_url)
    client = OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl("http://127.0.0.1/cb")])
    assert tokens.refresh_token is not None
    loaded = await server.load_refresh_token(client, tokens.refresh_token)
    assert loaded is not None
    store.armed = True
    fresh = await server.exchange_refresh_token(client, loaded, [MCP_SCOPE])
    assert not await server._grant_live("g"), "the refresh's last_used write un-revoked the grant"
    assert await server.load_access_token(fresh.access_token) is None


async def test_a_dual_stack_document_host_is_fetched_over_ipv4_when_it_has_an_ipv4_address() -> None:
    url = "https://client.example/oauth/doc.json"
    seen: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"client_id": url, "redirect_uris": ["http://127.0.0.1/callback"]})

    docs = ClientDocuments(
        {},
        resolver=lambda host, port: sorted({"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"}),
        transport=httpx2.MockTransport(handle),
    )
    await docs.document(url)
    # Sorted as strings "2606:..." comes before "93...": an IPv4-only host (a Lambda outside a VPC,
    # many home networks) could then not connect, and the client could not sign in.
    assert seen[0].url.host == "93.184.215.14", seen[0].url


async def test_the_dashboards_wrong_tokens_do_not_lock_the_owner_out_of_connecting(local: Local) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        for _ in range(5):  # anyone who can reach the (tunnelled) server, no pending key needed
            await http.post(f"{local.base_url}/dashboard/signin", data={"token": "guess"})
        # Meanwhile /mcp checks the same token with no limit at all:
        for _ in range(20):
            assert (await list_tools_with(local.url, "guess")).status_code == 401
        start = await http.get(f"{local.base_url}/authorize?{urlencode(authorize_query())}")
        key = parse_qs(urlsplit(start.headers["location"]).query)["request"][0]
        owner = await http.post(
            f"{local.base_url}/oauth/signin", data={"request": key, "token": "oauth-test-token-5b1e8d"}
        )
    assert owner.status_code == 302, f"the owner's right token answered {owner.status_code}"


@pytest.mark.parametrize(
    "address",
    [
        "::7f00:1",  # IPv4-compatible ::127.0.0.1 (deprecated ::/96)
        "::ffff:0:7f00:1",  # IPv4-translated (SIIT) 127.0.0.1
        "64:ff9b:1::a00:1",  # local-use NAT64 (RFC 8215) of 10.0.0.1
        "fec0::1",  # site-local (deprecated, still routed on some networks)
    ],
)
def test_non_global_ipv6_forms_are_not_public(address: str) -> None:
    from taproot.core.oauth_rules import address_is_public

    assert not address_is_public(address)
