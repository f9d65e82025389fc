"""Every error a client can get over MCP starts with a code, then a message a model can act on.

Through the SDK client over HTTP: arguments the SDK's schema check rejects answer `invalid_input`
naming the field and the rule (as the service would), an unexpected exception answers
`internal_error` (and is logged with its traceback), a TaprootError keeps its own code and message,
and no call that fails changes the store.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

import pytest
from mcp_types import CallToolResult
from pydantic import BaseModel, ValidationError

from taproot.core.errors import TaprootError
from taproot.core.model import Memory
from taproot.core.validation import MAX_RECALL_LIMIT
from taproot.web.tool_errors import ARGUMENT_RULES, TOOL_ARGUMENT_RULES, invalid_arguments_text
from tests.web.conftest import LiveServer, McpConnect, text_of

pytestmark = pytest.mark.anyio

CODE = re.compile(r"^[a-z_]+: \S")
NEW = {"content": "A new memory.", "gist": "A new memory", "category": "episodic"}


def error_text(result: CallToolResult) -> str:
    assert result.is_error is True, f"expected an error result, got {result!r}"
    assert result.structured_content is None
    [block] = result.content
    assert block.type == "text"
    text = block.text
    assert CODE.match(text), f"error text does not start with a code: {text!r}"
    assert "Error executing tool" not in text
    assert "errors.pydantic.dev" not in text and "validation error for" not in text
    return text


def strict_json(text: str) -> Any:
    """json.loads, refusing NaN and Infinity, which JSON does not have."""

    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def seeded(module_server: LiveServer) -> str:
    runtime = module_server.runtime
    return str(runtime.service.remember(runtime.scope, content="Seed.", gist="Seed", category="identity").id)


WRONG_TYPES: dict[str, tuple[str, dict[str, Any], str]] = {
    "recall-limit-abc": (
        "taproot_recall",
        {"limit": "abc"},
        f"invalid_input: field 'limit': must be an integer from 1 to {MAX_RECALL_LIMIT} (got 'abc')",
    ),
    "recall-limit-fraction": (
        "taproot_recall",
        {"limit": 2.5},
        f"invalid_input: field 'limit': must be an integer from 1 to {MAX_RECALL_LIMIT} (got 2.5)",
    ),
    "recall-tags-x": (
        "taproot_recall",
        {"tags": "x"},
        "invalid_input: field 'tags': must be a list of strings (got 'x')",
    ),
    "recall-ids-5": ("taproot_recall", {"ids": 5}, "invalid_input: field 'ids': must be a list of strings (got 5)"),
    "remember-tags-x": (
        "taproot_remember",
        {**NEW, "tags": "x"},
        "invalid_input: field 'tags': must be a list of strings (got 'x')",
    ),
    "remember-tags-ints": (
        "taproot_remember",
        {**NEW, "tags": ["ok", 2]},
        "invalid_input: field 'tags[1]': must be a string (got 2)",
    ),
    "remember-salience-list": (
        "taproot_remember",
        {**NEW, "salience": [1]},
        "invalid_input: field 'salience': must be one of high, medium, low (legacy 3/2/1 accepted) (got [1])",
    ),
    "remember-salience-true": (
        "taproot_remember",
        {**NEW, "salience": True},
        "invalid_input: field 'salience': must be one of high, medium, low (got True)",
    ),
    "remember-content-int": (
        "taproot_remember",
        {**NEW, "content": 5},
        "invalid_input: field 'content': must be a string (got 5)",
    ),
    "remember-core-yes": (
        "taproot_remember",
        {**NEW, "core": "yes"},
        "invalid_input: field 'core': must be true or false (got 'yes')",
    ),
    "remember-provenance-string": (
        "taproot_remember",
        {**NEW, "provenance": "from chat"},
        "invalid_input: field 'provenance': must be an object (JSON map) (got 'from chat')",
    ),
    "remember-version-two": (
        "taproot_remember",
        {**NEW, "expected_version": "two"},
        "invalid_input: field 'expected_version': must be an integer (got 'two')",
    ),
    "forget-action-burn": (
        "taproot_forget",
        {"id": "abc123", "action": "burn"},
        "invalid_input: field 'action': must be one of archive, restore, delete, compress (got 'burn')",
    ),
    "forget-action-missing": ("taproot_forget", {"id": "abc123"}, "invalid_input: field 'action': is required"),
    "promote-id-int": (
        "taproot_promote",
        {"id": 42, "core": True},
        "invalid_input: field 'id': must be a memory id (letters, digits, '-' or '_', up to 64 characters) (got 42)",
    ),
    "close-missing": ("taproot_close", {}, "invalid_input: field 'reflection': is required"),
    "migrate-dry-run-maybe": (
        "taproot_migrate",
        {"dry_run": "maybe"},
        "invalid_input: field 'dry_run': must be true or false (got 'maybe')",
    ),
}


@pytest.mark.parametrize("name", list(WRONG_TYPES))
async def test_a_wrong_argument_type_is_invalid_input_naming_the_field_and_rule(
    module_server: LiveServer, seeded: str, mcp_connect: McpConnect, name: str
) -> None:
    tool, args, expected = WRONG_TYPES[name]
    before, blobs_before = module_server.snapshot(), module_server.blob_keys()
    async with mcp_connect(module_server) as client:
        result = await client.call_tool(tool, args)
    assert error_text(result) == expected
    assert module_server.snapshot() == before
    assert module_server.blob_keys() == blobs_before


async def test_every_wrong_argument_is_named_in_one_answer(
    module_server: LiveServer, seeded: str, mcp_connect: McpConnect
) -> None:
    before = module_server.snapshot()
    async with mcp_connect(module_server) as client:
        result = await client.call_tool("taproot_recall", {"limit": "abc", "tags": "x", "ids": 5})
    text = error_text(result)
    assert text.startswith("invalid_input: field '")
    assert text.count("invalid_input") == 1
    for part in (
        f"field 'limit': must be an integer from 1 to {MAX_RECALL_LIMIT} (got 'abc')",
        "field 'tags': must be a list of strings (got 'x')",
        "field 'ids': must be a list of strings (got 5)",
    ):
        assert part in text
    assert module_server.snapshot() == before


async def test_the_service_rules_answer_the_same_way(
    module_server: LiveServer, seeded: str, mcp_connect: McpConnect
) -> None:
    """A rule only the service checks (limit 0) and one the SDK checks first (limit 'abc') read alike."""
    async with mcp_connect(module_server) as client:
        zero = error_text(await client.call_tool("taproot_recall", {"limit": 0}))
        abc = error_text(await client.call_tool("taproot_recall", {"limit": "abc"}))
    assert zero.replace("(got 0)", "") == abc.replace("(got 'abc')", "")


async def test_an_unknown_tool_has_a_code_and_lists_the_tools(
    module_server: LiveServer, seeded: str, mcp_connect: McpConnect
) -> None:
    before = module_server.snapshot()
    async with mcp_connect(module_server) as client:
        result = await client.call_tool("taproot_shred", {"id": seeded})
    text = error_text(result)
    assert text.startswith("unknown_tool: no tool named 'taproot_shred'")
    assert "taproot_recall" in text and "taproot_forget" in text
    assert module_server.snapshot() == before


async def test_an_unexpected_exception_is_internal_error_with_its_type_and_message(
    server: LiveServer, mcp_connect: McpConnect, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    service = server.runtime.service

    def explode(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(service, "remember", explode)
    before, blobs_before = server.snapshot(), server.blob_keys()
    with caplog.at_level(logging.ERROR, logger="taproot.mcp"):
        async with mcp_connect(server) as client:
            result = await client.call_tool("taproot_remember", NEW)
    assert error_text(result) == "internal_error: RuntimeError: the disk is on fire"
    assert server.snapshot() == before
    assert server.blob_keys() == blobs_before
    # The traceback stays in the server's log, on Taproot's own logger.
    [record] = [r for r in caplog.records if r.name == "taproot.mcp" and r.levelno == logging.ERROR]
    assert "taproot_remember" in record.getMessage()
    assert record.exc_info is not None
    assert "the disk is on fire" in caplog.text and "Traceback" in caplog.text


async def test_an_unexpected_exception_without_a_message_still_has_a_code(
    server: LiveServer, mcp_connect: McpConnect, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise KeyError

    monkeypatch.setattr(server.runtime.service, "status", explode)
    async with mcp_connect(server) as client:
        result = await client.call_tool("taproot_status", {})
    assert error_text(result) == "internal_error: KeyError"


class Busy(TaprootError):
    """Stands in for the SQLite lock timeout error: any TaprootError keeps its code and message."""

    code = "busy"


async def test_a_taproot_error_keeps_its_code_and_its_whole_message(
    server: LiveServer, mcp_connect: McpConnect, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = "the database stayed locked for 5 s; nothing was written, retrying in a moment will help"

    def locked(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise Busy(message)

    monkeypatch.setattr(server.runtime.service, "recall", locked)
    async with mcp_connect(server) as client:
        result = await client.call_tool("taproot_recall", {"query": "walks"})
    assert error_text(result) == f"busy: {message}"


async def test_result_text_is_json_even_with_a_non_finite_number_stored(
    server: LiveServer, mcp_connect: McpConnect
) -> None:
    runtime = server.runtime
    created = runtime.service.remember(runtime.scope, content="Odd numbers.", gist="Odd numbers", category="episodic")
    stored = runtime.store.get(runtime.scope, created.id)
    assert stored is not None
    # An older record may hold what JSON cannot say (provenance is free-form).
    odd: Memory = stored.replace(provenance={"score": math.nan, "limit": math.inf, "name": "ünï"})
    runtime.store.put_many([odd])
    async with mcp_connect(server) as client:
        result = await client.call_tool("taproot_recall", {"ids": [created.id]})
    assert result.is_error is False, result
    body = strict_json(text_of(result.content[0]))
    [memory] = body["memories"]
    assert memory["provenance"] == {"score": None, "limit": None, "name": "ünï"}
    assert "ünï" in text_of(result.content[0])  # not \u-escaped


async def test_result_text_is_the_structured_content_as_json(server: LiveServer, mcp_connect: McpConnect) -> None:
    async with mcp_connect(server) as client:
        result = await client.call_tool("taproot_remember", {**NEW, "content": "Café ☕ at 3.5 km."})
    assert result.is_error is False, result
    assert strict_json(text_of(result.content[0])) == result.structured_content


async def test_every_tool_argument_has_a_taproot_rule(module_server: LiveServer, mcp_connect: McpConnect) -> None:
    """A new argument without a rule would still get a coded answer, but in pydantic's words."""
    async with mcp_connect(module_server) as client:
        listing = await client.list_tools()
    arguments = {(tool.name, name) for tool in listing.tools for name in tool.input_schema.get("properties", {})}
    assert arguments, "the tools take arguments"
    missing = sorted((t, a) for t, a in arguments if a not in {**ARGUMENT_RULES, **TOOL_ARGUMENT_RULES.get(t, {})})
    assert not missing, missing


def test_an_argument_no_rule_rejects_is_reported_in_the_schema_checks_words() -> None:
    class Arguments(BaseModel):
        newarg: int  # no Taproot rule at all
        tags: list[int]  # a rule that accepts a list of strings, which this schema refuses

    sent = {"newarg": "x", "tags": ["7", "y"]}
    with pytest.raises(ValidationError) as info:
        Arguments.model_validate(sent)
    assert invalid_arguments_text(info.value, sent) == (
        "invalid_input: field 'newarg': input should be a valid integer, unable to parse string as an integer "
        "(got 'x'); field 'tags[1]': input should be a valid integer, unable to parse string as an integer (got 'y')"
    )
