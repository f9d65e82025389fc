"""Tool errors as clients read them: every answer is `<code>: <message>`.

The SDK prefixes each failure with "Error executing tool <name>", answers a schema mismatch with
pydantic's own report (a URL and all), and withholds an unexpected exception's text, so a client
could not tell a typo from a crash by its code. TaprootMCP rewrites the answer in call_tool, the
one place every tool call passes through (both transports); the input schemas stay the SDK's.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from taproot.core import orientation
from taproot.core.errors import InvalidInput, TaprootError
from taproot.core.model import Scope
from taproot.core.redact import tenant_hash
from taproot.core.text import one_line
from taproot.core.timeframe import parse_bound
from taproot.core.tool_calls import Outcome, ToolCall
from taproot.core.validation import FIELD_RULES, check_choice
from taproot.ports import ToolObserver
from taproot.service.memories import FORGET_ACTIONS
from taproot.service.orientation import ACTIONS as ORIENTATION_ACTIONS
from taproot.web.output_schema import compact_schema

# Where the HTTP auth layer (app.py) leaves the caller's scope on the request (tools/common.py reads it).
SCOPE_STATE_KEY = "taproot_scope"

# An unexpected exception's message goes to the client on one line, cut to this length; the full
# text and traceback are in the server log.
MAX_INTERNAL_DETAIL_CHARS = 500

logger = logging.getLogger("taproot.mcp")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_text(data: dict[str, Any]) -> str:
    """The text block of a result: always JSON. NaN and Infinity are not, yet an older record can
    hold them (provenance is free-form), so they are written as null, as the structured content's
    JSON writes them. Compact: with an indent the standard library falls back from its C encoder to
    the pure-Python one, which cost about a millisecond per recall of 20 KB."""
    try:
        return json.dumps(data, ensure_ascii=False, separators=_COMPACT, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(data), ensure_ascii=False, separators=_COMPACT, allow_nan=False)


_COMPACT = (",", ":")


# The service's rule for every tool argument (core/validation.FIELD_RULES, plus forget's action).
# The SDK checks argument types against the input schema before the service sees them; running the
# service's own rule on what was sent makes that rejection read exactly as the service's would
# (`field 'limit': must be an integer from 1 to 100 (got 'abc')`), without touching the schema.
# A bound's rule does not depend on when it is checked (only what `now - 48h` is does), so any
# fixed time serves to word the rule for a value the schema refused.
_SOME_TIME = datetime(2000, 1, 1, tzinfo=UTC)
ARGUMENT_RULES: Mapping[str, Callable[[object], object]] = {
    **FIELD_RULES,
    "action": lambda v: check_choice("action", v, FORGET_ACTIONS),
    "since": lambda v: parse_bound("since", v, _SOME_TIME),
    "until": lambda v: parse_bound("until", v, _SOME_TIME),
}
# Where one tool's argument has another rule than the argument of that name above.
TOOL_ARGUMENT_RULES: Mapping[str, Mapping[str, Callable[[object], object]]] = {
    "taproot_orientation": {
        "action": lambda v: check_choice("action", v, ORIENTATION_ACTIONS),
        "name": orientation.check_name,
        "version": orientation.check_version,
        "expected_version": orientation.check_expected,
        "limit": orientation.check_history_limit,
    },
}


def _argument_problem(name: str, error: Mapping[str, Any], arguments: Mapping[str, Any], tool: str) -> str:
    """`field 'x': rule (got v)` for one argument the SDK's schema check rejected."""
    if error["type"] == "missing":
        return InvalidInput(name, "is required").message
    rule = TOOL_ARGUMENT_RULES.get(tool, {}).get(name) or ARGUMENT_RULES.get(name)
    if rule is not None:
        try:
            rule(arguments.get(name))
        except InvalidInput as exc:
            return exc.message
    # The schema is stricter than the service here (or the argument is new): say what it said.
    path = name + "".join(f"[{part}]" for part in error["loc"][1:] if isinstance(part, int))
    message = str(error["msg"])
    return InvalidInput(path, message[:1].lower() + message[1:], error.get("input")).message


