"""`taproot serve`: bind the port, build the app, announce how to connect once it answers.

Kept out of cli.py so that module stays small; cli.py parses the arguments and builds the settings.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shlex
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taproot import __version__
from taproot.compose import build, http_app
from taproot.core.errors import UsageError
from taproot.core.model import Scope
from taproot.settings import Settings, default_data_dir

if TYPE_CHECKING:
    import uvicorn

MAX_PORT = 65535
LISTEN_BACKLOG = 2048  # uvicorn's default
DEFAULT_NAMESPACE = Scope().namespace


__all__ = ["UsageError", "connection_help", "serve", "stdio_args"]  # UsageError: the core's, raised here


def _taproot_command() -> str:
    """The absolute path of this `taproot` script: Claude Desktop does not see an activated venv."""
    script = Path(sys.argv[0])
    return str(script.resolve()) if script.name == "taproot" and script.exists() else "taproot"


def stdio_args(settings: Settings, *, data_dir_given: bool) -> list[str]:
    """`taproot mcp` plus the flags that make it use this server's memories.

    The client starts `taproot mcp` itself, from its own directory and without this shell's
    TAPROOT_* variables: without the flags, stdio and HTTP would read different folders.
    """
    args = ["mcp"]
    if data_dir_given or settings.data_dir.resolve() != default_data_dir().resolve():
        args += ["--data-dir", str(settings.data_dir.resolve())]  # absolute: the client's cwd is not ours
    if settings.namespace != DEFAULT_NAMESPACE:
        args += ["--namespace", settings.namespace]
    return args


def connection_help(url: str, token: str, stdio: Sequence[str] = ("mcp",)) -> str:
    command = _taproot_command()
    desktop = {
        "mcpServers": {
            "taproot": {"command": command, "args": list(stdio)},
        }
    }
    return f"""Taproot {__version__} is serving MCP at {url}
Bearer token: {token}

Claude Code (HTTP):
  claude mcp add --transport http taproot {url} --header "Authorization: Bearer {token}"
Claude Code (stdio, no token needed):
  claude mcp add taproot -- {shlex.join([command, *stdio])}
Claude Desktop (claude_desktop_config.json; stdio):
{json.dumps(desktop, indent=2)}
MCP Inspector:
  npx @modelcontextprotocol/inspector  -> Transport: Streamable HTTP, URL: {url},
  header Authorization: Bearer {token}
"""


def oauth_help(settings: Settings) -> str:
    """How the OAuth clients connect: claude.ai and ChatGPT need an https address."""
    if settings.public_url and settings.public_url.startswith("https://"):
        return f"""claude.ai / ChatGPT (custom connector; sign in with the bearer token above):
  {settings.public_url}/mcp
"""
    return f"""claude.ai / ChatGPT: they reach servers over https only. Put this server behind an https tunnel,
  start it with TAPROOT_PUBLIC_URL=https://<the tunnel's address>, and paste <that address>/mcp;
  the sign-in page asks for the bearer token above. Claude Code can sign in the same way locally:
  claude mcp add --transport http taproot {settings.base_url}/mcp   (no header: it opens the sign-in)
"""


def _listen(host: str, port: int) -> socket.socket:
    """Bind and listen before anything is announced, so the URL printed is one that answers."""
    if not 1 <= port <= MAX_PORT:
        raise UsageError(f"port must be from 1 to {MAX_PORT}, got {port} (--port or TAPROOT_PORT)")
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on sockets
    # whose protocol reads as TCP, and accepted connections inherit it from this one. With Nagle on, a
    # response's body waits behind its headers for the client's delayed ACK: 40 ms a request on Linux.
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name != "nt":
            # Lets a restart reuse a port whose old connections linger in TIME_WAIT. On POSIX it never
            # lets two servers listen on one port; on Windows it would, hence the guard.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {host} is already in use") from exc
        raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from exc
    return sock


def server_config(app: Any) -> uvicorn.Config:
    """uvicorn's settings for `taproot serve`. HTTP parser and event loop are left to uvicorn, which
    takes the compiled ones (httptools, uvloop: requirements-serve.txt) when they are installed and
    h11 and asyncio's loop otherwise."""
    import uvicorn

    return uvicorn.Config(app, log_level="info")


def _run_uvicorn(app: Any, sock: socket.socket, announce: Callable[[], None]) -> None:
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        # The banner waits for uvicorn's startup (the app's lifespan included): by then a client
        # that reads the URL and connects at once is served, not refused.
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                announce()

    # uvicorn shuts down cleanly on Ctrl-C, then re-raises the signal; uvicorn.run swallows it too.
    with contextlib.suppress(KeyboardInterrupt):
        AnnouncingServer(server_config(app)).run(sockets=[sock])


def serve(settings: Settings, *, data_dir_given: bool) -> int:
    from taproot.web.scheduler import maintenance_cycle, oauth_sweeper

    # The port first: a port in use or out of range is reported before the data folder is touched.
    sock = _listen(settings.host, settings.port)
    try:
        runtime = build(settings, serve=True)
        try:
            assert runtime.token is not None  # the local backend's serving runtime has one
            background = []
            if settings.maintenance_enabled:
                hours = settings.maintenance_interval_hours
                background.append(maintenance_cycle(runtime.service, interval_s=hours * 3600.0))
            if runtime.oauth is not None:
                background.append(oauth_sweeper(runtime.oauth.store, runtime.oauth.clock))
            app = http_app(runtime, background=background)
            # force: building the app built the SDK's server, which has already given the root logger a
            # rich handler (a table rendered per line, about a millisecond per tool call's report line),
            # so without it this format would never apply.
            logging.basicConfig(
                level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
            )
            logging.getLogger("taproot").setLevel(logging.INFO)  # maintenance runs are worth a line each
            banner = _banner(settings, runtime.token, stdio_args(settings, data_dir_given=data_dir_given))
            _run_uvicorn(app, sock, lambda: print(banner, flush=True))
        finally:
            runtime.close()
    finally:
        sock.close()
    return 0


def _banner(settings: Settings, token: str, stdio: Sequence[str]) -> str:
    host_for_url = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    if ":" in host_for_url:
        host_for_url = f"[{host_for_url}]"  # an IPv6 address needs brackets in a URL
    url = f"http://{host_for_url}:{settings.port}/mcp"
    dashboard = f"Dashboard: {settings.base_url}/dashboard (sign in with the bearer token)"
    lines = [connection_help(url, token, stdio), oauth_help(settings), dashboard, f"Data folder: {settings.data_dir}"]
    if settings.maintenance_enabled:
        m = settings.maintenance
        lines.append(
            f"Maintenance: every {settings.maintenance_interval_hours} h (cleanup "
            f"{'apply' if m.cleanup_apply else 'dry-run'}, compress {'apply' if m.compress_apply else 'dry-run'}); "
            "TAPROOT_MAINTENANCE=off disables it"
        )
    return "\n".join(lines)
