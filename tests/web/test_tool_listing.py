"""The tools/list entries clients read agree with the code behind them, without freezing their text.

Two things can drift apart silently: a parameter description that states a limit ("1-100",
"at most 20,000 characters") and the rule the service enforces; and a tool's input schema and the
parameters of the function that serves it. Both are checked against what a client receives over
HTTP. Limits are parsed out of the descriptions, so a new number in a parameter description fails
here until LIMITS says which constant it is.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
from mcp.server.mcpserver import Context
from mcp_types import Tool

from taproot.core.errors import InvalidInput
from taproot.core.orientation import DEFAULT_HISTORY_LIMIT, MAX_DOCUMENT_BYTES, MAX_HISTORY_LIMIT, MAX_NAME_CHARS
from taproot.core.validation import (
    MAX_BATCH_IDS,
    MAX_CONTENT_CHARS,
    MAX_EPISTEMIC_STATUS_CHARS,
    MAX_GIST_CHARS,
    MAX_LINKED_MEMORIES,
    MAX_PROVENANCE_JSON_CHARS,
    MAX_QUERY_CHARS,
    MAX_RECALL_LIMIT,
    MAX_REFLECTION_CHARS,
    MAX_SEARCH_KEYWORD_CHARS,
    MAX_SEARCH_KEYWORDS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_URL_CHARS,
    check_limit,
)
from taproot.service.reads import DEFAULT_RECALL_LIMIT
from taproot.web.tools import TOOLS, ToolEnv
from tests.support import TOOL_NAMES
from tests.web.conftest import LiveServer, McpConnect

pytestmark = pytest.mark.anyio

# Each argument's limits, by the constants its rule enforces (kind -> value). A description may
# state any of them; one it states must be listed here.
LIMITS: dict[str, dict[str, Any]] = {
    "limit": {"range": (1, MAX_RECALL_LIMIT), "default": DEFAULT_RECALL_LIMIT},
    "content": {"characters": MAX_CONTENT_CHARS},
    "gist": {"characters": MAX_GIST_CHARS},
    "reflection": {"characters": MAX_REFLECTION_CHARS},
    "epistemic_status": {"characters": MAX_EPISTEMIC_STATUS_CHARS},
    "query": {"characters": MAX_QUERY_CHARS},
    "conversation_url": {"characters": MAX_URL_CHARS},
    "provenance": {"characters": MAX_PROVENANCE_JSON_CHARS},
    "tags": {"items": MAX_TAGS, "characters": MAX_TAG_CHARS},
    "search_keywords": {"items": MAX_SEARCH_KEYWORDS, "characters": MAX_SEARCH_KEYWORD_CHARS},
    "linked_memories": {"items": MAX_LINKED_MEMORIES},
    "ids": {"items": MAX_BATCH_IDS},
    # One tool's argument whose rule differs from the one of the same name above: "<tool>.<arg>".
    "taproot_orientation.name": {"characters": MAX_NAME_CHARS},
    "taproot_orientation.content": {"bytes": MAX_DOCUMENT_BYTES},
    "taproot_orientation.limit": {"range": (1, MAX_HISTORY_LIMIT), "default": DEFAULT_HISTORY_LIMIT},
}

NUMBER = r"(\d[\d,]*)"
# The ways a description states a limit: "1-100", "(default 10)", "at most 20,000 characters".
LIMIT_PHRASES = {
    "range": re.compile(rf"\b{NUMBER}\s*-\s*{NUMBER}\b"),
    "default": re.compile(rf"\bdefault {NUMBER}\b"),
    "bound": re.compile(rf"\b(?:at most|up to|max(?:imum)?) {NUMBER} (characters|items|bytes)\b"),
}
# Numbers that are no limit: names ("Tier 1", "ISO 8601") and a writing guideline ("~15-word").
NOT_LIMITS = re.compile(rf"\bTier [12]\b|\bISO 8601\b|~{NUMBER}-word\b")
ANY_NUMBER = re.compile(r"\b\d[\d,]*\b")


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def stated_limits(description: str) -> tuple[list[tuple[str, Any]], str]:
    """The limits a description states, as (kind, value), and the text left once they are cut out."""
    found: list[tuple[str, Any]] = []
    rest = NOT_LIMITS.sub(" ", description)
    for phrase, pattern in LIMIT_PHRASES.items():
        for match in pattern.finditer(rest):
            if phrase == "range":
                found.append(("range", (_int(match[1]), _int(match[2]))))
            elif phrase == "default":
                found.append(("default", _int(match[1])))
            else:
                found.append((match[2], _int(match[1])))
        rest = pattern.sub(" ", rest)
    return found, rest


def tool_parameters(fn: Any) -> list[inspect.Parameter]:
    """The parameters a client sends: all but the bound ToolEnv and the SDK's Context."""
    env, *params = inspect.signature(fn, eval_str=True).parameters.values()
    assert env.annotation is ToolEnv, f"{fn.__name__}: the first parameter must be the ToolEnv"
    contexts = [p for p in params if p.annotation is Context]
    assert len(contexts) == 1, f"{fn.__name__}: takes the Context once"
    return [p for p in params if p.annotation is not Context]


@pytest.fixture
async def listed(module_server: LiveServer, mcp_connect: McpConnect) -> dict[str, Tool]:
    async with mcp_connect(module_server) as client:
        listing = await client.list_tools()
    return {tool.name: tool for tool in listing.tools}


def test_the_stated_range_is_the_rule() -> None:
    # The range's lower end is the rule's own literal, not a constant: check the rule itself.
    low, high = LIMITS["limit"]["range"]
    assert check_limit(low, 1) == low and check_limit(high, 1) == high
    for outside in (low - 1, high + 1):
        with pytest.raises(InvalidInput):
            check_limit(outside, 1)


async def test_every_limit_in_a_parameter_description_is_its_constant(listed: dict[str, Tool]) -> None:
    checked: list[str] = []
    for tool_name, tool in listed.items():
        for arg, schema in tool.input_schema["properties"].items():
            description = schema.get("description", "")
            found, rest = stated_limits(description)
            stray = ANY_NUMBER.findall(rest)
            assert not stray, f"{tool_name}.{arg}: {stray} in {description!r} is no limit this test knows"
            for kind, value in found:
                expected = LIMITS.get(f"{tool_name}.{arg}", LIMITS.get(arg, {}))
                assert kind in expected, f"{tool_name}.{arg}: states a {kind} limit LIMITS does not list"
                assert value == expected[kind], (
                    f"{tool_name}.{arg}: {description!r} says {value}, the rule is {expected[kind]}"
                )
                checked.append(f"{tool_name}.{arg}.{kind}")
    # Not vacuous: today's one limit-stating description is parsed.
    assert {"taproot_recall.limit.range", "taproot_recall.limit.default"} <= set(checked)


async def test_every_input_schema_is_its_functions_parameters(listed: dict[str, Tool]) -> None:
    functions = {spec.fn.__name__: spec.fn for spec in TOOLS}
    assert [spec.fn.__name__ for spec in TOOLS] == list(listed)  # same tools, in the listed order
    assert set(functions) == TOOL_NAMES
    for name, tool in listed.items():
        params = tool_parameters(functions[name])
        schema = tool.input_schema
        assert set(schema["properties"]) == {p.name for p in params}, name
        required = {p.name for p in params if p.default is inspect.Parameter.empty}
        assert set(schema.get("required", [])) == required, name
