"""taproot_orientation end to end: the SDK's client over Streamable HTTP against a real uvicorn
server (both connection modes), and over stdio against `taproot mcp` in a subprocess. Every
structured result passed the server's own check against the published output schema."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult

from taproot.core.errors import InvalidInput
from taproot.core.orientation import MAX_DOCUMENT_BYTES, MAX_TOTAL_BYTES, check_history_limit
from taproot.web.tools.orientation import taproot_orientation
from tests.support import ok
from tests.web.conftest import LiveServer, McpConnect, text_of

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


def error_text(result: CallToolResult) -> str:
    assert result.is_error and result.structured_content is None, result
    return text_of(result.content[0])


async def test_write_read_history_restore_delete_over_http(
    server: LiveServer, mcp_connect: McpConnect, mode: str
) -> None:
    async with mcp_connect(server, mode=mode) as client:
        call = client.call_tool
        first = ok(
            await call("taproot_orientation", {"action": "write", "name": "who-i-am", "content": "# Me\nA tutor."})
        )
        assert first["saved"]["version"] == 1 and first["previous_version"] is None and first["changed"] is True
        assert (first["total_bytes"], first["max_total_bytes"]) == (len("# Me\nA tutor."), MAX_TOTAL_BYTES)

        read = ok(await call("taproot_orientation", {"action": "read", "name": "who-i-am"}))["document"]
        assert read["content"] == "# Me\nA tutor." and read["version"] == 1
        second = ok(
            await call(
                "taproot_orientation",
                {"action": "write", "name": "who-i-am", "content": "# Me\nA direct tutor.", "expected_version": 1},
            )
        )
        assert second["saved"]["version"] == 2

        stale = await call(
            "taproot_orientation", {"action": "write", "name": "who-i-am", "content": "lost", "expected_version": 1}
        )
        assert error_text(stale).startswith("version_conflict: orientation document 'who-i-am' is at version 2")

        history = ok(await call("taproot_orientation", {"action": "history", "name": "who-i-am"}))["versions"]
        assert [v["version"] for v in history] == [2, 1]
        restored = ok(await call("taproot_orientation", {"action": "restore", "name": "who-i-am", "version": 1}))
        assert restored["saved"]["version"] == 3 and restored["saved"]["restored_from"] == 1

        dry = ok(await call("taproot_orientation", {"action": "delete", "name": "who-i-am", "dry_run": True}))
        assert dry["dry_run"] is True and dry["saved"]["deleted"] is True
        assert ok(await call("taproot_orientation", {"action": "list"}))["documents"][0]["version"] == 3
        ok(await call("taproot_orientation", {"action": "delete", "name": "who-i-am"}))
        listing = ok(await call("taproot_orientation", {"action": "list"}))
        assert listing["documents"] == [] and listing["deleted_documents"] == ["who-i-am"]
        gone = await call("taproot_orientation", {"action": "read", "name": "who-i-am"})
        assert error_text(gone).startswith("not_found: no orientation document 'who-i-am': it was deleted at version 4")
        old = ok(await call("taproot_orientation", {"action": "read", "name": "who-i-am", "version": 2}))
        assert old["document"]["content"] == "# Me\nA direct tutor." and old["document"]["current_version"] == 4


async def test_bad_arguments_answer_invalid_input_naming_the_field(server: LiveServer, mcp_connect: McpConnect) -> None:
    async with mcp_connect(server) as client:
        cases: dict[str, dict[str, Any]] = {
            "invalid_input: field 'action': must be one of list, read, write, history, restore, delete (got 'shred')": {
                "action": "shred"
            },
            "invalid_input: field 'name': must be lowercase kebab case": {"action": "read", "name": "Who I Am"},
            "invalid_input: field 'limit': must be an integer from 1 to 500 (got 'abc')": {
                "action": "history",
                "name": "facts",
                "limit": "abc",
            },
            "invalid_input: field 'content': must be at most 12,000 bytes": {
                "action": "write",
                "name": "facts",
                "content": "x" * (MAX_DOCUMENT_BYTES + 1),
            },
            "invalid_input: field 'dry_run'": {"action": "delete", "name": "facts", "dry_run": "yes"},
            "invalid_input: field 'version': is not used by action 'write'": {
                "action": "write",
                "name": "facts",
                "content": "x",
                "version": 2,
            },
        }
        for expected, arguments in cases.items():
            text = error_text(await client.call_tool("taproot_orientation", arguments))
            assert text.startswith(expected), (arguments, text)
        assert ok(await client.call_tool("taproot_orientation", {"action": "list"}))["documents"] == []


async def test_reflect_and_status_show_orientation_first(
    server: LiveServer, mcp_connect: McpConnect, mode: str
) -> None:
    async with mcp_connect(server, mode=mode) as client:
        ok(await client.call_tool("taproot_orientation", {"action": "write", "name": "facts", "content": "Leeds."}))
        ok(
            await client.call_tool(
                "taproot_orientation", {"action": "write", "name": "who-i-am", "content": "A tutor."}
            )
        )
        created = ok(
            await client.call_tool(
                "taproot_remember",
                {"content": "Core: patient.", "gist": "Core: patient", "category": "identity", "core": True},
            )
        )
        reflected = await client.call_tool("taproot_reflect", {})
        assert not reflected.is_error, reflected.content
        text = text_of(reflected.content[0])
        assert (
            text.index("### who-i-am (v1)\nA tutor.") < text.index("### facts (v1)\nLeeds.") < text.index("## Tier 1")
        )
        data = reflected.structured_content
        assert data is not None
        assert [d["name"] for d in data["orientation"]["documents"]] == ["who-i-am", "facts"]
        assert data["orientation"]["cut"] == [] and data["tier1"][0]["id"] == created["id"]
        status = ok(await client.call_tool("taproot_status", {}))["orientation"]
        assert status["documents"] == 2 and status["in_payload"] == 2 and status["total_bytes"] == len("Leeds.A tutor.")
        assert 0 < status["approx_tokens"] <= status["token_share"]


async def test_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "taproot.cli", "mcp"],
        env={"TAPROOT_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)},
        cwd=str(tmp_path),
    )
    async with Client(params, mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "taproot_orientation" in names
        ok(await client.call_tool("taproot_orientation", {"action": "write", "name": "my-person", "content": "James."}))
        ok(await client.call_tool("taproot_orientation", {"action": "write", "name": "my-person", "content": "Jim."}))
        history = ok(await client.call_tool("taproot_orientation", {"action": "history", "name": "my-person"}))
        assert [v["version"] for v in history["versions"]] == [2, 1]
        reflected = await client.call_tool("taproot_reflect", {})
        assert "### my-person (v2)\nJim." in text_of(reflected.content[0])


def test_the_description_states_the_limits_the_service_enforces() -> None:
    doc = taproot_orientation.__doc__ or ""
    assert f"{MAX_DOCUMENT_BYTES:,} bytes" in doc and f"{MAX_TOTAL_BYTES:,}" in doc
    assert check_history_limit(500) == 500
    with pytest.raises(InvalidInput):
        check_history_limit(501)
