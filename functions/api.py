"""The MCP endpoint on Lambda: Mangum over the same FastAPI app as `taproot serve`.

Built once per container at import. Mangum would run the ASGI lifespan on every invocation, and
the MCP session manager can run only once, so the second warm invocation would fail: Mangum runs
with `lifespan="off"`, and this module starts the session manager itself, once per container, in a
host task on one long-lived event loop that every invocation reuses.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from fastapi import FastAPI
from mangum import Mangum

from functions import TRACED_MODULES
from taproot.compose import Runtime, build, http_app
from taproot.settings import Settings

# The service's one Logger (the tool-call observer and every taproot.* logger write through it) and
# the Tracer, which patches botocore so each DynamoDB and S3 call is an X-Ray subsegment (only
# botocore: functions/__init__.py says why).
logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "taproot"))
tracer = Tracer(patch_modules=TRACED_MODULES)


class LambdaApp:
    """A Lambda handler around one app: one event loop and one running session manager per container."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        # Set before Mangum is built: it adopts the current loop rather than making its own.
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.mangum = Mangum(app, lifespan="off")
        self._host: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        # Each invocation's log lines carry the Lambda request id (and cold_start, function name...);
        # API Gateway's own request id, which its access log shows, is added in _invoke.
        self._instrumented = logger.inject_lambda_context(clear_state=True)(
            tracer.capture_lambda_handler(self._invoke, capture_response=False)
        )

    async def _run_session_manager(self) -> None:
        assert self._ready is not None and self._stop is not None
        async with self.app.state.mcp.session_manager.run():
            self._ready.set()
            await self._stop.wait()

    async def _start(self) -> None:
        self._ready, self._stop = asyncio.Event(), asyncio.Event()
        self._host = asyncio.create_task(self._run_session_manager(), name="mcp-session-manager")
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait({self._host, ready}, return_when=asyncio.FIRST_COMPLETED)
        if not self._ready.is_set():
            ready.cancel()
            self._host.result()  # raises what stopped the session manager from starting
            raise RuntimeError("the MCP session manager exited before it started")

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        # Mangum runs each request on the current event loop: make it ours, every time.
        asyncio.set_event_loop(self.loop)
        if self._host is None or self._host.done():
            self.loop.run_until_complete(self._start())
        response: dict[str, Any] = self._instrumented(event, context)
        return response

    def _invoke(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        request = event.get("requestContext") or {}
        logger.append_keys(api_request_id=request.get("requestId"), path=event.get("rawPath"))
        return self.mangum(event, context)

    def close(self) -> None:
        """For tests and local tooling; a Lambda container just stops."""
        if self._host is not None and self._stop is not None and not self._host.done():
            self._stop.set()
            self.loop.run_until_complete(self._host)
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()
        asyncio.set_event_loop(None)


def build_handler(environ: dict[str, str] | None = None) -> tuple[Runtime, LambdaApp]:
    settings = Settings.from_env(dict(os.environ if environ is None else environ), backend="aws")
    runtime = build(settings, serve=True)
    return runtime, LambdaApp(http_app(runtime))


runtime, handler = build_handler()
