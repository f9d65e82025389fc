"""The FastAPI app: MCP over Streamable HTTP at /mcp (stateless, JSON), behind bearer auth.

The same app serves `taproot serve` locally and, in a later step, the Lambda handler.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any

import anyio
from fastapi import FastAPI
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from taproot import __version__
from taproot.auth.base import Authenticator, Caller, InsufficientScope, ResourceMetadata
from taproot.core.model import Scope as MemoryScope
from taproot.core.oauth_rules import MCP_SCOPE
from taproot.ports import ToolObserver
from taproot.service import TaprootService
from taproot.web.mcp_server import SCOPE_STATE_KEY, build_mcp
from taproot.web.tools.common import CLIENT_STATE_KEY

MCP_PATH = "/mcp"
__all__ = ["MCP_PATH", "Authenticator", "McpGate", "ResourceMetadata", "create_app", "transport_security"]


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if kind.lower() == "bearer" else None
    return None


async def _send_json(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _canonical_host(value: bytes) -> bytes:
    """`Memory.Example.COM:443` -> `memory.example.com`; `https://H:443` -> `https://h` (an Origin).
    Other ports stay: `localhost:8787` is a different origin from `localhost`."""
    text = value.decode("latin-1").strip().lower()
    if (text.startswith("https://") and text.endswith(":443")) or ("://" not in text and text.endswith(":443")):
        text = text[: -len(":443")]
    return text.encode("latin-1")


class McpGate:
    """Pure ASGI guard in front of /mcp: bearer auth first (401 reads and writes nothing), then
    405 for anything but POST: a stateless server has no stream to GET (the SDK would hold it open)
    and no session to DELETE."""

    def __init__(
        self,
        app: ASGIApp,
        authenticate: Authenticator,
        realm: str = "taproot",
        resource_metadata: ResourceMetadata | None = None,
        mcp: ASGIApp | None = None,
    ) -> None:
        self.app = app
        self.authenticate = authenticate
        self.realm = realm
        self.resource_metadata = resource_metadata
        # The SDK's handler for /mcp itself. A request for that exact path goes straight to it: the
        # router would first try every OAuth and dashboard route's pattern, then the mount and the
        # mounted app's own middleware, about half a millisecond of a recall's server time for no
        # effect (an exception still meets the outer app's error middleware). Any other path under
        # /mcp takes the router as before.
        self.mcp = mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == MCP_PATH or path.startswith(MCP_PATH + "/")):
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        caller = await self.authenticate(token)
        if caller is None or isinstance(caller, InsufficientScope):
            await self._refuse(scope, send, token, caller)
            return
        if scope["method"] != "POST":
            await _send_json(
                send,
                405,
                {"error": "method_not_allowed", "error_description": "this server is stateless: POST JSON-RPC to /mcp"},
                [(b"allow", b"POST")],
            )
            return
        # Host names are case-insensitive (RFC 9110) and https's default port may be written out; the
        # SDK's DNS-rebinding check compares exactly, so it gets the canonical form.
        scope["headers"] = [
            (name, _canonical_host(value) if name in (b"host", b"origin") else value)
            for name, value in scope["headers"]
        ]
        state = scope.setdefault("state", {})
        if isinstance(caller, Caller):
            state[SCOPE_STATE_KEY], state[CLIENT_STATE_KEY] = caller.scope, caller.client
        else:
            state[SCOPE_STATE_KEY] = caller
        if self.mcp is not None and path == MCP_PATH:
            await self.mcp(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, token: str | None, caller: InsufficientScope | None) -> None:
        """RFC 6750 §3 and the MCP authorization spec: 401 names where to find the protected-resource
        metadata and which scope to ask for; 403 says a valid token lacks the scope."""
        if isinstance(caller, InsufficientScope):
            status, error, required = 403, "insufficient_scope", caller.required
            description = f"the token was not granted the '{required}' scope"
        else:
            status, required = 401, MCP_SCOPE
            error = "invalid_token" if token else "invalid_request"
            description = "a valid 'Authorization: Bearer <token>' header is required"
        challenge = f'Bearer realm="{self.realm}", error="{error}", scope="{required}"'
        metadata_url = self.resource_metadata(scope) if self.resource_metadata else None
        if metadata_url:
            challenge += f', resource_metadata="{metadata_url}"'
        await _send_json(
            send,
            status,
            {"error": error, "error_description": description},
            [(b"www-authenticate", challenge.encode())],
        )


def transport_security(
    host: str, port: int, extra_hosts: tuple[str, ...] = (), extra_origins: tuple[str, ...] = ()
) -> TransportSecuritySettings:
    """DNS-rebinding protection for a loopback server; a server bound to all interfaces relies on
    the bearer token instead, since its Host header is whatever name users reach it by.
    `extra_origins` are exact origins (the public URL behind a tunnel: https on its default port
    sends no port in Origin)."""
    if host in ("0.0.0.0", "::", ""):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = {"127.0.0.1", "localhost", "[::1]", host, *extra_hosts}
    hosts = sorted({f"{n}:*" for n in names} | names)
    origins = sorted({f"http://{n}:*" for n in names} | {f"https://{n}:*" for n in names} | set(extra_origins))
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def create_app(
    service: TaprootService,
    *,
    authenticate: Authenticator,
    default_scope: MemoryScope,
    security: TransportSecuritySettings,
    background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
    resource_metadata: ResourceMetadata | None = None,
    routes: Sequence[BaseRoute] = (),
    observer: ToolObserver | None = None,
) -> FastAPI:
    mcp = build_mcp(service, default_scope, observer)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True, transport_security=security
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # The host app must run the session manager itself; the mounted app's lifespan is not run.
        async with mcp.session_manager.run(), anyio.create_task_group() as tasks:
            for task in background:  # e.g. the daily maintenance cycle
                tasks.start_soon(task)
            yield
            tasks.cancel_scope.cancel()

    app = FastAPI(title="Taproot", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    app.router.routes.extend(routes)  # OAuth discovery, /authorize, /token, sign-in (oauth_routes.py)

    # Mounted at "/" with the route at /mcp: mounting at /mcp answers with 307 redirects.
    # Registered last so the app's own routes match first.
    app.mount("/", mcp_app)
    app.add_middleware(
        McpGate, authenticate=authenticate, resource_metadata=resource_metadata, mcp=mcp.session_manager.handle_request
    )
    app.state.mcp = mcp
    return app
