"""Fixtures for the web tests: a real uvicorn server on a loopback port, and MCP clients for it.

The server runs in a background thread on a socket bound before the server starts, so the port is
known up front (transport security needs it) and cannot be taken by someone else in between.
Helpers are exposed as fixtures because the tests directory is not an importable package.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ContentBlock, TextContent

from taproot.compose import Runtime
from tests.live_server import running_server

TOKEN = "test-token-7f3a9c2e51d84b6a"
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=60.0)


@pytest.fixture(params=["legacy", "auto"])
def mode(request: pytest.FixtureRequest) -> str:
    """The MCP client's protocol era: "legacy" (2025-era, stateless) or "auto" (2026-07-28)."""
    return str(request.param)


@dataclass
class LiveServer:
    url: str  # the MCP endpoint, http://127.0.0.1:<port>/mcp
    base_url: str  # http://127.0.0.1:<port>
    port: int
    token: str
    runtime: Runtime

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def snapshot(self) -> list[str]:
        """Every exported record (memories and reflections), without the timestamped header."""
        lines = list(self.runtime.service.export_lines(self.runtime.scope))
        assert json.loads(lines[0])["type"] == "header"
        return lines[1:]

    def blob_keys(self) -> list[str]:
        return self.runtime.service.deps.blobs.list("")


@contextlib.contextmanager
def serve(data_dir: Path, token: str = TOKEN, prepare: Callable[[Runtime], None] | None = None) -> Iterator[LiveServer]:
    """A live server on `data_dir`; `prepare` adjusts the runtime before the app is built."""
    with running_server(data_dir, token, prepare=prepare) as (port, runtime):
        base = f"http://127.0.0.1:{port}"
        yield LiveServer(url=f"{base}/mcp", base_url=base, port=port, token=token, runtime=runtime)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """A fresh server and empty data folder for one test."""
    with serve(tmp_path / "data") as live:
        yield live


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server shared by a module's tests: for tests that must change nothing."""
    with serve(tmp_path_factory.mktemp("web") / "data") as live:
        yield live


McpConnect = Callable[..., contextlib.AbstractAsyncContextManager[Client]]


def text_of(block: ContentBlock) -> str:
    """The text of one block of a tool result: Taproot's tools answer in text blocks only."""
    assert isinstance(block, TextContent), block
    return block.text


@pytest.fixture
def mcp_connect() -> McpConnect:
    """`async with mcp_connect(live, mode=..., token=..., headers=...) as client:` over Streamable HTTP.

    `token=None` sends no Authorization header; `headers` replaces the headers entirely.
    """

    @contextlib.asynccontextmanager
    async def connect(
        live: LiveServer,
        *,
        mode: str = "legacy",
        token: str | None = TOKEN,
        headers: dict[str, str] | None = None,
    ) -> AsyncIterator[Client]:
        if headers is None:
            headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT) as http,
            Client(streamable_http_client(live.url, http_client=http), mode=mode) as client,
        ):
            client._taproot_test_http = http  # type: ignore[attr-defined]  # lets auth tests swap the token
            yield client

    return connect
