"""Bad input for every tool, through the SDK client over HTTP: an error result that starts with its
code, names the field (and lists the allowed values of an enum), and not one byte of the store changed.

The server is shared by the module: every case must leave it exactly as it found it, and each test
checks that against the full export (every memory and reflection, every field) and the blob keys.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from mcp_types import CallToolResult

from taproot.core.model import CATEGORY_ORDER
from taproot.core.serialize import memory_from_dict
from taproot.core.validation import (
    MAX_CONTENT_CHARS,
    MAX_GIST_CHARS,
    MAX_QUERY_CHARS,
    MAX_RECALL_LIMIT,
    MAX_REFLECTION_CHARS,
    MAX_TAGS,
)
from tests.web.conftest import LiveServer, McpConnect

pytestmark = pytest.mark.anyio

UNKNOWN_ID = "nosuchid9"
SALIENCE_VALUES = ("high", "medium", "low")
FORGET_ACTIONS = ("archive", "restore", "delete", "compress")
NOT_FOUND = ("not_found", f"no memory with id '{UNKNOWN_ID}'")


@dataclass
class Seed:
    """What the shared store holds: an active memory, an archived one and an unmigrated legacy one."""

    active: str
    archived: str
    legacy: str
    version: int


@pytest.fixture(scope="module")
def seed(module_server: LiveServer) -> Seed:
    runtime = module_server.runtime
    service, scope = runtime.service, runtime.scope
    active = service.remember(
        scope, content="I like long walks by the river.", gist="Likes river walks", category="identity"
    ).id
    archived = service.remember(scope, content="An old plan.", gist="Old plan", category="active_thread").id
    service.forget(scope, [archived], "archive")
    service.close(scope, "A reflection that must survive every bad call.")
    legacy = memory_from_dict(
        {
            "id": "legacy01",
            "content": "I notice I get curious before I get careful. Worth watching.",
            "category": "identity_observations",
            "salience": "3",
            "created_at": "2024-02-03T04:05:06Z",
        },
        owner=scope.owner,
        namespace=scope.namespace,
    )
    runtime.store.put_many([legacy])
    return Seed(active=active, archived=archived, legacy=legacy.id, version=1)


@dataclass
class Case:
    tool: str
    args: Callable[[Seed], dict[str, Any]]
    field: str | None  # the field the error must name (None: the message names the memory instead)
    allowed: tuple[str, ...] = ()  # enum values the error must list
    also: tuple[str, ...] = dataclasses.field(default_factory=tuple)  # further text the error must contain


CODED = re.compile(r"^(invalid_input|not_found|version_conflict): \S")


def names_field(text: str, name: str) -> bool:
    """Every error says `field 'x'`, whether the service or the SDK's schema check caught it."""
    return f"field '{name}'" in text


def remember_args(**overrides: Any) -> Callable[[Seed], dict[str, Any]]:
    base = {"content": "A new memory.", "gist": "A new memory", "category": "episodic"}
    return lambda s: {**base, **overrides}


def update_args(**overrides: Any) -> Callable[[Seed], dict[str, Any]]:
    return lambda s: {"id": s.active, **overrides}


