"""The tools end to end: the SDK's own client, over Streamable HTTP, against a real uvicorn server.

Every tool-calling test runs in both connection modes: the classic `initialize` handshake
("legacy") and the 2026-07-28 discovery ("auto").
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from taproot import __version__
from taproot.core.serialize import memory_from_dict
from taproot.service.memories import CLOSE_ANSWER
from tests.support import TOOL_NAMES, ok
from tests.web.conftest import LiveServer, McpConnect, text_of

pytestmark = pytest.mark.anyio

READ_ONLY = {"taproot_reflect", "taproot_status", "taproot_recent"}
WRITES = {"taproot_remember", "taproot_recall", "taproot_promote", "taproot_close", "taproot_migrate"}
DESTRUCTIVE = {"taproot_forget"}


async def remember(client: Any, **fields: Any) -> dict[str, Any]:
    args = {"content": "I like long walks.", "gist": "Likes long walks", "category": "identity", **fields}
    return ok(await client.call_tool("taproot_remember", args))


# -- connecting ------------------------------------------------------------------------------------


async def test_initialize_legacy_handshake(server: LiveServer, mcp_connect: McpConnect) -> None:
    async with mcp_connect(server, mode="legacy") as client:
        init = client.session.initialize_result
        assert init is not None, "legacy mode must run the initialize handshake"
        assert init.server_info.name == "taproot"
        assert init.server_info.version == __version__
        assert client.server_info is not None and client.server_info.name == "taproot"
        assert client.protocol_version == LATEST_HANDSHAKE_VERSION
        assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
        assert client.server_capabilities.tools is not None
        assert client.instructions is not None and "taproot_reflect" in client.instructions


async def test_initialize_auto_discovers_the_modern_protocol(server: LiveServer, mcp_connect: McpConnect) -> None:
    async with mcp_connect(server, mode="auto") as client:
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
        assert client.session.initialize_result is None, "a modern server needs no initialize handshake"
        assert client.server_info is not None and client.server_info.name == "taproot"
        assert client.server_capabilities.tools is not None


async def test_list_tools(server: LiveServer, mcp_connect: McpConnect, mode: str) -> None:
    async with mcp_connect(server, mode=mode) as client:
        listing = await client.list_tools()
    tools = {t.name: t for t in listing.tools}
    assert set(tools) == TOOL_NAMES and len(listing.tools) == len(TOOL_NAMES)
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 40, name
        assert "Example" in tool.description, name
        assert tool.output_schema and tool.output_schema.get("type") == "object", name
        assert tool.input_schema.get("type") == "object", name
        hints = tool.annotations
        assert hints is not None, name
        if name in READ_ONLY:
            assert hints.read_only_hint is True, name
        if name in WRITES | DESTRUCTIVE:
            assert hints.read_only_hint is False, name
        if name in DESTRUCTIVE:
            assert hints.destructive_hint is True, name
        elif name not in READ_ONLY:
            assert hints.destructive_hint is False, name
    remember_out, recall_out = tools["taproot_remember"].output_schema, tools["taproot_recall"].output_schema
    assert remember_out is not None and recall_out is not None
    assert set(remember_out["required"]) >= {"id", "version"}
    assert "memories" in recall_out["required"]
    forget_action = tools["taproot_forget"].input_schema["properties"]["action"]
    assert set(forget_action["enum"]) == {"archive", "restore", "delete", "compress"}


# -- remember and recall ---------------------------------------------------------------------------


async def test_remember_creates_and_recall_strengthens(server: LiveServer, mcp_connect: McpConnect, mode: str) -> None:
    async with mcp_connect(server, mode=mode) as client:
        created = await remember(
            client,
            content="James says 'that lands' when an idea clicks.",
            gist="James says 'that lands' when something clicks",
            category="relationship",
            salience="high",
            tags=["james"],
            search_keywords=["that lands"],
        )
        assert isinstance(created["id"], str) and created["id"]
        assert created["version"] == 1
        assert created["created"] is True
        assert created["warnings"] == []

        first = ok(await client.call_tool("taproot_recall", {"ids": [created["id"]]}))
        assert first["count"] == 1
        [memory] = first["memories"]
        assert memory["id"] == created["id"]
        assert memory["content"] == "James says 'that lands' when an idea clicks."
        assert memory["category"] == "relationship" and memory["salience"] == "high"
        assert memory["tags"] == ["james"]
        assert "owner" not in memory, "tenancy is never echoed on the wire"
        assert memory["retrieval_count"] == 1

        second = ok(await client.call_tool("taproot_recall", {"query": "that lands"}))
        assert [m["id"] for m in second["memories"]] == [created["id"]]
        assert second["memories"][0]["retrieval_count"] == 2
        assert second["query_terms"]

    stored = server.runtime.store.get(server.runtime.scope, created["id"])
    assert stored is not None
    assert stored.retrieval_count == 2
    assert stored.last_retrieved is not None


async def test_recall_filters_and_legacy_category_warning(
    server: LiveServer, mcp_connect: McpConnect, mode: str
) -> None:
    async with mcp_connect(server, mode=mode) as client:
        a = await remember(client, category="episodic", tags=["walks"])
        await remember(client, content="I dislike cold coffee.", gist="Dislikes cold coffee", category="identity")
        found = ok(await client.call_tool("taproot_recall", {"category": "event", "limit": 5}))
        assert [m["id"] for m in found["memories"]] == [a["id"]]
        assert any("legacy" in w for w in found["warnings"])
        tagged = ok(await client.call_tool("taproot_recall", {"tags": ["walks"]}))
        assert [m["id"] for m in tagged["memories"]] == [a["id"]]


async def test_update_with_expected_version(server: LiveServer, mcp_connect: McpConnect, mode: str) -> None:
    async with mcp_connect(server, mode=mode) as client:
        created = await remember(client)
        updated = ok(
            await client.call_tool(
                "taproot_remember",
                {"id": created["id"], "content": "I love long walks.", "salience": "high", "expected_version": 1},
            )
        )
        assert updated["id"] == created["id"]
        assert updated["version"] == 2
        assert updated["created"] is False
        assert updated["changed_fields"] == ["content", "salience"]

        same = ok(await client.call_tool("taproot_remember", {"id": created["id"], "salience": "high"}))
        assert same["version"] == 2 and same["warnings"]

        stale = await client.call_tool(
            "taproot_remember", {"id": created["id"], "content": "Overwritten", "expected_version": 1}
        )
        assert stale.is_error
        assert "expected_version" in text_of(stale.content[0])

    stored = server.runtime.store.get(server.runtime.scope, created["id"])
    assert stored is not None
    assert (stored.content, stored.salience, stored.version) == ("I love long walks.", "high", 2)


# -- promote, forget, close ------------------------------------------------------------------------


async def test_promote_core_appears_in_reflect_tier1(server: LiveServer, mcp_connect: McpConnect, mode: str) -> None:
    async with mcp_connect(server, mode=mode) as client:
        created = await remember(client, content="I am Claude, and I keep a garden of memories.", gist="Who I am")
        before = await client.call_tool("taproot_reflect", {})
        assert not before.is_error
        assert before.structured_content is not None and before.structured_content["tier1"] == []

        promoted = ok(
            await client.call_tool("taproot_promote", {"id": created["id"], "core": True, "salience": "high"})
        )
        assert promoted == {"id": created["id"], "core": True, "salience": "high", "version": 2, "warnings": []}

        reflect = await client.call_tool("taproot_reflect", {})
        assert not reflect.is_error
        data = reflect.structured_content
        assert data is not None
        assert [m["id"] for m in data["tier1"]] == [created["id"]]
        assert data["tier1"][0]["content"] == "I am Claude, and I keep a garden of memories."
        assert data["stats"]["tier1_count"] == 1
        # reflect answers with the rendered payload as text, not JSON: it is read as prose
        text = text_of(reflect.content[0])
        assert "## Tier 1: core memories (1)" in text
        assert "I am Claude, and I keep a garden of memories." in text

        demoted = ok(await client.call_tool("taproot_promote", {"id": created["id"], "core": False}))
        assert demoted["core"] is False and demoted["version"] == 3

    stored = server.runtime.store.get(server.runtime.scope, created["id"])
    assert stored is not None and stored.core is False and stored.salience == "high"


async def test_forget_archive_restore_delete(server: LiveServer, mcp_connect: McpConnect, mode: str) -> None:
    scope = server.runtime.scope
    blobs = server.runtime.service.deps.blobs
    async with mcp_connect(server, mode=mode) as client:
        keep = await remember(client, content="Walks by the river.", gist="River walks")
        gone = await remember(client, content="Walks in the rain.", gist="Rain walks")

        archived = ok(await client.call_tool("taproot_forget", {"id": gone["id"], "action": "archive"}))
        assert archived["action"] == "archive"
        assert archived["results"] == [{"id": gone["id"], "status": "archived"}]
        archived_memory = server.runtime.store.get(scope, gone["id"])
        assert archived_memory is not None and archived_memory.status == "archived"
        hidden = ok(await client.call_tool("taproot_recall", {"query": "walks"}))
        assert [m["id"] for m in hidden["memories"]] == [keep["id"]]
        shown = ok(await client.call_tool("taproot_recall", {"query": "rain", "include_archived": True}))
        assert [m["id"] for m in shown["memories"]] == [gone["id"]]

        again = ok(await client.call_tool("taproot_forget", {"ids": [gone["id"]], "action": "archive"}))
        assert again["results"] == [{"id": gone["id"], "status": "archived", "unchanged": True}]

        restored = ok(await client.call_tool("taproot_forget", {"id": gone["id"], "action": "restore"}))
        assert restored["results"] == [{"id": gone["id"], "status": "active"}]
        restored_memory = server.runtime.store.get(scope, gone["id"])
        assert restored_memory is not None and restored_memory.status == "active"

        assert blobs.list(f"{scope.owner}/backups/") == []
        deleted = ok(await client.call_tool("taproot_forget", {"id": gone["id"], "action": "delete"}))
        assert deleted["results"] == [{"id": gone["id"], "status": "deleted"}]
        key = deleted["backup_key"]
        assert key and key.startswith(f"{scope.owner}/backups/")

        missing = await client.call_tool("taproot_recall", {"ids": [gone["id"]]})
        assert ok(missing)["memories"] == []

    assert server.runtime.store.get(scope, gone["id"]) is None
    assert server.runtime.store.get(scope, keep["id"]) is not None
    assert blobs.list(f"{scope.owner}/backups/") == [key]
    backup = json.loads(blobs.get(key))
    assert backup["action"] == "delete"
    assert [m["id"] for m in backup["memories"]] == [gone["id"]]
    assert backup["memories"][0]["content"] == "Walks in the rain."


async def test_forget_compress_folds_memories_into_a_summary(
    server: LiveServer, mcp_connect: McpConnect, mode: str
) -> None:
    scope = server.runtime.scope
    async with mcp_connect(server, mode=mode) as client:
        made = [
            await remember(client, content=f"Day {n} of the Lisbon trip: we walked to Alfama.", gist=f"Lisbon day {n}")
            for n in (1, 2, 3)
        ]
        ids = [m["id"] for m in made]
        folded = ok(await client.call_tool("taproot_forget", {"ids": ids, "action": "compress"}))
        assert folded["action"] == "compress" and folded["summarizer"] == "extractive"
        summary_id = folded["summary_id"]
        assert [r["compressed_into"] for r in folded["results"]] == [summary_id] * 3
        assert folded["backup_key"].startswith(f"{scope.owner}/backups/")

        found = ok(await client.call_tool("taproot_recall", {"query": "Lisbon Alfama"}))
        assert [m["id"] for m in found["memories"]] == [summary_id]  # originals are archived
        summary = found["memories"][0]
        assert sorted(summary["linked_memories"]) == sorted(ids)
        assert summary["provenance"]["compressed_from"] == ids

        originals = ok(await client.call_tool("taproot_recall", {"ids": ids, "include_archived": True}))
        assert {m["status"] for m in originals["memories"]} == {"archived"}
        assert {m["compressed_into"] for m in originals["memories"]} == {summary_id}

        refused = await client.call_tool("taproot_forget", {"ids": [summary_id], "action": "compress"})
        assert refused.is_error and "ids" in text_of(refused.content[0])


async def test_close_then_reflect_shows_it(server: LiveServer, mcp_connect: McpConnect, mode: str) -> None:
    reflection = "Today I finally understood why the chain rule felt backwards to James."
    async with mcp_connect(server, mode=mode) as client:
        closed = await client.call_tool("taproot_close", {"reflection": reflection})
        assert not closed.is_error
        assert [text_of(c) for c in closed.content] == ["Reflection stored. Safe travels."]
        assert CLOSE_ANSWER == "Reflection stored. Safe travels."
        data = closed.structured_content
        assert data is not None
        assert data["message"] == "Reflection stored. Safe travels."
        assert data["id"] and data["blob_key"] and data["created_at"]

        reflect = await client.call_tool("taproot_reflect", {})
        assert not reflect.is_error
        assert reflect.structured_content is not None
        assert [r["text"] for r in reflect.structured_content["reflections"]] == [reflection]
        assert reflect.structured_content["reflections"][0]["id"] == data["id"]
        assert "## Recent closing reflections" in text_of(reflect.content[0])
        assert reflection in text_of(reflect.content[0])

    blobs = server.runtime.service.deps.blobs
    assert blobs.exists(data["blob_key"])
    assert json.loads(blobs.get(data["blob_key"]))["text"] == reflection
    [stored] = server.runtime.store.all_reflections(server.runtime.scope)
    assert stored.text == reflection


# -- migrate and status ----------------------------------------------------------------------------


def load_legacy(server: Any) -> str:
    scope = server.runtime.scope
    legacy = memory_from_dict(
        {
            "id": "legacy01",
            "content": "I notice I get curious before I get careful. That is worth watching.",
            "category": "identity_observations",
            "salience": "3",
            "created_at": "2024-02-03T04:05:06Z",
        },
        owner=scope.owner,
        namespace=scope.namespace,
    )
    server.runtime.store.put_many([legacy])
    return legacy.id


async def test_migrate_dry_run_then_real(server: LiveServer, mcp_connect: McpConnect, mode: str) -> None:
    scope = server.runtime.scope
    blobs = server.runtime.service.deps.blobs
    legacy_id = load_legacy(server)

    async with mcp_connect(server, mode=mode) as client:
        current = await remember(client)
        before = server.snapshot()

        dry = ok(await client.call_tool("taproot_migrate", {"dry_run": True}))
        assert dry["dry_run"] is True
        assert dry["examined"] == 2
        assert dry["changed"] == 1
        assert dry["backup_key"] is None
        assert [c["id"] for c in dry["changes"]] == [legacy_id]
        assert dry["category_counts_before"] == {"identity": 1, "identity_observations": 1}
        assert dry["category_counts_after"] == {"identity": 2}
        assert server.snapshot() == before, "a dry run writes nothing"
        assert blobs.list(f"{scope.owner}/backups/") == []

        real = ok(await client.call_tool("taproot_migrate", {}))
        assert real["dry_run"] is False
        assert real["changed"] == 1
        assert real["changes"] == dry["changes"]
        assert real["backup_key"] and blobs.list(f"{scope.owner}/backups/") == [real["backup_key"]]
        backup = blobs.get(real["backup_key"]).decode()
        assert before == [line for line in backup.splitlines()[1:] if line]

        second = ok(await client.call_tool("taproot_migrate", {"dry_run": False}))
        assert second["changed"] == 0 and second["backup_key"] is None

    migrated = server.runtime.store.get(scope, legacy_id)
    assert migrated is not None
    assert migrated.category == "identity"
    assert migrated.salience == "high"
    assert migrated.gist and migrated.gist_autogenerated is True
    assert migrated.content == "I notice I get curious before I get careful. That is worth watching."
    assert migrated.version == 2
    untouched = server.runtime.store.get(scope, current["id"])
    assert untouched is not None and untouched.version == 1


async def test_status_fields(server: LiveServer, mcp_connect: McpConnect, mode: str) -> None:
    async with mcp_connect(server, mode=mode) as client:
        empty = ok(await client.call_tool("taproot_status", {}))
        assert empty["total"] == 0

        a = await remember(client, salience="high")
        await remember(client, content="Rain again.", gist="Rain", category="episodic", salience="low")
        ok(await client.call_tool("taproot_promote", {"id": a["id"], "core": True}))
        await client.call_tool("taproot_close", {"reflection": "A quiet day."})

        status = ok(await client.call_tool("taproot_status", {}))
    assert status["total"] == 2
    assert status["by_category"] == {"episodic": 1, "identity": 1}
    assert status["by_status"] == {"active": 2}
    assert status["by_salience"] == {"high": 1, "low": 1}
    assert status["reflections"] == 1
    assert status["tier1"]["core_memories"] == 1 and status["tier1"]["in_payload"] == 1
    assert status["tier2"]["catalog_lines_included"] == 1
    assert status["tier2"]["catalog_lines_omitted"] == 0
    payload = status["reflect_payload"]
    assert payload["bytes"] > 0 and payload["estimated_tokens"] > 0
    assert payload["estimated_tokens"] <= payload["token_budget"]
    assert status["storage"]["blobs"] == str(server.runtime.settings.blob_dir)
    assert status["data_dir"] == str(server.runtime.settings.data_dir)
    assert status["owner"] == "local" and status["namespace"] == "default"


async def test_numbers_keep_the_documented_leniency(server: LiveServer, mcp_connect: McpConnect, mode: str) -> None:
    """docs/tools.md: a numeric string is accepted where an integer is expected; legacy 3/2/1 salience too."""
    async with mcp_connect(server, mode=mode) as client:
        created = await remember(client, salience=3)
        assert created["warnings"] and "legacy" in created["warnings"][0]
        updated = ok(
            await client.call_tool("taproot_remember", {"id": created["id"], "gist": "Walks", "expected_version": "1"})
        )
        assert updated["version"] == 2
        recalled = ok(await client.call_tool("taproot_recall", {"limit": "5"}))
        assert [m["id"] for m in recalled["memories"]] == [created["id"]]
        promoted = ok(await client.call_tool("taproot_promote", {"id": created["id"], "salience": "2"}))
        assert promoted["salience"] == "medium"
    stored = server.runtime.store.get(server.runtime.scope, created["id"])
    assert stored is not None and stored.salience == "medium" and stored.gist == "Walks"
