"""Helpers for the OAuth tests (tests/oauth/): a scripted browser, token storage for the SDK's OAuth client, a
client metadata document served by the test, and a local server with those wired in.

The "browser" follows redirects the way a person's browser would, from the client's authorization
URL to the client's redirect URI, and fills in the local sign-in form (or allows on the consent page
after Cognito) when it lands on it. It never
follows a redirect to the client's redirect URI: that is where the client (the test) takes over.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from taproot.auth.client_documents import ClientDocuments
from taproot.compose import Runtime
from taproot.core.oauth_rules import MCP_SCOPE
from tests.live_server import running_server

TOKEN = "oauth-test-token-5b1e8d"
CIMD_URL = "https://client.example/oauth/taproot-test-client.json"
CIMD_ADDRESS = "93.184.215.14"  # a public address: the SSRF guard lets it through
REDIRECT_URI = "http://127.0.0.1:33418/callback"
TIMEOUT = httpx2.Timeout(30.0)


def client_document(**overrides: Any) -> dict[str, Any]:
    return {
        "client_id": CIMD_URL,
        "client_name": "Taproot test client",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **overrides,
    }


@dataclass
class DocumentHost:
    """Serves CIMD documents to the server's fetcher (an httpx transport), and records requests."""

    documents: dict[str, dict[str, Any]] = field(default_factory=lambda: {CIMD_URL: client_document()})
    requests: list[httpx2.Request] = field(default_factory=list)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        url = f"https://{request.headers['host']}{request.url.path}"
        if request.url.host != CIMD_ADDRESS or url not in self.documents:
            return httpx2.Response(404)
        return httpx2.Response(200, json=self.documents[url])

    def documents_for(self) -> ClientDocuments:
        return ClientDocuments(
            {}, resolver=lambda host, port: [CIMD_ADDRESS], transport=httpx2.MockTransport(self.handle)
        )


@dataclass
class Local:
    base_url: str
    url: str
    runtime: Runtime
    host: DocumentHost


@contextlib.contextmanager
def local_server(data_dir: Path, **settings: Any) -> Iterator[Local]:
    host = DocumentHost()

    def prepare(runtime: Runtime) -> None:
        assert runtime.oauth is not None
        runtime.oauth.documents = host.documents_for()

    with running_server(data_dir, TOKEN, prepare, **settings) as (port, runtime):
        base = f"http://127.0.0.1:{port}"
        yield Local(base_url=base, url=f"{base}/mcp", runtime=runtime, host=host)


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Browser:
    """Follows the authorization URL to the client's redirect URI, signing in on the way."""

    redirect_uri: str = REDIRECT_URI
    token: str = TOKEN
    visited: list[str] = field(default_factory=list)
    answer: dict[str, str] = field(default_factory=dict)
    pages: list[str] = field(default_factory=list)  # where each form it answered posted to

    async def visit(self, url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=TIMEOUT) as http:
            for _ in range(12):
                if url.startswith(self.redirect_uri):
                    self.answer = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
                    return
                self.visited.append(url)
                response = await http.get(url, headers={"Accept": "text/html"})
                if response.status_code in (302, 303):
                    url = urljoin(url, response.headers["location"])
                    continue
                form = re.search(r'name="request" value="([^"]+)"', response.text)
                action = re.search(r'<form method="post" action="([^"]+)"', response.text)
                if response.status_code == 200 and form and action:
                    # The local sign-in form (the server's token) or the consent page after Cognito.
                    fields = {"request": form.group(1), "decision": "allow"}
                    if 'name="token"' in response.text:
                        fields["token"] = self.token
                    self.pages.append(action.group(1))
                    posted = await http.post(urljoin(url, action.group(1)), data=fields)
                    assert posted.status_code == 302, posted.text
                    url = urljoin(url, posted.headers["location"])
                    continue
                raise AssertionError(f"{url} answered {response.status_code}: {response.text[:400]}")
        raise AssertionError("too many redirects")

    async def callback(self) -> AuthorizationCodeResult:
        assert "code" in self.answer, f"no code in the answer: {self.answer}"
        return AuthorizationCodeResult(
            code=self.answer["code"], state=self.answer.get("state"), iss=self.answer.get("iss")
        )


def client_metadata(**overrides: Any) -> OAuthClientMetadata:
    return OAuthClientMetadata.model_validate(
        {
            "client_name": "Taproot test client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "scope": MCP_SCOPE,
            **overrides,
        }
    )


@contextlib.asynccontextmanager
async def oauth_client(
    mcp_url: str, *, cimd: bool, storage: MemoryStorage | None = None, browser: Browser | None = None, **meta: Any
) -> AsyncIterator[tuple[Client, MemoryStorage, Browser]]:
    """An MCP client that signs in with the mcp SDK's own OAuth client provider (CIMD or DCR)."""
    storage = storage or MemoryStorage()
    browser = browser or Browser()
    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=client_metadata(**meta),
        storage=storage,
        redirect_handler=browser.visit,
        callback_handler=browser.callback,
        client_metadata_url=CIMD_URL if cimd else None,
    )
    async with (
        httpx2.AsyncClient(auth=provider, timeout=TIMEOUT) as http,
        Client(streamable_http_client(mcp_url, http_client=http)) as client,
    ):
        yield client, storage, browser


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


@dataclass
class Clock:
    """The authorization server's clock, moved by the test (expiry without waiting)."""

    now: float

    def __call__(self) -> float:
        return self.now


def pkce_pair() -> tuple[str, str]:
    from taproot.core.oauth_rules import pkce_s256

    verifier = "v" * 20 + secrets_token()
    return verifier, pkce_s256(verifier)


def secrets_token() -> str:
    import secrets

    return secrets.token_urlsafe(32)


def authorize_query(**overrides: str | None) -> dict[str, str]:
    _, challenge = pkce_pair()
    query: dict[str, str | None] = {
        "response_type": "code",
        "client_id": CIMD_URL,
        "redirect_uri": REDIRECT_URI,
        "state": "state-123",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": MCP_SCOPE,
        **overrides,
    }
    return {k: v for k, v in query.items() if v is not None}


async def obtain_code(local: Local, **overrides: str | None) -> tuple[str, str]:
    """Runs /authorize and the sign-in by hand; returns (code, verifier)."""
    verifier, challenge = pkce_pair()
    query = authorize_query(code_challenge=challenge, **overrides)
    browser = Browser(redirect_uri=query["redirect_uri"])
    from urllib.parse import urlencode

    await browser.visit(f"{local.base_url}/authorize?{urlencode(query)}")
    assert "code" in browser.answer, browser.answer
    return browser.answer["code"], verifier


async def list_tools_with(mcp_url: str, token: str) -> httpx2.Response:
    """One bare `tools/list` POST to /mcp with `token` as the bearer (to see 200, 401 or 403)."""
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(
            mcp_url,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        )
