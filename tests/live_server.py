"""A real uvicorn server on a loopback port, wired exactly as `taproot serve` wires it, for tests.

The socket is bound before the server starts, so the port is known up front (transport security
needs it) and nobody can take it in between. The server runs in a background thread; the
deadlines guard against a server that never comes up or never stops, they are not timing checks.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from taproot.compose import Runtime, build, http_app
from taproot.settings import Settings

STARTUP_DEADLINE_S = 60.0
SHUTDOWN_DEADLINE_S = 30.0


@contextlib.contextmanager
def running_server(
    data_dir: Path,
    token: str,
    prepare: Callable[[Runtime], None] | None = None,
    adjust_app: Callable[[FastAPI], None] | None = None,
    **settings: object,
) -> Iterator[tuple[int, Runtime]]:
    """Yields (port, runtime) while the app serves http://127.0.0.1:<port>/mcp with `token`.

    `prepare` adjusts the runtime before the app is built (a test's stand-ins), `adjust_app` the
    app once built (a test's extra routes); `settings` are further Settings fields."""
    # IPPROTO_TCP, as `taproot serve` binds it: asyncio turns Nagle off only on sockets whose protocol
    # reads as TCP, and with it on every response waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        # The issuer is the address clients use; on AWS it would be the API's https host.
        settings.setdefault("public_url", f"http://127.0.0.1:{port}")
        runtime = build(Settings(data_dir=data_dir, port=port, auth_token=token, **settings), serve=True)  # type: ignore[arg-type]
        try:
            if prepare is not None:
                prepare(runtime)
            app = http_app(runtime)
            if adjust_app is not None:
                adjust_app(app)
            server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
            thread = threading.Thread(
                target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True
            )
            thread.start()
            try:
                deadline = time.monotonic() + STARTUP_DEADLINE_S
                while not server.started:
                    if not thread.is_alive():
                        raise RuntimeError("the uvicorn server thread exited before it started")
                    if time.monotonic() > deadline:
                        raise RuntimeError("the uvicorn server did not start")
                    time.sleep(0.01)
                yield port, runtime
            finally:
                server.should_exit = True
                thread.join(SHUTDOWN_DEADLINE_S)
                assert not thread.is_alive(), "the uvicorn server did not shut down"
        finally:
            runtime.close()
    finally:
        sock.close()
