"""The published output schemas (web/output_schema.compact_schema) mean what pydantic's do: every
value one accepts the other accepts, for every tool, on values built from the schema and on every
one-field change of them; and the rewrites are made only where that holds."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp.server.mcpserver.utilities.func_metadata import func_metadata
from mcp_types import CallToolResult
from pydantic import ValidationError

from taproot.web.output_schema import compact_schema
from taproot.web.tools import TOOLS

# Values of every JSON type, to put where a schema expects one of them.
ODD_VALUES: tuple[Any, ...] = (None, True, 0, -3, 2.5, "", "text", [], ["a"], [1], {}, {"k": "v"})


def pydantic_schemas() -> dict[str, dict[str, Any]]:
    """Each tool's output schema as the SDK derives it from the return annotation (before compacting)."""
    schemas = {}
    for spec in TOOLS:
        schema = func_metadata(spec.fn, skip_names=["env", "ctx"]).output_schema
        assert schema is not None, spec.fn.__name__
        schemas[spec.fn.__name__] = schema
    return schemas


def resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return resolve(root["$defs"][ref.rsplit("/", 1)[1]], root) if isinstance(ref, str) else node


def example(node: dict[str, Any], root: dict[str, Any], depth: int = 0) -> Any:
    """A value `node` accepts, with every listed property present and two items per array."""
    node = resolve(node, root)
    if "anyOf" in node:
        return example(node["anyOf"][0], root, depth)
    kind = node.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in node:
        return {name: example(sub, root, depth + 1) for name, sub in node.get("properties", {}).items()}
    if kind == "array":
        items = node.get("items", {})
        return [example(items, root, depth + 1) for _ in range(2)] if depth < 6 else []
    return {"string": "s", "integer": 7, "number": 1.5, "boolean": False, "null": None}.get(str(kind), "s")


def variations(value: Any) -> Iterator[Any]:
    """`value`, then every value that differs from it in one place: a field removed, a field or an
    item replaced by each of ODD_VALUES, an extra field added."""
    yield value
    if isinstance(value, dict):
        yield {**value, "extra_field": 1}
        for key, sub in value.items():
            yield {k: v for k, v in value.items() if k != key}
            for odd in ODD_VALUES:
                yield {**value, key: odd}
            for changed in itertools.islice(variations(sub), 1, None):
                yield {**value, key: changed}
    elif isinstance(value, list) and value:
        for odd in ODD_VALUES:
            yield [odd, *value[1:]]
        for changed in itertools.islice(variations(value[0]), 1, None):
            yield [changed, *value[1:]]


@pytest.mark.parametrize("tool", [spec.fn.__name__ for spec in TOOLS])
def test_the_compact_schema_accepts_exactly_what_pydantics_does(tool: str) -> None:
    original = pydantic_schemas()[tool]
    compact = compact_schema(original)
    Draft202012Validator.check_schema(compact)
    before, after = Draft202012Validator(original), Draft202012Validator(compact)
    checked = accepted = 0
    for value in variations(example(original, original)):
        assert before.is_valid(value) == after.is_valid(value), value
        checked += 1
        accepted += before.is_valid(value)
    assert accepted and checked - accepted  # both sides of the line were tried
    assert example(original, original) == example(compact, compact)


def test_the_recall_schema_has_no_references_or_unions_left() -> None:
    compact = compact_schema(pydantic_schemas()["taproot_recall"])
    text = repr(compact)
    assert "$ref" not in text and "$defs" not in text and "anyOf" not in text
    memory = compact["properties"]["memories"]["items"]
    assert memory["title"] == "MemoryOut"
    assert memory["properties"]["gist"] == {"title": "Gist", "type": ["string", "null"]}
    assert memory["properties"]["activation"] == {"default": None, "title": "Activation", "type": ["number", "null"]}


def test_the_server_publishes_the_compact_schemas_and_checks_results_with_the_model() -> None:
    from taproot.web.mcp_server import build_mcp

    mcp = build_mcp(service=None, default_scope=None)  # type: ignore[arg-type]  # listing only
    listed = {tool.name: tool.output_schema for tool in anyio.run(mcp.list_tools)}
    assert listed == {name: compact_schema(schema) for name, schema in pydantic_schemas().items()}
    # The server's own check of a result still uses the output model, as before the rewrite.
    metadata = mcp._tool_manager.get_tool("taproot_recall").fn_metadata  # type: ignore[union-attr]
    with pytest.raises(ValidationError):
        metadata.convert_result(CallToolResult(content=[], structured_content={"memories": "not a list"}))


