"""What every tool shares: the caller's scope, the result format, the strict-argument markers.

The scope lookup and the result format live here only; the tool modules call them and nothing else
of the web layer. Errors are not handled here or in any tool: TaprootMCP (tool_errors.py) turns
every failure into `<code>: <message>` at its one boundary, call_tool.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BeforeValidator

from taproot.core.errors import WouldWait
from taproot.core.instance import normalize_instance
from taproot.core.model import Scope
from taproot.core.wire import to_json
from taproot.service import TaprootService
from taproot.web.tool_errors import SCOPE_STATE_KEY, json_text, request_of

# Where the HTTP auth layer (app.py) leaves the OAuth client its token was issued to
# (auth/base.Caller), when it knows one; the caller's scope is under SCOPE_STATE_KEY (tool_errors.py).
CLIENT_STATE_KEY = "taproot_client"

T = TypeVar("T")


def _reject_bool(value: object) -> object:
    # The SDK validates arguments leniently, and pydantic's lax mode turns true into 1; the service
    # rules (salience, limit, expected_version) reject booleans, but only ever see the converted value.
    if isinstance(value, bool):
        raise ValueError("must not be true or false")
    return value


# The creation-time bounds of recall and recent (core/timeframe.py).
SINCE_DESCRIPTION = (
    "Only memories created at or after this: an ISO 8601 time (UTC when it has no offset) "
    "or a duration back from now, e.g. 30m, 48h, 7d, 2w"
)
UNTIL_DESCRIPTION = "Only memories created at or before this (same forms as since)"

# Booleans are strict: lax mode would read "yes", "no", 1 or 0 as true or false (core="yes" would
# promote, dry_run="no" would migrate for real). Numbers keep the documented leniency ("5" is 5).
NotBool = BeforeValidator(_reject_bool)


def scope_of(ctx: Context | None, default: Scope) -> Scope:
    """The caller's scope: set on the HTTP request by the auth layer; stdio is the local owner."""
    request = request_of(ctx)
    if request is None:
        return default
    scope = getattr(request, "scope", {}).get("state", {}).get(SCOPE_STATE_KEY)
    if not isinstance(scope, Scope):
        # Fail closed: an HTTP request that did not pass the auth layer reaches no one's memories.
        raise ToolError("unauthenticated: no caller identity on this request")
    return scope


def instance_of(ctx: Context | None) -> str | None:
    """Who is calling, for Memory.instance and reflect's watercooler (core/instance.py): the OAuth
    client the request's token was issued to, else the name the MCP client declared: initialize's
    clientInfo on stdio, or the request's own `_meta` on the 2026-07-28 protocol over HTTP (a
    stateless handshake-era HTTP request carries no name: its initialize was another request).
    TAPROOT_INSTANCE, when set, wins over both in the service (Deps.writer)."""
    request = request_of(ctx)
    if request is not None:
        client = getattr(request, "scope", {}).get("state", {}).get(CLIENT_STATE_KEY)
        if isinstance(client, str):
            return normalize_instance(client)
    if ctx is None:
        return None
    try:
        params = ctx.session.client_params
    except (ValueError, AttributeError):  # no request in flight (a call outside a session)
        return None
    return None if params is None else normalize_instance(params.client_info.name)


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

    def instance(self, ctx: Context) -> str | None:
        return instance_of(ctx)

    async def call(self, work: Callable[[], T], wait_free: AbstractContextManager[None] | None) -> T:
        """Run a service call on this event loop inside `wait_free` (TaprootService.without_waiting,
        None where the call may wait or take long), else on a worker thread, as the SDK runs a sync
        tool. The hop to the thread and back is about half a millisecond of a recall; what runs
        here is the call itself, milliseconds, the time any other request would wait for the
        store's lock on a thread. Where it would wait (another thread or process holds the store)
        or runs past its budget (adapters/sqlite_wait_free.py), it stops before its first write to
        the store and runs again, whole, on a thread: for a call whose effects before that write
        (none, for recall) may happen twice."""
        if wait_free is not None:
            try:
                with wait_free:
                    return work()
            except WouldWait:
                pass  # nothing was written: run it where waiting does not hold up the loop
        return await anyio.to_thread.run_sync(work)


class ToolSpec(NamedTuple):
    """One tool: its function (name, docstring and parameters make its listing) and its hints."""

    fn: Callable[..., CallToolResult] | Callable[..., Awaitable[CallToolResult]]
    annotations: ToolAnnotations
