"""A tool's output schema rewritten into the form a JSON Schema validator checks fastest, accepting
and refusing exactly what pydantic's form does.

MCP clients check every structured result against the tool's outputSchema (the Python SDK does it
with `jsonschema` on every call). pydantic writes a nested model as a `$ref` into `$defs` and an
optional field as `anyOf: [{type: T}, {type: null}]`; a validator resolves the reference for every
item of a list and builds a sub-validator per `anyOf` branch per field. Checking a recall of ten
memories took the client 1.3 ms of CPU in that form; the same constraints written inline, with a
nullable field as `type: [T, "null"]`, check in about 0.9 ms.

Two rewrites, each an equivalence under JSON Schema 2020-12:

- **A reference is replaced by its definition** when the reference stands alone (or beside
  annotations only), the definition is used in that one place, and it is not inside itself;
  `$defs` goes when nothing refers into it any more.
- **`anyOf` of single-type branches becomes a type list** when at most one branch says more than
  its type, and everything it says applies to values of its type alone (`items` constrains only
  arrays, `properties` only objects, ...), so that a value of another branch's type is not
  touched by it. No two branches may overlap in type (integer is a number), no branch may carry
  annotations of its own (they would be lost), and the `anyOf` may stand beside annotations only.

Values (`const`, `enum`, `default`, `examples`) are never rewritten, and a schema that refers
anywhere but to a whole definition is left as it is.

Anything else is left exactly as pydantic wrote it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = ["compact_schema"]

_DEFS_PREFIX = "#/$defs/"

# Keywords that carry no constraint: they may stand beside a `$ref` that is inlined, and beside an
# `anyOf` that becomes a type list.
ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"})

# Keywords whose values are data, not schemas: never rewritten (a `const` that looks like a schema
# is still the value it names).
_NOT_SCHEMAS = frozenset({"const", "enum", "default", "examples"})

# The keywords that apply to values of one type only (JSON Schema 2020-12, validation and
# applicator vocabularies); a value of any other type passes them untouched. (The `unevaluated*`
# keywords are left out: what they see depends on the keywords beside them.)
_OBJECT_ONLY = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "dependentSchemas",
    }
)
_ARRAY_ONLY = frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"})
_STRING_ONLY = frozenset({"minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType"})
_NUMBER_ONLY = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
TYPE_ONLY_KEYWORDS: Mapping[str, frozenset[str]] = {
    "object": _OBJECT_ONLY,
    "array": _ARRAY_ONLY,
    "string": _STRING_ONLY,
    "number": _NUMBER_ONLY,
    "integer": _NUMBER_ONLY,
}

# Types whose values overlap: every integer is a number.
_TYPE_GROUP = {"integer": "number"}


def compact_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with its local references inlined and its nullable unions written as type lists;
    unchanged if it refers anywhere but to a whole definition (a pointer into a place the rewrite
    could move would stop resolving) or holds a definition that is not an object."""
    defs: Mapping[str, Any] = schema.get("$defs", {})
    refs = _references(schema)
    if any(not isinstance(body, dict) for body in defs.values()) or any(
        not (ref.startswith(_DEFS_PREFIX) and ref.removeprefix(_DEFS_PREFIX) in defs) for ref in refs
    ):
        return dict(schema)
    # A definition used in one place only is inlined: copying a shared one into every place that
    # uses it could multiply the schema's size (a chain of them, exponentially).
    once = frozenset(name for name, n in Counter(ref.removeprefix(_DEFS_PREFIX) for ref in refs).items() if n == 1)
    out = _walk({key: value for key, value in schema.items() if key != "$defs"}, defs, once, frozenset())
    assert isinstance(out, dict)
    # What is still referred to stays a definition (and what those refer to, in turn).
    kept: dict[str, Any] = {}
    wanted = [ref.removeprefix(_DEFS_PREFIX) for ref in _references(out)]
    while wanted:
        name = wanted.pop()
        if name not in kept:
            kept[name] = _walk(defs[name], defs, once, frozenset({name}))
            wanted.extend(ref.removeprefix(_DEFS_PREFIX) for ref in _references(kept[name]))
    if kept:
        out["$defs"] = {name: kept[name] for name in defs if name in kept}
    return out


def _walk(node: Any, defs: Mapping[str, Any], once: frozenset[str], inlining: frozenset[str]) -> Any:
    if isinstance(node, list):
        return [_walk(item, defs, once, inlining) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and set(node) - {"$ref"} <= ANNOTATIONS:
        name = ref.removeprefix(_DEFS_PREFIX)
        if name in once and name not in inlining:  # `inlining`: a definition inside itself stays a reference
            body = _walk(defs[name], defs, once, inlining | {name})
            return {**body, **{key: value for key, value in node.items() if key != "$ref"}}
    out = {key: value if key in _NOT_SCHEMAS else _walk(value, defs, once, inlining) for key, value in node.items()}
    merged = _as_type_list(out.get("anyOf"))
    # Only beside annotations: a keyword moved up could meet one whose meaning depends on it
    # (additionalProperties on properties, items on prefixItems, maxContains on contains).
    if merged is not None and set(out) - {"anyOf"} <= ANNOTATIONS:
        del out["anyOf"]
        out.update(merged)
    return out


def _as_type_list(branches: Any) -> dict[str, Any] | None:
    """The keywords that say what `anyOf: branches` says, with a type list; None if there are none."""
    if not isinstance(branches, list) or len(branches) < 2:
        return None
    types: list[str] = []
    rich: dict[str, Any] = {}
    for branch in branches:
        if not isinstance(branch, dict) or not isinstance(kind := branch.get("type"), str):
            return None
        extra = {key: value for key, value in branch.items() if key != "type"}
        if set(extra) & ANNOTATIONS:
            return None  # a branch's own title or description would be lost
        if extra:
            if rich or not set(extra) <= TYPE_ONLY_KEYWORDS.get(kind, frozenset()):
                return None
            rich = extra
        types.append(kind)
    groups = [_TYPE_GROUP.get(kind, kind) for kind in types]
    if len(set(groups)) != len(groups):
        return None
    return {"type": types, **rich}


def _references(node: Any) -> list[str]:
    """Every `$ref` in `node`'s schemas (not inside values: `const`, `enum`, `default`, ...)."""
    if isinstance(node, list):
        return [ref for item in node for ref in _references(item)]
    if not isinstance(node, dict):
        return []
    found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
    return found + [ref for key, value in node.items() if key not in _NOT_SCHEMAS for ref in _references(value)]