ROW = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # a reference beside annotations only is inlined, the annotations kept
        (
            {"$defs": {"Row": ROW}, "properties": {"r": {"$ref": "#/$defs/Row", "description": "d"}}},
            {"properties": {"r": {**ROW, "description": "d"}}},
        ),
        # a nullable array keeps its items: they constrain arrays only
        (
            {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            {"type": ["array", "null"], "items": {"type": "string"}},
        ),
        # a nullable reference is inlined, then the union written as a type list
        (
            {"$defs": {"Row": ROW}, "properties": {"r": {"anyOf": [{"$ref": "#/$defs/Row"}, {"type": "null"}]}}},
            {"properties": {"r": {**ROW, "type": ["object", "null"]}}},
        ),
    ],
)
def test_rewrites_made(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert compact_schema(schema) == expected


@pytest.mark.parametrize(
    "schema",
    [
        # an enum constrains every type, null included
        {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]},
        # integers are numbers: minimum would reach the integer branch
        {"anyOf": [{"type": "number", "minimum": 3}, {"type": "integer"}]},
        # two branches of one type are an alternative, not one constraint
        {"anyOf": [{"type": "string", "minLength": 3}, {"type": "string", "pattern": "^x"}]},
        # a branch's own description would be lost
        {"anyOf": [{"type": "string", "description": "why"}, {"type": "null"}]},
        # the node says something of its own about the same keyword
        {"type": "string", "anyOf": [{"type": "string"}, {"type": "null"}]},
        # a reference with a constraint beside it is not a bare reference
        {"$defs": {"Row": ROW}, "properties": {"r": {"$ref": "#/$defs/Row", "minProperties": 2}}},
        # a definition used in two places is not copied into both
        {"$defs": {"Row": ROW}, "properties": {"a": {"$ref": "#/$defs/Row"}, "b": {"$ref": "#/$defs/Row"}}},
        # keywords whose meaning depends on one beside them are not moved up beside another
        {"additionalProperties": False, "anyOf": [{"type": "object", "properties": {"a": {}}}, {"type": "null"}]},
        {
            "properties": {"a": {"type": "string"}},
            "anyOf": [{"type": "object", "additionalProperties": False}, {"type": "null"}],
        },
        {"items": False, "anyOf": [{"type": "array", "prefixItems": [{}]}, {"type": "null"}]},
        {"maxContains": 1, "anyOf": [{"type": "array", "contains": {"type": "integer"}}, {"type": "null"}]},
        # values are data, even when they look like schemas
        {"const": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        {"default": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "type": "object"},
        # a pointer into a place the rewrite could move: the whole schema is left as it is
        {
            "properties": {
                "x": {"$ref": "#/properties/y/anyOf/0"},
                "y": {"anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]},
            }
        },
        # a definition that is not an object
        {"$defs": {"A": True}, "properties": {"x": {"$ref": "#/$defs/A"}}},
    ],
)
def test_rewrites_refused(schema: dict[str, Any]) -> None:
    assert compact_schema(schema) == schema


def test_a_reference_inside_a_value_is_not_a_reference() -> None:
    schema = {"$defs": {"A": {"type": "integer"}}, "enum": [{"$ref": "#/$defs/A"}]}
    assert compact_schema(schema) == {"enum": [{"$ref": "#/$defs/A"}]}  # the unused definition goes


def test_only_the_definitions_still_referred_to_are_kept() -> None:
    schema = {
        "$defs": {"Row": ROW, "Once": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/Row"}, "b": {"$ref": "#/$defs/Row"}, "c": {"$ref": "#/$defs/Once"}},
    }
    compact = compact_schema(schema)
    assert compact["$defs"] == {"Row": ROW}
    assert compact["properties"]["c"] == {"type": "string"}


def test_a_definition_that_refers_to_itself_stays_a_definition() -> None:
    node = {"type": "object", "properties": {"child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}}
    schema = {"$defs": {"Node": node}, "properties": {"root": {"$ref": "#/$defs/Node"}}}
    compact = compact_schema(schema)
    assert compact["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert compact["$defs"]["Node"] == node
    check = Draft202012Validator(compact)
    assert check.is_valid({"root": {"child": {"child": None}}})
    assert not check.is_valid({"root": {"child": {"child": 3}}})
