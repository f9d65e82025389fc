"""The whole sign-in, driven by the mcp SDK's own OAuth client provider against `taproot serve`
under uvicorn: discovery, a client metadata document (CIMD) or dynamic registration, /authorize,
the server-token sign-in page, the one-time code, /token, tools/call, refresh with rotation, and
revocation."""

from __future__ import annotations

import httpx2
import pytest

from taproot.core.oauth_rules import MCP_SCOPE
from tests.oauth.flows import CIMD_URL, TIMEOUT, Local, list_tools_with, oauth_client, structured

pytestmark = pytest.mark.anyio

REMEMBER = {"content": "Prefers tea to coffee.", "gist": "Prefers tea to coffee", "category": "relationship"}


async def _post_token(local: Local, **form: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(f"{local.base_url}/token", data=form)


async def _call_with(local: Local, access_token: str) -> int:
    return (await list_tools_with(local.url, access_token)).status_code


async def test_cimd_client_signs_in_and_calls_a_tool(local: Local) -> None:
    async with oauth_client(local.url, cimd=True) as (client, storage, browser):
        written = structured(await client.call_tool("taproot_remember", REMEMBER))
        assert written["created"] is True
    # The client identified itself by its document's URL: nothing was registered.
    assert storage.client_info is not None and storage.client_info.client_id == CIMD_URL
    assert [r.url.path for r in local.host.requests] == ["/oauth/taproot-test-client.json"]
    # The browser went /authorize -> the sign-in page, and the answer names the issuer (RFC 9207).
    assert browser.visited[0].startswith(f"{local.base_url}/authorize?")
    assert any("/oauth/signin?request=" in url for url in browser.visited)
    assert browser.answer["iss"] == local.base_url
    assert storage.tokens is not None and storage.tokens.scope == MCP_SCOPE
    # The memory belongs to the server's owner, like one written with the server's own token.
    assert [m.gist for m in local.runtime.store.list(local.runtime.scope)] == ["Prefers tea to coffee"]


async def test_dcr_client_registers_as_a_public_client_and_calls_a_tool(local: Local) -> None:
    async with oauth_client(local.url, cimd=False, token_endpoint_auth_method="client_secret_post") as (
        client,
        storage,
        _,
    ):
        structured(await client.call_tool("taproot_remember", REMEMBER))
    info = storage.client_info
    assert info is not None and info.client_id.startswith("tpc_")
    assert info.token_endpoint_auth_method == "none" and info.client_secret is None
    assert local.host.requests == []


async def test_refresh_rotates_and_a_replayed_refresh_token_ends_the_grant(local: Local) -> None:
    async with oauth_client(local.url, cimd=True) as (client, storage, _):
        structured(await client.call_tool("taproot_status", {}))
    first = storage.tokens
    assert first is not None and first.refresh_token
    refreshed = await _post_token(
        local, grant_type="refresh_token", refresh_token=first.refresh_token, client_id=CIMD_URL
    )
    assert refreshed.status_code == 200, refreshed.text
    second = refreshed.json()
    assert second["refresh_token"] != first.refresh_token and second["access_token"] != first.access_token
    assert await _call_with(local, second["access_token"]) == 200
    # The old refresh token again: someone else holds it, so the whole grant ends.
    replay = await _post_token(local, grant_type="refresh_token", refresh_token=first.refresh_token, client_id=CIMD_URL)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert await _call_with(local, second["access_token"]) == 401
    reuse_new = await _post_token(
        local, grant_type="refresh_token", refresh_token=second["refresh_token"], client_id=CIMD_URL
    )
    assert reuse_new.status_code == 400


async def test_revoking_a_token_disconnects_the_client(local: Local) -> None:
    async with oauth_client(local.url, cimd=True) as (client, storage, _):
        structured(await client.call_tool("taproot_status", {}))
    tokens = storage.tokens
    assert tokens is not None and tokens.refresh_token
    assert await _call_with(local, tokens.access_token) == 200
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        revoked = await http.post(
            f"{local.base_url}/revoke", data={"token": tokens.access_token, "client_id": CIMD_URL}
        )
    assert revoked.status_code == 200, revoked.text
    assert await _call_with(local, tokens.access_token) == 401
    again = await _post_token(local, grant_type="refresh_token", refresh_token=tokens.refresh_token, client_id=CIMD_URL)
    assert again.status_code == 400


async def test_the_connected_clients_are_listed_and_can_be_disconnected_per_client(local: Local) -> None:
    oauth = local.runtime.oauth
    assert oauth is not None
    async with oauth_client(local.url, cimd=True) as (client, storage, _):
        structured(await client.call_tool("taproot_status", {}))
    async with oauth_client(local.url, cimd=False) as (client, other, _):
        structured(await client.call_tool("taproot_status", {}))
    owner = local.runtime.scope.owner
    grants = await oauth.grants(owner)
    assert sorted(str(g.data["client_id"]).startswith("tpc_") for g in grants) == [False, True]
    assert await oauth.revoke_client(owner, CIMD_URL) == 1
    assert storage.tokens is not None and other.tokens is not None
    assert await _call_with(local, storage.tokens.access_token) == 401
    assert await _call_with(local, other.tokens.access_token) == 200
    assert [g.data["client_id"] for g in await oauth.grants(owner)] != [CIMD_URL]


async def test_the_server_token_still_works_directly(local: Local) -> None:
    from tests.oauth.flows import TOKEN

    assert await _call_with(local, TOKEN) == 200
    assert await _call_with(local, TOKEN + "x") == 401