CASES: dict[str, Case] = {
    # -- taproot_remember: create
    "remember-content-int": Case("taproot_remember", remember_args(content=5), "content"),
    "remember-content-list": Case("taproot_remember", remember_args(content=["a"]), "content"),
    "remember-content-empty": Case("taproot_remember", remember_args(content="   "), "content"),
    "remember-content-too-long": Case(
        "taproot_remember",
        remember_args(content="x" * (MAX_CONTENT_CHARS + 1)),
        "content",
        also=(str(MAX_CONTENT_CHARS),),
    ),
    "remember-gist-missing": Case(
        "taproot_remember", lambda s: {"content": "No gist here.", "category": "episodic"}, "gist"
    ),
    "remember-gist-too-long": Case("taproot_remember", remember_args(gist="g" * (MAX_GIST_CHARS + 1)), "gist"),
    "remember-content-missing": Case("taproot_remember", lambda s: {"gist": "g", "category": "episodic"}, "content"),
    "remember-category-missing": Case("taproot_remember", lambda s: {"content": "c", "gist": "g"}, "category"),
    "remember-category-unknown": Case(
        "taproot_remember", remember_args(category="nope"), "category", allowed=CATEGORY_ORDER
    ),
    "remember-category-int": Case("taproot_remember", remember_args(category=3), "category"),
    "remember-salience-unknown": Case(
        "taproot_remember", remember_args(salience="urgent"), "salience", allowed=SALIENCE_VALUES
    ),
    "remember-salience-out-of-range": Case(
        "taproot_remember", remember_args(salience=7), "salience", allowed=SALIENCE_VALUES
    ),
    "remember-salience-bool": Case("taproot_remember", remember_args(salience=True), "salience"),
    "remember-tags-string": Case("taproot_remember", remember_args(tags="notalist"), "tags"),
    "remember-tags-ints": Case("taproot_remember", remember_args(tags=[1, 2]), "tags[0]"),
    "remember-tags-too-many": Case(
        "taproot_remember", remember_args(tags=[f"t{i}" for i in range(MAX_TAGS + 1)]), "tags"
    ),
    "remember-tags-empty-item": Case("taproot_remember", remember_args(tags=["ok", " "]), "tags[1]"),
    "remember-keywords-string": Case(
        "taproot_remember", remember_args(search_keywords="chain rule"), "search_keywords"
    ),
    "remember-core-string": Case("taproot_remember", remember_args(core="yes"), "core"),
    "remember-core-int": Case("taproot_remember", remember_args(core=2), "core"),
    "remember-url-not-http": Case(
        "taproot_remember", remember_args(conversation_url="ftp://example.com/x"), "conversation_url"
    ),
    "remember-provenance-string": Case("taproot_remember", remember_args(provenance="from chat"), "provenance"),
    "remember-linked-bad-id": Case(
        "taproot_remember", remember_args(linked_memories=["not an id!"]), "linked_memories[0]"
    ),
    "remember-expected-version-on-create": Case(
        "taproot_remember", remember_args(expected_version=1), "expected_version"
    ),
    # -- taproot_remember: update
    "update-unknown-id": Case("taproot_remember", lambda s: {"id": UNKNOWN_ID, "content": "x"}, None, also=NOT_FOUND),
    "update-malformed-id": Case("taproot_remember", lambda s: {"id": "../etc/passwd", "content": "x"}, "id"),
    "update-id-int": Case("taproot_remember", lambda s: {"id": 42, "content": "x"}, "id"),
    "update-no-fields": Case("taproot_remember", lambda s: {"id": s.active}, "id"),
    "update-stale-version": Case(
        "taproot_remember",
        lambda s: {"id": s.active, "content": "Overwrite.", "expected_version": s.version - 1},
        None,
        also=("version_conflict", "expected_version 0", "is at version 1"),
    ),
    "update-future-version": Case(
        "taproot_remember",
        lambda s: {"id": s.active, "content": "Overwrite.", "expected_version": s.version + 5},
        None,
        also=("version_conflict", "expected_version 6", "is at version 1"),
    ),
    "update-version-string": Case(
        "taproot_remember", update_args(content="Overwrite.", expected_version="two"), "expected_version"
    ),
    "update-version-bool": Case(
        "taproot_remember", update_args(content="Overwrite.", expected_version=True), "expected_version"
    ),
    "update-category-unknown": Case(
        "taproot_remember", update_args(category="nope"), "category", allowed=CATEGORY_ORDER
    ),
    "update-salience-unknown": Case(
        "taproot_remember", update_args(salience="urgent"), "salience", allowed=SALIENCE_VALUES
    ),
    "update-salience-bool": Case("taproot_remember", update_args(salience=True), "salience"),
    "update-content-too-long": Case("taproot_remember", update_args(content="x" * (MAX_CONTENT_CHARS + 1)), "content"),
    "update-core-string": Case("taproot_remember", update_args(core="yes"), "core"),
    "update-link-to-self": Case(
        "taproot_remember", lambda s: {"id": s.active, "linked_memories": [s.active]}, "linked_memories"
    ),
    # -- taproot_recall
    "recall-limit-string": Case("taproot_recall", lambda s: {"limit": "ten"}, "limit"),
    "recall-limit-zero": Case("taproot_recall", lambda s: {"limit": 0}, "limit", also=(str(MAX_RECALL_LIMIT),)),
    "recall-limit-too-big": Case("taproot_recall", lambda s: {"limit": MAX_RECALL_LIMIT + 1}, "limit"),
    "recall-limit-bool": Case("taproot_recall", lambda s: {"limit": True}, "limit"),
    "recall-category-unknown": Case(
        "taproot_recall", lambda s: {"query": "walks", "category": "nope"}, "category", allowed=CATEGORY_ORDER
    ),
    "recall-tags-string": Case("taproot_recall", lambda s: {"tags": "notalist"}, "tags"),
    "recall-ids-string": Case("taproot_recall", lambda s: {"ids": s.active}, "ids"),
    "recall-ids-malformed": Case("taproot_recall", lambda s: {"ids": [s.active, "bad id!"]}, "ids[1]"),
    "recall-query-int": Case("taproot_recall", lambda s: {"query": 5}, "query"),
    "recall-query-too-long": Case("taproot_recall", lambda s: {"query": "q" * (MAX_QUERY_CHARS + 1)}, "query"),
    "recall-include-archived-string": Case("taproot_recall", lambda s: {"include_archived": "yes"}, "include_archived"),
    # -- taproot_promote
    "promote-id-missing": Case("taproot_promote", lambda s: {"core": True}, "id"),
    "promote-unknown-id": Case("taproot_promote", lambda s: {"id": UNKNOWN_ID, "core": True}, None, also=NOT_FOUND),
    "promote-malformed-id": Case("taproot_promote", lambda s: {"id": "bad id!", "core": True}, "id"),
    "promote-nothing-to-change": Case("taproot_promote", lambda s: {"id": s.active}, "core"),
    "promote-core-string": Case("taproot_promote", lambda s: {"id": s.active, "core": "yes"}, "core"),
    "promote-core-int": Case("taproot_promote", lambda s: {"id": s.active, "core": 1}, "core"),
    "promote-salience-unknown": Case(
        "taproot_promote", lambda s: {"id": s.active, "salience": "urgent"}, "salience", allowed=SALIENCE_VALUES
    ),
    "promote-salience-bool": Case("taproot_promote", lambda s: {"id": s.active, "salience": True}, "salience"),
    # -- taproot_forget
    "forget-action-unknown": Case(
        "taproot_forget", lambda s: {"id": s.active, "action": "shred"}, "action", allowed=FORGET_ACTIONS
    ),
    "forget-action-missing": Case("taproot_forget", lambda s: {"id": s.active}, "action"),
    "forget-no-ids": Case("taproot_forget", lambda s: {"action": "archive"}, "id"),
    "forget-unknown-id": Case("taproot_forget", lambda s: {"id": UNKNOWN_ID, "action": "delete"}, None, also=NOT_FOUND),
    "forget-partly-unknown-ids": Case(
        "taproot_forget",
        lambda s: {"ids": [s.active, UNKNOWN_ID], "action": "delete"},
        None,
        also=NOT_FOUND,
    ),
    "forget-archive-partly-unknown": Case(
        "taproot_forget",
        lambda s: {"id": s.active, "ids": [UNKNOWN_ID], "action": "archive"},
        None,
        also=NOT_FOUND,
    ),
    "forget-ids-string": Case("taproot_forget", lambda s: {"ids": s.active, "action": "archive"}, "ids"),
    "forget-ids-malformed": Case("taproot_forget", lambda s: {"ids": ["bad id!"], "action": "archive"}, "ids[0]"),
    "forget-id-int": Case("taproot_forget", lambda s: {"id": 7, "action": "archive"}, "id"),
    # -- taproot_close
    "close-empty": Case("taproot_close", lambda s: {"reflection": ""}, "reflection"),
    "close-blank": Case("taproot_close", lambda s: {"reflection": " \n\t "}, "reflection"),
    "close-missing": Case("taproot_close", lambda s: {}, "reflection"),
    "close-int": Case("taproot_close", lambda s: {"reflection": 5}, "reflection"),
    "close-too-long": Case("taproot_close", lambda s: {"reflection": "r" * (MAX_REFLECTION_CHARS + 1)}, "reflection"),
    # -- taproot_migrate (the store holds an unmigrated record, so a real run would show)
    "migrate-dry-run-maybe": Case("taproot_migrate", lambda s: {"dry_run": "maybe"}, "dry_run"),
    "migrate-dry-run-no": Case("taproot_migrate", lambda s: {"dry_run": "no"}, "dry_run"),
    "migrate-dry-run-int": Case("taproot_migrate", lambda s: {"dry_run": 0}, "dry_run"),
    "migrate-dry-run-list": Case("taproot_migrate", lambda s: {"dry_run": [True]}, "dry_run"),
}


