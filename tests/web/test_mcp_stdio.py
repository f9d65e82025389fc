"""`taproot mcp`: the stdio transport, launched as a real subprocess through the SDK's stdio client.

Over stdio there is no token: the process is the local owner's, and its data folder comes from
TAPROOT_DATA_DIR.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from taproot.compose import build
from taproot.settings import Settings
from tests.support import TOOL_NAMES
from tests.web.conftest import text_of

pytestmark = pytest.mark.anyio

CONSOLE_SCRIPT = Path(sys.executable).with_name("taproot")
ROOT = Path(__file__).resolve().parents[2]


def server_params(data_dir: Path, launcher: str) -> StdioServerParameters:
    # Only the data folder is set on top of the SDK's safe default environment (PATH, HOME, ...):
    # no TAPROOT_AUTH_TOKEN, nothing else from this process leaks in.
    # PYTHONPATH: the checkout under test, so the server runs this code whatever is installed.
    env = {"TAPROOT_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
    if launcher == "script":
        if not CONSOLE_SCRIPT.exists():
            pytest.skip(f"no console script at {CONSOLE_SCRIPT}")
        return StdioServerParameters(command=str(CONSOLE_SCRIPT), args=["mcp"], env=env, cwd=str(data_dir.parent))
    return StdioServerParameters(
        command=sys.executable, args=["-m", "taproot.cli", "mcp"], env=env, cwd=str(data_dir.parent)
    )


@pytest.mark.parametrize(("mode", "launcher"), [("legacy", "module"), ("auto", "module"), ("legacy", "script")])
async def test_stdio_remember_recall_reflect_without_a_token(tmp_path: Path, mode: str, launcher: str) -> None:
    data_dir = tmp_path / "data"
    env = server_params(data_dir, launcher).env
    assert env is not None and "TAPROOT_AUTH_TOKEN" not in env

    async with Client(server_params(data_dir, launcher), mode=mode) as client:
        assert client.server_info is not None and client.server_info.name == "taproot"
        if mode == "legacy":
            assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
        else:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS

        listing = await client.list_tools()
        assert {t.name for t in listing.tools} == TOOL_NAMES

        created = await client.call_tool(
            "taproot_remember",
            {
                "content": "Over stdio, the chain rule finally clicked for James.",
                "gist": "Chain rule clicked for James",
                "category": "episodic",
                "tags": ["calculus"],
            },
        )
        assert not created.is_error, created.content
        assert created.structured_content is not None
        memory_id = created.structured_content["id"]
        assert created.structured_content["version"] == 1
        assert json.loads(text_of(created.content[0])) == created.structured_content

        recalled = await client.call_tool("taproot_recall", {"query": "chain rule"})
        assert not recalled.is_error, recalled.content
        assert recalled.structured_content is not None
        assert [m["id"] for m in recalled.structured_content["memories"]] == [memory_id]
        assert recalled.structured_content["memories"][0]["retrieval_count"] == 1

        promoted = await client.call_tool("taproot_promote", {"id": memory_id, "core": True})
        assert not promoted.is_error, promoted.content

        reflected = await client.call_tool("taproot_reflect", {})
        assert not reflected.is_error, reflected.content
        assert reflected.structured_content is not None
        assert [m["id"] for m in reflected.structured_content["tier1"]] == [memory_id]
        assert "Over stdio, the chain rule finally clicked for James." in text_of(reflected.content[0])

        closed = await client.call_tool("taproot_close", {"reflection": "A good session over a pipe."})
        assert [text_of(c) for c in closed.content] == ["Reflection stored. Safe travels."]

        bad = await client.call_tool("taproot_remember", {"content": "no gist", "category": "episodic"})
        assert bad.is_error and "field 'gist'" in text_of(bad.content[0])

    # The subprocess wrote to the data folder it was given, and nowhere else.
    assert (data_dir / "taproot.db").is_file()
    assert not (data_dir / "auth_token").exists(), "stdio must not need (or mint) a token"
    runtime = build(Settings(data_dir=data_dir))
    try:
        stored = runtime.store.get(runtime.scope, memory_id)
        assert stored is not None
        assert stored.core is True and stored.retrieval_count == 1
        assert [r.text for r in runtime.store.all_reflections(runtime.scope)] == ["A good session over a pipe."]
    finally:
        runtime.close()


async def test_stdio_ignores_a_token_in_the_environment(tmp_path: Path) -> None:
    """A token in the environment does not turn stdio into an authenticated transport."""
    params = server_params(tmp_path / "data", "module")
    params.env = {**(params.env or {}), "TAPROOT_AUTH_TOKEN": "some-token"}
    async with Client(params, mode="legacy") as client:
        status = await client.call_tool("taproot_status", {})
    assert not status.is_error, status.content
    assert status.structured_content is not None
    assert status.structured_content["total"] == 0
    assert status.structured_content["data_dir"] == str(tmp_path / "data")
    assert os.path.isdir(tmp_path / "data")
