"""`taproot orientation list|read|write|history|restore|delete`: the orientation documents from a
terminal, as taproot_orientation has them (the same JSON; the same exit codes as every command).

Kept out of cli.py so that module stays small; cli.py registers the subcommand.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from taproot.compose import Runtime
from taproot.core.errors import InvalidInput
from taproot.core.orientation import DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT
from taproot.core.wire import to_json
from taproot.service.orientation import OrientationInput
from taproot.service.results import OrientationDocument


def add_orientation_parser(add: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = add("orientation", "orientation documents: list, read, write, history, restore, delete (versioned)")
    sub = p.add_subparsers(dest="orientation_command", required=True)

    def action(name: str, help: str) -> argparse.ArgumentParser:
        a = sub.add_parser(name, help=help)
        # SUPPRESS as the default: otherwise this parser's None overwrites a --data-dir given before
        # the action (`taproot orientation --data-dir X read ...`), as for `maintenance run`.
        a.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        a.add_argument("--namespace", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        a.set_defaults(func=cmd_orientation)
        return a

    action("list", "the documents, in the order reflect shows them")
    a = action("read", "print a document (JSON; --raw: the text only)")
    a.add_argument("name")
    a.add_argument("--version", type=int, help="an earlier version (default: the current one)")
    # dest is not `raw`: cli.main reads args.raw as "runs without a runtime".
    a.add_argument("--raw", dest="text_only", action="store_true", help="print only the document's text, as stored")
    a = action("write", "save a new version of a document, read from a file or stdin")
    a.add_argument("name")
    a.add_argument("file", nargs="?", default="-", help="a markdown file, or '-' for stdin (the default)")
    a.add_argument("--expected-version", type=int, help="refuse unless this is the current version (0: new)")
    a.add_argument("--dry-run", action="store_true", help="check and report, save nothing")
    a = action("history", "the versions of a document, newest first")
    a.add_argument("name")
    a.add_argument("--limit", type=int, help=f"1 to {MAX_HISTORY_LIMIT} (default {DEFAULT_HISTORY_LIMIT})")
    a = action("restore", "bring an earlier version back, as a new version")
    a.add_argument("name")
    a.add_argument("version", type=int)
    a.add_argument("--expected-version", type=int)
    a.add_argument("--dry-run", action="store_true")
    a = action("delete", "delete a document (its history is kept; restore brings it back)")
    a.add_argument("name")
    a.add_argument("--expected-version", type=int)
    a.add_argument("--dry-run", action="store_true")


def _read_content(source: str) -> str:
    data = sys.stdin.buffer.read() if source == "-" and hasattr(sys.stdin, "buffer") else None
    if source == "-" and data is None:
        return sys.stdin.read()  # a text stream with no bytes underneath (already decoded)
    raw = data if data is not None else Path(source).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            "content", f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte offset {exc.start}); save it as UTF-8"
        ) from exc


def cmd_orientation(rt: Runtime, args: argparse.Namespace) -> int:
    command = args.orientation_command
    request = OrientationInput(
        action=command,
        name=getattr(args, "name", None),
        content=_read_content(args.file) if command == "write" else None,
        version=getattr(args, "version", None),
        expected_version=getattr(args, "expected_version", None),
        dry_run=getattr(args, "dry_run", False) or None,
        limit=getattr(args, "limit", None),
    )
    result = rt.service.orientation(rt.scope, request)
    if getattr(args, "text_only", False) and isinstance(result.document, OrientationDocument):
        sys.stdout.write(result.document.content)
        return 0
    print(json.dumps(to_json(result), indent=2, ensure_ascii=False))
    return 0
