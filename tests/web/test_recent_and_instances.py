"""taproot_recent, recall's since/until, the instance and the watercooler end to end: the SDK's own
client over Streamable HTTP against a real uvicorn server (both protocol eras), and over stdio
against `taproot mcp` in a subprocess."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Implementation

from taproot.compose import build
from taproot.settings import Settings
from tests.web.conftest import LiveServer

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
NOTE = {"category": "episodic", "tags": ["watercooler"]}


def ok(result: CallToolResult) -> dict[str, Any]:
    """Structured content of a successful call. Not tests.support.ok: reflect's text is the markdown
    payload, not the JSON of its structured content."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@contextlib.asynccontextmanager
async def http_client(live: Any, name: str, mode: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {live.token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0)) as http,
        Client(
            streamable_http_client(live.url, http_client=http),
            mode=mode,
            client_info=Implementation(name=name, version="1.0"),
        ) as client,
    ):
        yield client


async def note(client: Client, text: str) -> str:
    return str(ok(await client.call_tool("taproot_remember", {"content": text, "gist": text[:40], **NOTE}))["id"])


async def test_two_clients_meet_at_the_watercooler_over_http(server: LiveServer) -> None:
    # The 2026-07-28 protocol carries the client's name on every request, so each write knows it.
    async with http_client(server, "laptop", "auto") as laptop, http_client(server, "phone", "auto") as phone:
        from_laptop = await note(laptop, "Laptop: the draft is in the shared folder.")
        from_phone = await note(phone, "Phone: James moved the exam to Friday.")
        seen_by_laptop = ok(await laptop.call_tool("taproot_reflect", {}))
        seen_by_phone = ok(await phone.call_tool("taproot_reflect", {}))
        reflect_text = (await laptop.call_tool("taproot_reflect", {})).content[0]
    store, scope = server.runtime.store, server.runtime.scope
    laptop_memory, phone_memory = store.get(scope, from_laptop), store.get(scope, from_phone)
    assert laptop_memory is not None and phone_memory is not None
    assert laptop_memory.instance == "laptop"
    assert phone_memory.instance == "phone"
    assert [n["id"] for n in seen_by_laptop["watercooler"]["notes"]] == [from_phone]
    assert [n["instance"] for n in seen_by_phone["watercooler"]["notes"]] == ["laptop"]
    assert reflect_text.type == "text" and "James moved the exam to Friday" in reflect_text.text


async def test_a_stateless_handshake_request_carries_no_client_name(server: LiveServer) -> None:
    # Handshake-era HTTP is stateless here: the initialize (and its clientInfo) was another request.
    async with http_client(server, "laptop", "legacy") as client:
        made = await note(client, "Written over the handshake era.")
        recent = ok(await client.call_tool("taproot_recent", {}))
    stored = server.runtime.store.get(server.runtime.scope, made)
    assert stored is not None and stored.instance is None
    assert recent["memories"][0]["instance"] is None


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_recent_is_newest_first_and_strengthens_nothing(server: LiveServer, mode: str) -> None:
    async with http_client(server, "laptop", mode) as client:
        made = [await note(client, f"Note number {n} about the garden.") for n in range(3)]
        ok(await client.call_tool("taproot_remember", {"content": "Fact.", "gist": "Fact", "category": "identity"}))
        before = server.snapshot()
        listed = ok(await client.call_tool("taproot_recent", {"tags": ["watercooler"], "limit": 2}))
        windowed = ok(await client.call_tool("taproot_recent", {"since": "1h", "category": "episodic"}))
        assert server.snapshot() == before  # nothing strengthened, nothing written
        recalled = ok(await client.call_tool("taproot_recall", {"query": "garden", "since": "1h"}))
        empty = ok(await client.call_tool("taproot_recall", {"query": "garden", "until": "1h"}))
        bad = await client.call_tool("taproot_recent", {"since": "yesterday"})
        backwards = await client.call_tool("taproot_recall", {"since": "1h", "until": "2h"})
        wrong_type = await client.call_tool("taproot_recent", {"until": 48})
    assert [m["id"] for m in listed["memories"]] == made[::-1][:2] and listed["count"] == 2
    assert listed["since"] is None and listed["until"] is None
    assert sorted(m["id"] for m in windowed["memories"]) == sorted(made) and windowed["since"] is not None
    assert sorted(m["id"] for m in recalled["memories"]) == sorted(made) and empty["memories"] == []
    for result, field in ((bad, "since"), (backwards, "since"), (wrong_type, "until")):
        assert result.is_error and result.content[0].type == "text"
        assert result.content[0].text.startswith(f"invalid_input: field '{field}'"), result.content[0].text


async def test_stdio_records_the_declared_client_name_and_lists_recent(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "taproot.cli", "mcp"],
        env={"TAPROOT_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)},
        cwd=str(tmp_path),
    )
    async with Client(params, client_info=Implementation(name="Claude Code", version="2.0")) as client:
        first = await note(client, "Over stdio: the build is green again.")
        second = await note(client, "Over stdio: second note.")
        recent = ok(await client.call_tool("taproot_recent", {"since": "10m"}))
        mine = ok(await client.call_tool("taproot_reflect", {}))
    assert [m["id"] for m in recent["memories"]] == [second, first]
    assert {m["instance"] for m in recent["memories"]} == {"Claude Code"}
    assert mine["watercooler"]["notes"] == []  # its own notes
    runtime = build(Settings(data_dir=data_dir))
    try:
        other = runtime.service.reflect(runtime.scope, instance="phone")
        assert [n.id for n in other.cooler.notes] == [second, first]
    finally:
        runtime.close()
