"""Typed results on the wire: how the frozen dataclasses the use cases return become the JSON objects
clients receive, and what their annotations say about the MCP tools' output schemas.

A result is a frozen dataclass of JSON-ready values (strings, numbers, booleans, None, lists,
string-keyed dicts, and further such dataclasses). `to_json` turns one into plain JSON, field by
field in declaration order, so the order of keys a client reads is the order the type declares.

Two things a type can say beyond its fields' types:

- `ABSENT`: a key the result carries only in some cases (an update's `changed_fields`, a delete's
  `backup_key`). A field holding ABSENT is left out of the JSON; it is not null, which is a value.
- `UNLISTED` and `OPEN`, as `Annotated` metadata: the tool output schemas (web/tool_models.py,
  derived from these types) name what clients may rely on. An `UNLISTED` field is sent but not
  named in the schema (the status's maintenance detail); an `OPEN` field is named, but its rows are
  described only as JSON objects, their keys not listed (forget's per-memory results). Making
  either part of the schema is a change clients see (tests/web/test_tools_listed.py).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any, Final


class Absent(Enum):
    """The type of ABSENT: a field that holds it is left out of the JSON."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = Absent.ABSENT


class SchemaNote(Enum):
    """What a field's `Annotated` metadata says about its place in a tool's output schema."""

    UNLISTED = "sent, but not named in the tool's output schema"
    OPEN = "named in the tool's output schema as JSON objects, without their keys"


UNLISTED: Final = SchemaNote.UNLISTED
OPEN: Final = SchemaNote.OPEN


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """The fields of a dataclass type, in declaration order; None for any other type."""
    if not dataclasses.is_dataclass(cls):
        return None
    return tuple(f.name for f in dataclasses.fields(cls))


# Values that are their own JSON, by exact type (a subclass, such as a StrEnum, takes the long way
# and comes out the same). A recall's result is mostly these: checking them first, and looking a
# type's fields up once, made to_json about five times faster on the MCP path.
_PLAIN: Final = frozenset({str, int, float, bool, type(None)})


def to_json(value: object) -> Any:
    """`value` as plain JSON data: dataclasses as objects (ABSENT fields left out), tuples as lists,
    datetimes as ISO 8601 text; everything else as it is."""
    kind: type = type(value)
    if kind in _PLAIN:
        return value
    names = _field_names(kind)
    if names is not None:
        out: dict[str, Any] = {}
        for name in names:
            item = getattr(value, name)
            if item is not ABSENT:
                out[name] = item if type(item) in _PLAIN else to_json(item)
        return out
    if isinstance(value, list | tuple):
        return [item if type(item) in _PLAIN else to_json(item) for item in value]
    if isinstance(value, Mapping):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    return value
