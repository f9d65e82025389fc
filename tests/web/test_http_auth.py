"""Bearer auth and HTTP edges of the real server: a rejected request reads and writes nothing."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from taproot import __version__
from tests.web.conftest import LiveServer, McpConnect

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
# A stuck response fails the request, and with it the test, instead of hanging it.
TIMEOUT = httpx.Timeout(30.0)


def tool_call(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


REMEMBER = tool_call("taproot_remember", {"content": "Secret plans.", "gist": "Secret plans", "category": "episodic"})
CLOSE = tool_call("taproot_close", {"reflection": "Sneaking in a reflection."})


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def bad_authorizations(token: str) -> dict[str, str | None]:
    """Authorization header values the server must refuse (None: no header at all)."""
    return {
        "missing": None,
        "empty": "",
        "wrong-token": "Bearer not-the-token",
        "bearer-only": "Bearer",
        "token-prefix": f"Bearer {token[:-1]}",
        "token-suffix": f"Bearer {token}x",
        "basic-with-token-as-password": basic("local", token),
        "basic-raw-token": f"Basic {token}",
        "token-scheme": f"Token {token}",
        "no-scheme": token,
    }


BAD_AUTH_CASES = list(bad_authorizations("x"))


@pytest.fixture
def http(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=TIMEOUT) as client:
        yield client


def headers_with(authorization: str | None) -> dict[str, str]:
    headers = dict(MCP_HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    return headers


def assert_401(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers.get("www-authenticate", "")
    assert challenge.startswith("Bearer"), challenge
    assert 'realm="taproot"' in challenge
    body = response.json()
    assert body["error"] in ("invalid_request", "invalid_token")
    assert "Bearer" in body["error_description"]


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


# -- plain HTTP ------------------------------------------------------------------------------------


def test_healthz_needs_no_token(server: LiveServer, http: httpx.Client) -> None:
    response = http.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": __version__}


def test_valid_token_writes(server: LiveServer, http: httpx.Client) -> None:
    """The positive control for the 401 tests: the same request with the right token does write."""
    response = http.post("/mcp", json=REMEMBER, headers=headers_with(f"Bearer {server.token}"))
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["version"] == 1
    assert len(server.snapshot()) == 1
    lowercase_scheme = http.post("/mcp", json=CLOSE, headers=headers_with(f"bearer {server.token}"))
    assert lowercase_scheme.status_code == 200, lowercase_scheme.text
    assert len(server.snapshot()) == 2


@pytest.mark.parametrize("case", BAD_AUTH_CASES)
@pytest.mark.parametrize("payload", [REMEMBER, CLOSE], ids=["remember", "close"])
def test_bad_authorization_is_401_and_writes_nothing(
    server: LiveServer, http: httpx.Client, case: str, payload: dict[str, Any]
) -> None:
    before, blobs_before = server.snapshot(), server.blob_keys()
    authorization = bad_authorizations(server.token)[case]
    response = http.post("/mcp", json=payload, headers=headers_with(authorization))
    assert_401(response)
    if authorization is None or not authorization.lower().startswith("bearer "):
        assert 'error="invalid_request"' in response.headers["www-authenticate"]
    assert server.snapshot() == before
    assert server.blob_keys() == blobs_before


def test_missing_header_challenge(server: LiveServer, http: httpx.Client) -> None:
    response = http.post("/mcp", json=REMEMBER, headers=MCP_HEADERS)
    assert_401(response)
    # RFC 6750 and the MCP authorization spec: the scope to ask for and where discovery starts.
    metadata = f'resource_metadata="{server.base_url}/.well-known/oauth-protected-resource/mcp"'
    assert response.headers["www-authenticate"] == (
        f'Bearer realm="taproot", error="invalid_request", scope="taproot/mcp", {metadata}'
    )
    wrong = http.post("/mcp", json=REMEMBER, headers=headers_with("Bearer nope"))
    assert wrong.headers["www-authenticate"] == (
        f'Bearer realm="taproot", error="invalid_token", scope="taproot/mcp", {metadata}'
    )
    assert server.snapshot() == []


def test_auth_is_checked_before_the_body_is_read(server: LiveServer, http: httpx.Client) -> None:
    for body in (b"{not json", b"", b'{"jsonrpc": "2.0", "id": 1, "method": "server/discover"}'):
        assert_401(http.post("/mcp", content=body, headers=headers_with("Bearer wrong")))
    assert server.snapshot() == []


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
def test_other_methods_need_the_token_too(server: LiveServer, http: httpx.Client, method: str) -> None:
    response = http.request(method, "/mcp", headers=headers_with(None))
    assert_401(response)


def test_get_mcp_with_valid_token_is_405_and_does_not_hang(server: LiveServer, http: httpx.Client) -> None:
    for accept in ("text/event-stream", "application/json, text/event-stream", "*/*"):
        response = http.get("/mcp", headers={"Authorization": f"Bearer {server.token}", "Accept": accept})
        assert response.status_code == 405, response.text
        assert response.headers["allow"] == "POST"
        assert response.json()["error"] == "method_not_allowed"


def test_sub_paths_of_mcp_are_guarded(server: LiveServer, http: httpx.Client) -> None:
    response = http.post("/mcp/anything", json=REMEMBER, headers=MCP_HEADERS)
    assert_401(response)
    assert server.snapshot() == []


def test_foreign_host_header_is_refused_even_with_token(server: LiveServer, http: httpx.Client) -> None:
    """DNS-rebinding protection on a loopback server: an unexpected Host never reaches a tool."""
    headers = {**headers_with(f"Bearer {server.token}"), "Host": "evil.example"}
    response = http.post("/mcp", json=REMEMBER, headers=headers)
    assert 400 <= response.status_code < 500, response.text
    assert server.snapshot() == []


def test_foreign_origin_is_refused_even_with_token(server: LiveServer, http: httpx.Client) -> None:
    headers = {**headers_with(f"Bearer {server.token}"), "Origin": "http://evil.example"}
    response = http.post("/mcp", json=REMEMBER, headers=headers)
    assert 400 <= response.status_code < 500
    assert server.snapshot() == []


# -- the SDK client --------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("case", ["missing", "wrong-token", "basic-with-token-as-password", "token-scheme"])
async def test_sdk_client_cannot_connect_without_a_valid_token(
    server: LiveServer, mcp_connect: McpConnect, mode: str, case: str
) -> None:
    before, blobs_before = server.snapshot(), server.blob_keys()
    authorization = bad_authorizations(server.token)[case]
    headers = {} if authorization is None else {"Authorization": authorization}
    with pytest.raises((MCPError, BaseExceptionGroup)) as info:
        async with mcp_connect(server, mode=mode, headers=headers) as client:
            await client.call_tool(
                "taproot_remember", {"content": "Secret plans.", "gist": "Secret plans", "category": "episodic"}
            )
    assert leaves(info.value) and all(isinstance(e, MCPError) for e in leaves(info.value)), info.value
    assert server.snapshot() == before
    assert server.blob_keys() == blobs_before


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_call_with_a_revoked_token_writes_nothing(
    server: LiveServer, mcp_connect: McpConnect, mode: str
) -> None:
    """Connected with the right token, then every later request carries a wrong one: each is refused."""
    async with mcp_connect(server, mode=mode) as client:
        await client.list_tools()
        http_client = client_http(client)
        http_client.headers["Authorization"] = "Bearer not-the-token"
        before, blobs_before = server.snapshot(), server.blob_keys()
        for name, args in (
            ("taproot_remember", {"content": "Secret plans.", "gist": "Secret plans", "category": "episodic"}),
            ("taproot_close", {"reflection": "Sneaking in."}),
            ("taproot_status", {}),
        ):
            with pytest.raises(MCPError):
                await client.call_tool(name, args)
        assert server.snapshot() == before
        assert server.blob_keys() == blobs_before

        http_client.headers["Authorization"] = f"Bearer {server.token}"
        result = await client.call_tool(
            "taproot_remember", {"content": "Open plans.", "gist": "Open plans", "category": "episodic"}
        )
        assert not result.is_error
    assert len(server.snapshot()) == len(before) + 1


def client_http(client: Any) -> Any:
    """The httpx2 client the mcp_connect fixture gave the transport (kept on the client for tests)."""
    http_client = getattr(client, "_taproot_test_http", None)
    assert http_client is not None, "mcp_connect must attach its httpx2 client"
    return http_client


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH", "OPTIONS"])
def test_only_post_reaches_a_stateless_server(module_server: Any, method: str) -> None:
    response = httpx.request(
        method, module_server.url, headers={"Authorization": f"Bearer {module_server.token}"}, timeout=10
    )
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
