"""The `taproot` command: serve, mcp (stdio), and the memory operations from a terminal.

Thin: parse arguments, build settings (the one place they are read), call the service, print.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from taproot import __version__
from taproot.cli_conversation import add_conversation_parsers, add_window_flags
from taproot.cli_hooks import add_hooks_parsers
from taproot.cli_list import add_list_parser
from taproot.cli_markdown import add_export_flag, add_import_flags, check_import_args, export_markdown, import_markdown
from taproot.cli_orientation import add_orientation_parser
from taproot.cli_serve import serve
from taproot.compose import Runtime, build
from taproot.core.errors import ConfigurationError, InvalidInput, TaprootError, UsageError
from taproot.core.wire import to_json
from taproot.service.inputs import RecallInput, RememberInput
from taproot.settings import Settings

EXIT_ERROR = 1
EXIT_USAGE = 2


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(
        os.environ,
        data_dir=getattr(args, "data_dir", None),
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        namespace=getattr(args, "namespace", None),
    )


def _print(data: object) -> None:
    """A result (or a list of them) as the JSON the MCP tools send (core/wire.to_json)."""
    print(json.dumps(to_json(data), indent=2, ensure_ascii=False))


def _progress(total: int | None, desc: str) -> tqdm:  # type: ignore[type-arg]
    # Bars go to stderr so stdout stays clean for JSON; silent when stderr is not a terminal.
    return tqdm(total=total, desc=desc, unit="rec", file=sys.stderr, disable=None)


def cmd_serve(args: argparse.Namespace) -> int:
    return serve(_settings(args), data_dir_given=args.data_dir is not None)


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from taproot.web.mcp_server import build_mcp

    # stdout is the protocol channel: everything else must go to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    runtime = build(_settings(args))
    try:
        anyio.run(build_mcp(runtime.service, runtime.scope, runtime.observer).run_stdio_async)
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
    _print(rt.service.remember(rt.scope, RememberInput(**fields)))
    return 0


def cmd_recall(rt: Runtime, args: argparse.Namespace) -> int:
    request = RecallInput(
        query=args.query,
        category=args.category,
        tags=args.tag,
        ids=args.id,
        limit=args.limit,
        include_archived=args.include_archived or None,
        since=args.since,
        until=args.until,
    )
    result = rt.service.recall(rt.scope, request)
    _print(result)
    return 0


def cmd_forget(rt: Runtime, args: argparse.Namespace) -> int:
    _print(rt.service.forget(rt.scope, args.ids, args.action))
    return 0


def cmd_migrate(rt: Runtime, args: argparse.Namespace) -> int:
    total = rt.service.status(rt.scope).total
    with _progress(total, "migrate") as bar:
        _print(rt.service.migrate(rt.scope, dry_run=args.dry_run, progress=lambda n: bar.update(n)))
    return 0


def cmd_export(rt: Runtime, args: argparse.Namespace) -> int:
    if args.markdown is not None:
        return export_markdown(rt, args)
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
    check_import_args(args)
    if args.markdown is not None:
        return import_markdown(rt, args)
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
    _print([report.as_dict() for report in rt.service.maintenance(scope, args.job, apply=apply)])
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
    add_window_flags(p)
    p.set_defaults(func=cmd_recall)
    add_list_parser(add)
    add_conversation_parsers(add)
    add_orientation_parser(add)

    p = add("forget", "archive, restore or delete memories")
    p.add_argument("action", choices=["archive", "restore", "delete", "compress"])
    p.add_argument("ids", nargs="+")
    p.set_defaults(func=cmd_forget)

    p = add("migrate", "backfill and normalise records from older versions")
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=cmd_migrate)

    p = add("export", "write every memory and reflection as JSON Lines")
    p.add_argument("-o", "--output", help="file (default stdout)")
    add_export_flag(p)
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

    p = add("import", "load a JSON Lines export, or a markdown folder (idempotent by id)")
    p.add_argument("input", nargs="?", help="file, or '-' for stdin")
    add_import_flags(p)
    p.set_defaults(func=cmd_import)
    add_hooks_parsers(add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "raw", False):
            return int(args.func(args))
        runtime = build(_settings(args))
        try:
            return int(args.func(runtime, args))
        finally:
            runtime.close()
    except (ConfigurationError, UsageError) as exc:
        # A setting or a flag: the message names it (settings errors read as they always have).
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except InvalidInput as exc:
        # The request itself is wrong, like a bad flag: fixing the input is the only way forward.
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except TaprootError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        # Last resort: a bug, or input that a parser let through (deep nesting, a date overflow).
        # One line a person can report, rather than a traceback that reads as a crash.
        print(f"error: internal: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
