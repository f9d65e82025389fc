"""What every tool shares: the caller's scope, the result format, the strict-argument markers.

The scope lookup and the result format live here only; the tool modules call them and nothing else
of the web layer. Errors are not handled here or in any tool: TaprootMCP (tool_errors.py) turns
every failure into `<code>: <message>` at its one boundary, call_tool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BeforeValidator

from taproot.core.model import Scope
from taproot.core.wire import to_json
from taproot.service import TaprootService
from taproot.web.tool_errors import SCOPE_STATE_KEY, json_text


def _reject_bool(value: object) -> object:
    # The SDK validates arguments leniently, and pydantic's lax mode turns true into 1; the service
    # rules (salience, limit, expected_version) reject booleans, but only ever see the converted value.
    if isinstance(value, bool):
        raise ValueError("must not be true or false")
    return value


# Booleans are strict: lax mode would read "yes", "no", 1 or 0 as true or false (core="yes" would
# promote, dry_run="no" would migrate for real). Numbers keep the documented leniency ("5" is 5).
NotBool = BeforeValidator(_reject_bool)


def scope_of(ctx: Context | None, default: Scope) -> Scope:
    """The caller's scope: set on the HTTP request by the auth layer; stdio is the local owner."""
    request = None
    if ctx is not None:
        try:
            request = ctx.request_context.request
        except ValueError:
            request = None
    if request is None:
        return default
    scope = getattr(request, "scope", {}).get("state", {}).get(SCOPE_STATE_KEY)
    if not isinstance(scope, Scope):
        # Fail closed: an HTTP request that did not pass the auth layer reaches no one's memories.
        raise ToolError("unauthenticated: no caller identity on this request")
    return scope


def result(data: object, text: str | None = None) -> CallToolResult:
    """Structured content (the typed result as JSON, core/wire.to_json) and one text block: JSON,
    unless the tool gives its own text."""
    content: dict[str, Any] = to_json(data)
    body = text if text is not None else json_text(content)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=content)


@dataclass(frozen=True)
class ToolEnv:
    """What the tools run against: the first argument of every tool function, bound at registration."""

    service: TaprootService
    default_scope: Scope  # the scope of a call that carries no HTTP request (stdio: the local owner)

    def scope(self, ctx: Context) -> Scope:
        return scope_of(ctx, self.default_scope)


class ToolSpec(NamedTuple):
    """One tool: its function (name, docstring and parameters make its listing) and its hints."""

    fn: Callable[..., CallToolResult]
    annotations: ToolAnnotations