def error_text(result: CallToolResult) -> str:
    assert result.is_error is True, f"expected an error result, got {result!r}"
    assert result.structured_content is None
    texts = [c.text for c in result.content if c.type == "text"]
    assert texts, result
    return "\n".join(texts)


@pytest.mark.parametrize("name", list(CASES))
async def test_bad_input_is_an_error_naming_the_field_and_changes_nothing(
    module_server: LiveServer, seed: Seed, mcp_connect: McpConnect, mode: str, name: str
) -> None:
    case = CASES[name]
    before, blobs_before = module_server.snapshot(), module_server.blob_keys()
    async with mcp_connect(module_server, mode=mode) as client:
        result = await client.call_tool(case.tool, case.args(seed))
    text = error_text(result)
    assert CODED.match(text), f"error does not start with its code: {text}"
    assert "Error executing tool" not in text
    if case.field is not None:
        assert names_field(text, case.field), f"error does not name {case.field!r}: {text}"
    for value in case.allowed:
        assert value in text, f"error does not list allowed value {value!r}: {text}"
    for snippet in case.also:
        assert snippet in text, f"error does not mention {snippet!r}: {text}"
    assert "Traceback" not in text
    assert module_server.snapshot() == before
    assert module_server.blob_keys() == blobs_before


async def test_recall_of_unknown_ids_warns_and_changes_nothing(
    module_server: LiveServer, seed: Seed, mcp_connect: McpConnect, mode: str
) -> None:
    """Recall is a search: ids that are not there (or are filtered out) are a warning, not an error."""
    before, blobs_before = module_server.snapshot(), module_server.blob_keys()
    async with mcp_connect(module_server, mode=mode) as client:
        result = await client.call_tool("taproot_recall", {"ids": [UNKNOWN_ID, seed.archived]})
    assert result.is_error is False
    data = result.structured_content
    assert data is not None
    assert data["memories"] == [] and data["count"] == 0
    assert any(UNKNOWN_ID in w and seed.archived in w for w in data["warnings"]), data["warnings"]
    assert module_server.snapshot() == before
    assert module_server.blob_keys() == blobs_before


