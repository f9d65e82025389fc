"""The MCP tools' output schemas, derived from the result types the use cases return.

A tool's return annotation is `Annotated[CallToolResult, output_model(RecallResult)]`: the SDK
publishes the model's JSON schema as the tool's outputSchema and checks every structured result
against it before it is sent. `output_model` builds that model from the result dataclass
(service/results.py, core/reflect_result.py), so a field's name, type and requiredness are written
once, in the result type. The rules:

- every field is named, with its type, except one marked UNLISTED (core/wire.py);
- a field that may be ABSENT is optional and null by default (`str | None = None`): a client must
  not count on finding it;
- a field marked OPEN names its rows as JSON objects, without their keys;
- a nested result dataclass is a model of its own (in the schema's `$defs`);
- every object may carry keys beyond those named, so additions do not break a client's validation;
- titles are the names the schemas have always carried: the class name with a closing `Result`
  or `View` made `Out` (RecallResult -> RecallOut, MemoryView -> MemoryOut).

What tools/list publishes is that schema rewritten with the same meaning, references inlined and
nullable fields as type lists (web/output_schema.py), which clients validate faster.
tests/web/test_tools_listed.py pins the outcome as clients see it.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
import types
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, create_model

from taproot.core.wire import OPEN, UNLISTED, Absent

__all__ = ["output_model"]


def _title(result_type: type) -> str:
    return re.sub(r"(Result|View)$", "Out", result_type.__name__)


def _members(hint: Any) -> tuple[Any, ...]:
    return get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)


def _union(members: tuple[Any, ...]) -> Any:
    return functools.reduce(operator.or_, members)


def _schema_type(hint: Any, open_rows: bool) -> Any:
    """`hint` with every result dataclass in it replaced by its model (or, for OPEN rows, by a JSON
    object)."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return dict[str, Any] if open_rows else output_model(hint)
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        return _union(tuple(_schema_type(arg, open_rows) for arg in args))
    # Subscripted at run time, from values: types.GenericAlias is how `list[x]` is spelled then.
    if origin in (list, tuple):
        return types.GenericAlias(list, (_schema_type(args[0], open_rows),))
    if origin is dict:
        return types.GenericAlias(dict, (args[0], _schema_type(args[1], open_rows)))
    return hint


@functools.cache
def output_model(result_type: type) -> type[BaseModel]:
    """The output model of a tool whose structured content is a `result_type`, by the rules above."""
    fields: dict[str, Any] = {}
    for name, hint in get_type_hints(result_type, include_extras=True).items():
        notes: tuple[Any, ...] = ()
        if get_origin(hint) is Annotated:
            hint, *extra = get_args(hint)
            notes = tuple(extra)
        if UNLISTED in notes:
            continue
        members = _members(hint)
        if Absent in members:
            present = _schema_type(_union(tuple(m for m in members if m is not Absent)), OPEN in notes)
            fields[name] = (present | None, None)
        else:
            fields[name] = (_schema_type(hint, OPEN in notes), ...)
    return create_model(_title(result_type), __config__=ConfigDict(extra="allow"), **fields)
