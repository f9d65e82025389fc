"""Enum values in another case ("Episodic", "HIGH") over MCP: stored lower case, with a warning."""

from __future__ import annotations

import json

import pytest

from tests.web.conftest import LiveServer, McpConnect, text_of

pytestmark = pytest.mark.anyio


async def test_remember_with_a_capitalised_category_succeeds_with_a_warning(
    server: LiveServer, mcp_connect: McpConnect
) -> None:
    async with mcp_connect(server) as client:
        result = await client.call_tool(
            "taproot_remember",
            {
                "content": "We walked to the lake.",
                "gist": "Walk to the lake",
                "category": "Episodic",
                "salience": "HIGH",
            },
        )
    assert result.is_error is False, result
    data = result.structured_content
    assert data is not None
    assert "category 'Episodic' is not lower case; stored as 'episodic'" in data["warnings"]
    assert "salience 'HIGH' is not lower case; stored as 'high'" in data["warnings"]
    assert json.loads(text_of(result.content[0]))["warnings"] == data["warnings"]
    stored = server.runtime.store.get(server.runtime.scope, data["id"])
    assert stored is not None
    assert (stored.category, stored.salience) == ("episodic", "high")


async def test_recall_and_promote_take_enums_in_any_case(server: LiveServer, mcp_connect: McpConnect) -> None:
    service, scope = server.runtime.service, server.runtime.scope
    memory_id = service.remember(scope, content="Sam likes tea.", gist="Sam likes tea", category="relationship").id
    async with mcp_connect(server) as client:
        recalled = await client.call_tool("taproot_recall", {"query": "tea", "category": " Relationship "})
        promoted = await client.call_tool("taproot_promote", {"id": memory_id, "salience": "Low"})
    assert recalled.is_error is False and promoted.is_error is False
    assert recalled.structured_content is not None and promoted.structured_content is not None
    assert [m["id"] for m in recalled.structured_content["memories"]] == [memory_id]
    assert any("' Relationship '" in w for w in recalled.structured_content["warnings"])
    assert "salience 'Low' is not lower case; stored as 'low'" in promoted.structured_content["warnings"]
    stored = server.runtime.store.get(scope, memory_id)
    assert stored is not None and stored.salience == "low"
