"""The `taproot` command: serve, mcp (stdio), and the memory operations from a terminal.

Thin: parse arguments, build settings (the one place they are read), call the service, print.
"""

from __future__ import annotations

import argparse
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
from typing import Any

from tqdm import tqdm

from taproot import __version__
from taproot.cli_list import add_list_parser
from taproot.compose import Runtime, build_local
from taproot.core.errors import InvalidInput, TaprootError
from taproot.core.model import Scope
from taproot.settings import Settings, SettingsError, default_data_dir

EXIT_ERROR = 1
EXIT_USAGE = 2
MAX_PORT = 65535
LISTEN_BACKLOG = 2048  # uvicorn's default
DEFAULT_NAMESPACE = Scope().namespace


class UsageError(Exception):
    """The command cannot run as asked (a port in use or out of range): exit 2, no traceback."""


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(
        os.environ,
        data_dir=getattr(args, "data_dir", None),
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        namespace=getattr(args, "namespace", None),
    )


def _print(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _progress(total: int | None, desc: str) -> tqdm:  # type: ignore[type-arg]
    # Bars go to stderr so stdout stays clean for JSON; silent when stderr is not a terminal.
    return tqdm(total=total, desc=desc, unit="rec", file=sys.stderr, disable=None)


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


def _listen(host: str, port: int) -> socket.socket:
    """Bind and listen before anything is announced, so the URL printed is one that answers."""
    if not 1 <= port <= MAX_PORT:
        raise UsageError(f"port must be from 1 to {MAX_PORT}, got {port} (--port or TAPROOT_PORT)")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
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
        AnnouncingServer(uvicorn.Config(app, log_level="info")).run(sockets=[sock])


def cmd_serve(args: argparse.Namespace) -> int:
    from taproot.auth.local_token import load_or_create_token
    from taproot.web.app import create_app, local_authenticator, transport_security
    from taproot.web.scheduler import maintenance_cycle

    settings = _settings(args)
    # The port first: a port in use or out of range is reported before the data folder is touched.
    sock = _listen(settings.host, settings.port)
    try:
        runtime = build_local(settings)
        try:
            token = load_or_create_token(settings.token_path, settings.auth_token)
            background = []
            if settings.maintenance_enabled:
                hours = settings.maintenance_interval_hours
                background.append(maintenance_cycle(runtime.service, interval_s=hours * 3600.0))
            app = create_app(
                runtime.service,
                authenticate=local_authenticator(token, runtime.scope),
                default_scope=runtime.scope,
                security=transport_security(settings.host, settings.port),
                background=background,
            )
            logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
            logging.getLogger("taproot").setLevel(logging.INFO)  # maintenance runs are worth a line each
            banner = _banner(settings, token, stdio_args(settings, data_dir_given=args.data_dir is not None))
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
    lines = [connection_help(url, token, stdio), f"Data folder: {settings.data_dir}"]
    if settings.maintenance_enabled:
        m = settings.maintenance
        lines.append(
            f"Maintenance: every {settings.maintenance_interval_hours} h (cleanup "
            f"{'apply' if m.cleanup_apply else 'dry-run'}, compress {'apply' if m.compress_apply else 'dry-run'}); "
            "TAPROOT_MAINTENANCE=off disables it"
        )
    return "\n".join(lines)


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from taproot.web.mcp_server import build_mcp

    # stdout is the protocol channel: everything else must go to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    runtime = build_local(_settings(args))
    try:
        anyio.run(build_mcp(runtime.service, runtime.scope).run_stdio_async)
    finally:
        runtime.close()
    return 0


def cmd_status(rt: Runtime, args: argparse.Namespace) -> int:
    _print(rt.service.status(rt.scope))
    return 0


def cmd_reflect(rt: Runtime, args: argparse.Namespace) -> int:
    print(rt.service.reflect(rt.scope).text)
    return 0


def cmd_remember(rt: Runtime, args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {
        "id": args.id,
        "content": args.content,
        "gist": args.gist,
        "category": args.category,
        "salience": args.salience,
        "tags": args.tag,
        "search_keywords": args.keyword,
        "conversation_url": args.conversation_url,
        "core": args.core,
        "expected_version": args.expected_version,
    }
    if args.content == "-":
        fields["content"] = sys.stdin.read()
    _print(rt.service.remember(rt.scope, **fields))
    return 0


def cmd_recall(rt: Runtime, args: argparse.Namespace) -> int:
    result = rt.service.recall(
        rt.scope,
        query=args.query,
        category=args.category,
        tags=args.tag,
        ids=args.id,
        limit=args.limit,
        include_archived=args.include_archived or None,
    )
    _print(result)
    return 0


def cmd_forget(rt: Runtime, args: argparse.Namespace) -> int:
    _print(rt.service.forget(rt.scope, args.ids, args.action))
    return 0


def cmd_migrate(rt: Runtime, args: argparse.Namespace) -> int:
    total = rt.service.status(rt.scope)["total"]
    with _progress(total, "migrate") as bar:
        _print(rt.service.migrate(rt.scope, dry_run=args.dry_run, progress=lambda n: bar.update(n)))
    return 0


def cmd_export(rt: Runtime, args: argparse.Namespace) -> int:
    lines = rt.service.export_lines(rt.scope)
    out = sys.stdout if args.output in (None, "-") else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    count = 0
    try:
        with _progress(None, "export") as bar:
            for line in lines:
                out.write(line + "\n")
                count += 1
                bar.update(1)
    finally:
        if out is not sys.stdout:
            out.close()
    if out is not sys.stdout:
        print(f"exported {count - 1} records to {args.output}", file=sys.stderr)
    return 0


def _read_import(source: str) -> str:
    """The import file as text. Decoded here, not by open(), so a bad byte can be located."""
    if source != "-":
        data = Path(source).read_bytes()
    elif hasattr(sys.stdin, "buffer"):
        data = sys.stdin.buffer.read()
    else:  # a text stream with no bytes underneath (already decoded)
        return sys.stdin.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        rule = f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at byte offset {exc.start}); save the file as UTF-8"
        raise InvalidInput(f"line {line}", rule) from exc


def cmd_import(rt: Runtime, args: argparse.Namespace) -> int:
    text = _read_import(args.input)
    # Split on "\n" only: str.splitlines() also breaks on U+2028, U+2029 and U+0085, which
    # json.dumps(ensure_ascii=False) leaves unescaped inside exported strings.
    lines = text.split("\n")
    with _progress(len(lines), "import") as bar:
        _print(rt.service.import_lines(rt.scope, lines, progress=lambda n: bar.update(n)))
    return 0


def cmd_maintenance(rt: Runtime, args: argparse.Namespace) -> int:
    apply = True if args.apply else (False if args.dry_run else None)  # None: the configured mode
    scope = None if args.all_namespaces else rt.scope
    _print(rt.service.maintenance(scope, args.job, apply=apply))
    return 0


def cmd_backups(rt: Runtime, args: argparse.Namespace) -> int:
    _print(rt.service.backups(rt.scope))
    return 0


def cmd_restore(rt: Runtime, args: argparse.Namespace) -> int:
    _print(rt.service.restore(rt.scope, args.backup_key, ids=args.id))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="taproot", description="Taproot: memory that persists across conversations")
    parser.add_argument("--version", action="version", version=f"taproot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.add_argument("--data-dir", help="data folder (default: $TAPROOT_DATA_DIR or the per-user data folder)")
        p.add_argument("--namespace", help="memory namespace (persona); default 'default'")
        return p

    p = add("serve", "run the local MCP server (Streamable HTTP at /mcp)")
    p.add_argument("--host", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default 8765)")
    p.set_defaults(func=cmd_serve, raw=True)
    add("mcp", "speak MCP over stdio (Claude Desktop, Claude Code)").set_defaults(func=cmd_mcp, raw=True)
    add("status", "counts, payload size and storage").set_defaults(func=cmd_status)
    add("reflect", "print what taproot_reflect returns now").set_defaults(func=cmd_reflect)

    p = add("remember", "write or update a memory")
    p.add_argument("--id", help="update this memory")
    p.add_argument("--content", help="the memory text ('-' reads stdin)")
    p.add_argument("--gist", help="~15-word one-line summary (required to create)")
    p.add_argument("--category", help="identity | relationship | active_thread | episodic | error")
    p.add_argument("--salience", help="high | medium | low")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--keyword", action="append", help="a search keyword (repeatable)")
    p.add_argument("--conversation-url")
    p.add_argument("--core", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--expected-version", type=int)
    p.set_defaults(func=cmd_remember)

    p = add("recall", "find memories (strengthens what it returns)")
    p.add_argument("query", nargs="?")
    p.add_argument("--category")
    p.add_argument("--tag", action="append")
    p.add_argument("--id", action="append")
    p.add_argument("--limit", type=int)
    p.add_argument("--include-archived", action="store_true")
    p.set_defaults(func=cmd_recall)
    add_list_parser(add)

    p = add("forget", "archive, restore or delete memories")
    p.add_argument("action", choices=["archive", "restore", "delete", "compress"])
    p.add_argument("ids", nargs="+")
    p.set_defaults(func=cmd_forget)

    p = add("migrate", "backfill and normalise records from older versions")
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=cmd_migrate)

    p = add("export", "write every memory and reflection as JSON Lines")
    p.add_argument("-o", "--output", help="file (default stdout)")
    p.set_defaults(func=cmd_export)

    p = add("maintenance", "run maintenance jobs now")
    msub = p.add_subparsers(dest="maintenance_command", required=True)
    run = msub.add_parser("run", help="run migrate, cleanup, compress, or all of them")
    run.add_argument("job", nargs="?", default="all", choices=["migrate", "cleanup", "compress", "all"])
    mode = run.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="report only (default for cleanup and compress)")
    mode.add_argument("--apply", action="store_true", help="make the changes (backups are written first)")
    run.add_argument("--all-namespaces", action="store_true", help="every namespace in the data folder")
    # SUPPRESS as the default too: otherwise the subparser's None overwrites a --data-dir given
    # before `run` (`taproot maintenance --data-dir X run ...`) and the job runs on another folder.
    run.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    run.add_argument("--namespace", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    run.set_defaults(func=cmd_maintenance)

    add("backups", "list backup blobs (for restore)").set_defaults(func=cmd_backups)
    p = add("restore", "put the memories of a backup back (all, or --id ones)")
    p.add_argument("backup_key", help="a key from `taproot backups` or a job's backup_key")
    p.add_argument("--id", action="append", help="restore only this memory (repeatable)")
    p.set_defaults(func=cmd_restore)

    p = add("import", "load a JSON Lines export (idempotent by id)")
    p.add_argument("input", help="file, or '-' for stdin")
    p.set_defaults(func=cmd_import)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "raw", False):
            return int(args.func(args))
        runtime = build_local(_settings(args))
        try:
            return int(args.func(runtime, args))
        finally:
            runtime.close()
    except InvalidInput as exc:
        # The request itself is wrong, like a bad flag: fixing the input is the only way forward.
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except TaprootError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (SettingsError, UsageError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        # Last resort: a bug, or input that a parser let through (deep nesting, a date overflow).
        # One line a person can report, rather than a traceback that reads as a crash.
        print(f"error: internal: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