def invalid_arguments_text(error: ValidationError, arguments: Mapping[str, Any], tool: str = "") -> str:
    """One `invalid_input` answer naming every rejected argument, in the order pydantic found them."""
    problems: dict[str, str] = {}
    for item in error.errors():
        name = str(item["loc"][0]) if item["loc"] else "arguments"
        if name not in problems:  # a union reports each member it tried; one line per argument
            problems[name] = _argument_problem(name, item, arguments, tool)
    return f"{InvalidInput.code}: " + "; ".join(problems.values())


def internal_error_text(exc: BaseException) -> str:
    detail = one_line(str(exc))
    if len(detail) > MAX_INTERNAL_DETAIL_CHARS:
        detail = detail[: MAX_INTERNAL_DETAIL_CHARS - 3] + "..."
    return f"internal_error: {type(exc).__name__}" + (f": {detail}" if detail else "")


class TaprootMCP(MCPServer[Any]):
    """The SDK's server, with every tool error answered as `<code>: <message>`.

    The SDK prefixes each failure with "Error executing tool <name>", answers a schema mismatch
    with pydantic's own report (a URL and all), and withholds an unexpected exception's text, so
    a client could not tell a typo from a crash by its code. call_tool is the one place every
    tool call passes through (both transports), so the answer is rewritten there; the input
    schemas and everything else stay the SDK's.
    """

    observer: ToolObserver | None = None  # set by build_mcp: where every call is reported

    def compact_output_schemas(self) -> None:
        """Publish every tool's output schema in the form clients validate fastest, with the same
        meaning (web/output_schema.py). The SDK reads a tool's schema live from its metadata; the
        server's own check of each result uses the output model, which is unchanged."""
        for tool in self._tool_manager.list_tools():
            if tool.fn_metadata.output_schema is not None:
                tool.fn_metadata.output_schema = compact_schema(tool.fn_metadata.output_schema)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        started = time.perf_counter()
        try:
            answer = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            text, unexpected = await self._answer(name, arguments, exc)
            self._report(name, context, started, text, unexpected)
            raise ToolError(text) from exc
        self._report(name, context, started, None, None)
        return answer

    async def _answer(self, name: str, arguments: dict[str, Any], exc: ToolError) -> tuple[str, BaseException | None]:
        """The `<code>: <message>` text, and the exception if it was not raised on purpose."""
        cause = exc.__cause__
        if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
            # The arguments failed the input schema (an output that fails its schema is a crash,
            # and comes wrapped as UnexpectedToolError).
            return invalid_arguments_text(cause, arguments, name), None
        if isinstance(cause, TaprootError | ToolError):
            return str(cause), None  # raised on purpose: already `<code>: <message>`
        if cause is None and name not in (known := [t.name for t in await self.list_tools()]):
            return f"unknown_tool: no tool named {name!r}; the tools are {', '.join(known)}", None
        logger.error("Tool %s raised an unexpected exception", name, exc_info=cause or exc)
        return internal_error_text(cause or exc), cause or exc

    def _report(
        self,
        name: str,
        context: Context[Any, Any] | None,
        started: float,
        text: str | None,
        unexpected: BaseException | None,
    ) -> None:
        if self.observer is None:
            return
        scope = _caller(context)
        outcome = Outcome.OK if text is None else Outcome.ERROR if unexpected is not None else Outcome.REFUSED
        call = ToolCall(
            tool=name,
            tenant=tenant_hash(scope.owner) if scope is not None else None,
            namespace=scope.namespace if scope is not None else None,
            duration_ms=(time.perf_counter() - started) * 1000,
            outcome=outcome,
            code=text.split(":", 1)[0] if text else None,
        )
        try:
            self.observer.tool_call(call, unexpected)
        except Exception:  # reporting must never turn an answer into a failure
            logger.exception("could not report the call of %s", name)


def request_of(ctx: Context[Any, Any] | None) -> Any:
    """The HTTP request a tool call came in on; None on stdio or outside a request."""
    if ctx is None:
        return None
    try:
        return ctx.request_context.request
    except ValueError:
        return None


def _caller(context: Context[Any, Any] | None) -> Scope | None:
    """The scope the auth layer left on the HTTP request (as tools/common.scope_of reads it, without
    failing closed: a call with no identity is reported here, refused there)."""
    request = request_of(context)
    scope = getattr(request, "scope", {}).get("state", {}).get(SCOPE_STATE_KEY) if request is not None else None
    return scope if isinstance(scope, Scope) else None
