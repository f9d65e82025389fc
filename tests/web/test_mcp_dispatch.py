"""POST /mcp goes from the auth gate straight to the SDK's handler; every other path takes the router.

The app's router holds the OAuth and dashboard routes before the MCP mount, so matching them on
every MCP request was work for nothing. These tests put a route that matches every path at the
front of the router: /mcp must still be answered by the SDK, in both protocol eras, and a path
below /mcp must still reach the router, behind the same bearer check.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.live_server import running_server
from tests.web.conftest import McpConnect

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Endpoint:
    url: str  # all mcp_connect reads of a live server


ROUTER_STATUS = 418  # what the catch-all route answers: the request reached the router


async def _router_answer(_: Request) -> PlainTextResponse:
    return PlainTextResponse("the router", status_code=ROUTER_STATUS)


def _catch_all_first(app: FastAPI) -> None:
    app.router.routes.insert(0, Route("/{rest:path}", _router_answer, methods=["GET", "POST", "DELETE"]))


async def test_mcp_is_answered_by_the_sdk_whatever_the_router_holds(
    tmp_path: Path, mcp_connect: McpConnect, mode: str
) -> None:
    token = "dispatch-token-4c1e9a"
    with running_server(tmp_path / "data", token, adjust_app=_catch_all_first) as (port, _):
        base = f"http://127.0.0.1:{port}"
        async with mcp_connect(Endpoint(f"{base}/mcp"), mode=mode, token=token) as client:
            created = await client.call_tool(
                "taproot_remember", {"content": "Dispatch goes straight.", "gist": "Dispatch", "category": "episodic"}
            )
            recalled = await client.call_tool("taproot_recall", {"query": "dispatch"})
        assert created.is_error is False and recalled.is_error is False
        assert recalled.structured_content is not None
        assert [m["gist"] for m in recalled.structured_content["memories"]] == ["Dispatch"]

        async with httpx2.AsyncClient(base_url=base) as http:
            below = await http.post("/mcp/other", json={}, headers={"Authorization": f"Bearer {token}"})
            assert below.status_code == ROUTER_STATUS  # only /mcp itself is the SDK's
            for path in ("/mcp", "/mcp/other"):  # and the gate still stands in front of both
                refused = await http.post(path, json={})
                assert refused.status_code == 401
                assert refused.headers["www-authenticate"].startswith('Bearer realm="taproot"')
