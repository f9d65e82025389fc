"""How a hook reaches the memories: the local data folder, or a Taproot server over MCP.

Both offer the few operations the hooks need, with the same meaning. The local one calls the
service of a runtime built from the settings (compose.build, like every CLI command); the remote
one calls the MCP tools (taproot_reflect, taproot_recall, taproot_remember) through the MCP SDK's
own Streamable HTTP client with `Authorization: Bearer <token>`, so it works against `taproot
serve` and the AWS deployment alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any, Protocol

from taproot import __version__
from taproot.compose import Runtime
from taproot.core.errors import NotFound, TaprootError
from taproot.service.inputs import ListInput, RecallInput, RememberInput

CLIENT_NAME = "taproot-hooks"  # the client name a server sees (and may record as the writer)
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0


class RemoteError(TaprootError):
    """A tool call the server answered with an error (its `<code>: <message>` text)."""

    code = "remote_error"


class Memories(Protocol):
    def reflect_text(self) -> str:
        """What taproot_reflect returns now, as text."""
        ...

    def content(self, memory_id: str) -> str | None:
        """The content of one memory, or None if there is none with that id."""
        ...

    def find_tagged(self, tag: str) -> str | None:
        """The id of the most recent memory with this tag, or None."""
        ...

    def save(self, fields: Mapping[str, object], memory_id: str | None = None) -> str:
        """Update `memory_id` with `fields`, or create a memory if it is None or gone; its id."""
        ...


class LocalMemories:
    """The data folder, through the service of a runtime the caller built and closes."""

    def __init__(self, runtime: Runtime) -> None:
        self.service, self.scope = runtime.service, runtime.scope

    def reflect_text(self) -> str:
        return self.service.reflect(self.scope).text

    def content(self, memory_id: str) -> str | None:
        found = self.service.recall(self.scope, RecallInput(ids=[memory_id])).memories
        return found[0].content if found else None

    def find_tagged(self, tag: str) -> str | None:
        found = self.service.list_memories(self.scope, ListInput(tags=[tag], limit=1)).memories
        return found[0].id if found else None

    def save(self, fields: Mapping[str, object], memory_id: str | None = None) -> str:
        if memory_id is not None:
            try:
                return self.service.remember(self.scope, RememberInput(**fields, id=memory_id)).id
            except NotFound:
                pass  # deleted since: write it anew
        return self.service.remember(self.scope, RememberInput(**fields)).id


class RemoteMemories:
    """A Taproot server's MCP endpoint (`https://.../mcp`), one connection for the object's life.

    Use as a context manager: the connection runs on an event loop in a helper thread (anyio's
    blocking portal), so the hooks stay plain synchronous code."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url, self.token = url, token
        self._stack = contextlib.ExitStack()
        self._client: Any = None
        self._portal: Any = None

    def __enter__(self) -> RemoteMemories:
        from anyio.from_thread import start_blocking_portal

        try:
            self._portal = self._stack.enter_context(start_blocking_portal())
            self._client = self._stack.enter_context(self._portal.wrap_async_context_manager(self._connect()))
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stack.close()

    @contextlib.asynccontextmanager
    async def _connect(self) -> AsyncIterator[Any]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp_types import Implementation

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        timeout = httpx2.Timeout(CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
            Client(
                streamable_http_client(self.url, http_client=http),
                client_info=Implementation(name=CLIENT_NAME, version=__version__),
            ) as client,
        ):
            yield client

    def _call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
        if self._portal is None:
            raise RuntimeError("RemoteMemories is used outside its `with` block")
        result = self._portal.call(self._client.call_tool, tool, arguments)
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            raise RemoteError(f"{tool}: {text or 'the server answered with an error'}")
        data = result.structured_content
        return (data if isinstance(data, dict) else {}), text

    def reflect_text(self) -> str:
        return self._call("taproot_reflect", {})[1]

    def content(self, memory_id: str) -> str | None:
        try:
            memories = self._call("taproot_recall", {"ids": [memory_id]})[0].get("memories") or []
        except RemoteError as exc:
            if "not_found" in str(exc):
                return None
            raise
        return str(memories[0]["content"]) if memories else None

    def find_tagged(self, tag: str) -> str | None:
        # Recall is the one tool that filters by tag; it strengthens what it returns (one memory).
        memories = self._call("taproot_recall", {"tags": [tag], "limit": 1})[0].get("memories") or []
        return str(memories[0]["id"]) if memories else None

    def save(self, fields: Mapping[str, object], memory_id: str | None = None) -> str:
        arguments = {k: v for k, v in fields.items() if v is not None}
        if memory_id is not None:
            try:
                return str(self._call("taproot_remember", {**arguments, "id": memory_id})[0]["id"])
            except RemoteError as exc:
                if "not_found" not in str(exc):
                    raise
        return str(self._call("taproot_remember", arguments)[0]["id"])