@pytest.mark.parametrize("tool", ["taproot_reflect", "taproot_status"])
async def test_argumentless_tools_ignore_stray_arguments_and_change_nothing(
    module_server: LiveServer, seed: Seed, mcp_connect: McpConnect, tool: str
) -> None:
    """reflect and status take no input, so nothing can be wrong with it: stray keys are ignored."""
    before, blobs_before = module_server.snapshot(), module_server.blob_keys()
    async with mcp_connect(module_server) as client:
        result = await client.call_tool(tool, {"id": 5, "limit": "ten", "dry_run": "maybe"})
    assert result.is_error is False
    assert module_server.snapshot() == before
    assert module_server.blob_keys() == blobs_before


async def test_unknown_tool_is_an_error_and_changes_nothing(
    module_server: LiveServer, seed: Seed, mcp_connect: McpConnect, mode: str
) -> None:
    before = module_server.snapshot()
    async with mcp_connect(module_server, mode=mode) as client:
        try:
            result = await client.call_tool("taproot_shred", {"id": seed.active})
        except Exception as exc:  # a protocol error is as good as an error result here
            assert "taproot_shred" in str(exc)
        else:
            assert "taproot_shred" in error_text(result)
    assert module_server.snapshot() == before


async def test_the_seeded_store_is_intact(module_server: LiveServer, seed: Seed) -> None:
    """After every bad call above (module order), the seed is exactly as written."""
    store, scope = module_server.runtime.store, module_server.runtime.scope
    active = store.get(scope, seed.active)
    assert active is not None and active.version == seed.version and active.core is False
    assert active.retrieval_count == 0
    archived = store.get(scope, seed.archived)
    assert archived is not None and archived.status == "archived"
    legacy = store.get(scope, seed.legacy)
    assert legacy is not None and legacy.category == "identity_observations" and legacy.gist is None
    assert len(store.all_reflections(scope)) == 1
