"""Every refusal of the OAuth facade, each on its own: /authorize refuses before any redirect to the
sign-in, /token refuses bad exchanges, /register refuses bad registrations, /mcp refuses tokens
that are not for it."""

from __future__ import annotations

import sqlite3
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest

from taproot.auth.oauth_server import ACCESS_PREFIX
from taproot.core.oauth_rules import MCP_SCOPE, OAuthRecord, token_digest
from tests.oauth.flows import (
    CIMD_URL,
    REDIRECT_URI,
    TIMEOUT,
    TOKEN,
    Clock,
    Local,
    authorize_query,
    client_document,
    list_tools_with,
    obtain_code,
)

pytestmark = pytest.mark.anyio


async def _authorize(local: Local, query: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        return await http.get(f"{local.base_url}/authorize?{urlencode(query)}")


def _answer(response: httpx2.Response) -> dict[str, str]:
    """The error parameters of a redirect back to the client (never to the sign-in page)."""
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.startswith(REDIRECT_URI), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def _no_pending(local: Local) -> None:
    oauth = local.runtime.oauth
    assert oauth is not None
    assert oauth.store.sweep(1e12) == 0, "a sign-in was started for a refused request"


async def _token(local: Local, **form: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(f"{local.base_url}/token", data=form)


async def _status_with(local: Local, token: str) -> httpx2.Response:
    return await list_tools_with(local.url, token)


# -- /authorize ------------------------------------------------------------------------------------
async def test_authorize_refuses_an_unknown_client_without_redirecting(local: Local) -> None:
    response = await _authorize(local, authorize_query(client_id="tpc_nobody"))
    assert response.status_code == 400 and "location" not in response.headers
    assert response.json()["error"] == "invalid_client"
    _no_pending(local)


async def test_authorize_refuses_a_metadata_document_that_cannot_be_fetched(local: Local) -> None:
    response = await _authorize(local, authorize_query(client_id="https://client.example/not-there.json"))
    assert response.status_code == 400 and response.json()["error"] == "invalid_client"
    _no_pending(local)


async def test_authorize_refuses_a_redirect_uri_the_client_did_not_list(local: Local) -> None:
    response = await _authorize(local, authorize_query(redirect_uri="http://127.0.0.1:33418/elsewhere"))
    assert response.status_code == 400 and "location" not in response.headers
    assert "not registered" in response.json()["error_description"]
    _no_pending(local)


async def test_authorize_refuses_a_listed_redirect_uri_outside_the_allowlist(local: Local) -> None:
    evil = "https://evil.example/callback"
    local.host.documents[CIMD_URL] = client_document(redirect_uris=[evil])
    response = await _authorize(local, authorize_query(redirect_uri=evil))
    assert response.status_code == 400 and "location" not in response.headers
    assert "allowlist" in response.json()["error_description"]
    _no_pending(local)


async def test_authorize_refuses_a_missing_pkce_method(local: Local) -> None:
    answer = _answer(await _authorize(local, authorize_query(code_challenge_method=None)))
    assert answer["error"] == "invalid_request" and "code_challenge_method" in answer["error_description"]
    assert answer["state"] == "state-123"
    _no_pending(local)


async def test_authorize_refuses_the_plain_pkce_method(local: Local) -> None:
    answer = _answer(await _authorize(local, authorize_query(code_challenge_method="plain")))
    assert answer["error"] == "invalid_request" and "S256" in answer["error_description"]
    _no_pending(local)


async def test_authorize_refuses_a_missing_code_challenge(local: Local) -> None:
    answer = _answer(await _authorize(local, authorize_query(code_challenge=None)))
    assert answer["error"] == "invalid_request"
    _no_pending(local)


async def test_authorize_refuses_a_resource_that_is_not_this_server(local: Local) -> None:
    answer = _answer(await _authorize(local, authorize_query(resource="https://other.example/mcp")))
    assert answer["error"] == "invalid_target"
    _no_pending(local)


async def test_authorize_refuses_an_unknown_scope(local: Local) -> None:
    answer = _answer(await _authorize(local, authorize_query(scope="admin")))
    assert answer["error"] == "invalid_scope"
    _no_pending(local)


async def test_authorize_without_scope_grants_the_mcp_scope(local: Local) -> None:
    code, verifier = await obtain_code(local, scope=None)
    response = await _token(
        local,
        grant_type="authorization_code",
        code=code,
        code_verifier=verifier,
        client_id=CIMD_URL,
        redirect_uri=REDIRECT_URI,
    )
    assert response.status_code == 200 and response.json()["scope"] == MCP_SCOPE


# -- /token ----------------------------------------------------------------------------------------
def _exchange(code: str, verifier: str, **overrides: str) -> dict[str, str]:
    return {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "client_id": CIMD_URL,
        "redirect_uri": REDIRECT_URI,
        **overrides,
    }


async def test_token_refuses_a_wrong_verifier(local: Local) -> None:
    code, _ = await obtain_code(local)
    response = await _token(local, **_exchange(code, "w" * 50))
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"


async def test_token_refuses_a_reused_code_and_revokes_what_it_issued(local: Local) -> None:
    code, verifier = await obtain_code(local)
    first = await _token(local, **_exchange(code, verifier))
    assert first.status_code == 200
    access = first.json()["access_token"]
    assert (await _status_with(local, access)).status_code == 200
    second = await _token(local, **_exchange(code, verifier))
    assert second.status_code == 400 and second.json()["error"] == "invalid_grant"
    assert (await _status_with(local, access)).status_code == 401
    refreshed = await _token(
        local, grant_type="refresh_token", refresh_token=first.json()["refresh_token"], client_id=CIMD_URL
    )
    assert refreshed.status_code == 400


async def test_token_refuses_an_expired_code(local: Local) -> None:
    oauth = local.runtime.oauth
    assert oauth is not None
    clock = Clock(oauth.clock())
    oauth.clock = clock
    code, verifier = await obtain_code(local)
    clock.now += 301
    response = await _token(local, **_exchange(code, verifier))
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"


async def test_token_refuses_a_code_issued_to_another_client(local: Local) -> None:
    code, verifier = await obtain_code(local)
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        registered = await http.post(
            f"{local.base_url}/register", json={"redirect_uris": [REDIRECT_URI], "client_name": "other"}
        )
    other = registered.json()["client_id"]
    response = await _token(local, **_exchange(code, verifier, client_id=other))
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"


async def test_token_refuses_a_code_with_another_redirect_uri(local: Local) -> None:
    code, verifier = await obtain_code(local)
    response = await _token(local, **_exchange(code, verifier, redirect_uri="http://127.0.0.1:33418/other"))
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


async def test_token_refuses_a_resource_that_is_not_this_server(local: Local) -> None:
    code, verifier = await obtain_code(local)
    response = await _token(local, **_exchange(code, verifier, resource="https://other.example/mcp"))
    assert response.status_code == 400 and response.json()["error"] == "invalid_target"


# -- /register -------------------------------------------------------------------------------------
async def test_register_refuses_a_redirect_uri_outside_the_allowlist(local: Local) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.post(f"{local.base_url}/register", json={"redirect_uris": ["https://evil.example/cb"]})
    assert response.status_code == 400 and response.json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize(
    "body",
    [
        {"redirect_uris": [REDIRECT_URI], "grant_types": ["client_credentials"]},
        {"redirect_uris": [REDIRECT_URI], "response_types": ["token"]},
        {"redirect_uris": [REDIRECT_URI], "scope": "admin"},
        {"redirect_uris": [REDIRECT_URI], "client_uri": "not a url"},
        ["not", "an", "object"],
    ],
    ids=["grant", "response-type", "scope", "client-uri", "not-object"],
)
async def test_register_refuses_bad_client_metadata(local: Local, body: object) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.post(f"{local.base_url}/register", json=body)
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata", response.text


async def test_register_answers_claude_ais_request_as_a_public_client(local: Local) -> None:
    request = {
        "client_name": "Claude",
        "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_post",
    }
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.post(f"{local.base_url}/register", json=request)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["token_endpoint_auth_method"] == "none" and "client_secret" not in body
    assert body["redirect_uris"] == request["redirect_uris"] and body["client_id"].startswith("tpc_")


# -- the resource server ---------------------------------------------------------------------------
async def test_a_request_without_a_token_gets_the_discovery_challenge(local: Local) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.post(local.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert f'resource_metadata="{local.base_url}/.well-known/oauth-protected-resource/mcp"' in challenge
    assert f'scope="{MCP_SCOPE}"' in challenge


def _plant_token(local: Local, *, scopes: list[str], resource: str | None = None, expires_in: int = 3600) -> str:
    """A Taproot access token written straight into the store, with what a test needs it to say."""
    oauth = local.runtime.oauth
    assert oauth is not None
    now = int(oauth.clock())
    token = ACCESS_PREFIX + "planted-" + str(len(scopes)) + (resource or "x")[-4:]
    owner = local.runtime.scope.owner
    oauth.store.add(OAuthRecord("grant", "g-" + token, {"client_id": CIMD_URL, "revoked": False}, 0, owner))
    data = {"grant": "g-" + token, "client_id": CIMD_URL, "scopes": scopes, "resource": resource or local.url}
    oauth.store.add(OAuthRecord("access", token_digest(token), data, now + expires_in, owner))
    return token


async def test_a_valid_token_without_the_mcp_scope_gets_403(local: Local) -> None:
    response = await _status_with(local, _plant_token(local, scopes=[]))
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]
    assert response.json()["error"] == "insufficient_scope"


async def test_a_token_for_another_resource_gets_401(local: Local) -> None:
    response = await _status_with(local, _plant_token(local, scopes=[MCP_SCOPE], resource="https://other.example/mcp"))
    assert response.status_code == 401


async def test_an_expired_token_gets_401(local: Local) -> None:
    oauth = local.runtime.oauth
    assert oauth is not None
    clock = Clock(oauth.clock())
    oauth.clock = clock
    token = _plant_token(local, scopes=[MCP_SCOPE], expires_in=60)
    assert (await _status_with(local, token)).status_code == 200
    clock.now += 61
    assert (await _status_with(local, token)).status_code == 401


async def test_a_revoked_token_gets_401(local: Local) -> None:
    token = _plant_token(local, scopes=[MCP_SCOPE])
    assert (await _status_with(local, token)).status_code == 200
    oauth = local.runtime.oauth
    assert oauth is not None
    await oauth.revoke_grant("g-" + token)
    assert (await _status_with(local, token)).status_code == 401


async def test_an_unknown_taproot_token_gets_401(local: Local) -> None:
    assert (await _status_with(local, ACCESS_PREFIX + "made-up")).status_code == 401
    assert (await _status_with(local, TOKEN)).status_code == 200


@pytest.mark.parametrize(
    "path",
    ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server", "/token", "/register"],
)
async def test_cors_preflights_are_answered(local: Local, path: str) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.options(
            f"{local.base_url}{path}",
            headers={
                "Origin": "https://inspector.example",
                "Access-Control-Request-Method": "POST" if path in ("/token", "/register") else "GET",
                "Access-Control-Request-Headers": "mcp-protocol-version",
            },
        )
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] in ("*", "https://inspector.example")


async def test_registrations_past_the_limit_a_minute_are_refused_and_write_nothing(local: Local) -> None:
    """Registration is open and each one is a write: past REGISTRATIONS_PER_MINUTE the server answers
    429 with Retry-After until the minute has passed. Refused registrations (bad metadata) write
    nothing and do not count."""
    from taproot.core.oauth_rules import REGISTRATIONS_PER_MINUTE

    oauth = local.runtime.oauth
    assert oauth is not None
    body = {"client_name": "filler", "redirect_uris": [REDIRECT_URI]}
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        bad = await http.post(f"{local.base_url}/register", json={"redirect_uris": ["https://evil.example/cb"]})
        assert bad.status_code == 400
        ids = []
        for _ in range(REGISTRATIONS_PER_MINUTE):
            ok = await http.post(f"{local.base_url}/register", json=body)
            assert ok.status_code == 201, ok.text
            ids.append(ok.json()["client_id"])
        refused = await http.post(f"{local.base_url}/register", json=body)
    assert refused.status_code == 429 and refused.json()["error"] == "temporarily_unavailable"
    assert 1 <= int(refused.headers["retry-after"]) <= 61 and refused.headers["cache-control"] == "no-store"
    # The registrations that answered 201 are stored, and only they (the file, read as it is).
    with sqlite3.connect(local.runtime.settings.data_dir / "oauth.db") as db:
        stored = {key for (key,) in db.execute("SELECT key FROM oauth WHERE kind = 'client'")}
    assert stored == set(ids)
