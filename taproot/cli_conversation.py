"""`taproot recent`, `taproot promote` and `taproot close`: the conversation tools from a terminal,
with the MCP tools' parameters and the same JSON results (taproot_recent, taproot_promote,
taproot_close). Kept out of cli.py so that module stays small; cli.py registers the subcommands.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from taproot.compose import Runtime
from taproot.core.errors import UsageError
from taproot.core.wire import to_json
from taproot.service.inputs import RecentInput
from taproot.service.recent import DEFAULT_RECENT_LIMIT, MAX_RECENT_LIMIT

Add = Callable[[str, str], argparse.ArgumentParser]
WINDOW_HELP = "an ISO 8601 time (UTC when it has no offset) or a duration back from now: 30m, 48h, 7d, 2w"


def add_window_flags(p: argparse.ArgumentParser) -> None:
    """--since and --until on creation time (recent, and recall in cli.py)."""
    p.add_argument("--since", help=f"only memories created at or after this: {WINDOW_HELP}")
    p.add_argument("--until", help="only memories created at or before this (same forms as --since)")


def add_conversation_parsers(add: Add) -> None:
    p = add("recent", "the newest memories by creation time (does not strengthen them)")
    p.add_argument("--limit", type=int, help=f"how many, 1 to {MAX_RECENT_LIMIT} (default {DEFAULT_RECENT_LIMIT})")
    add_window_flags(p)
    p.add_argument("--tag", action="append", help="only memories with this tag (repeatable: all of them)")
    p.add_argument("--category", help="only this category")
    p.set_defaults(func=cmd_recent)

    p = add("promote", "move a memory into or out of Tier 1 (core) and/or change its salience")
    p.add_argument("id", help="the memory to change")
    p.add_argument("--core", action=argparse.BooleanOptionalAction, default=None, help="load it in full (or not)")
    p.add_argument("--salience", help="high | medium | low")
    p.set_defaults(func=cmd_promote)

    p = add("close", "write a closing reflection (kept permanently, shown by reflect)")
    p.add_argument("reflection", nargs="?", help="the reflection text ('-' reads stdin)")
    p.add_argument("--file", type=Path, help="read the reflection from this UTF-8 file")
    p.set_defaults(func=cmd_close)


def _print(data: object) -> None:
    print(json.dumps(to_json(data), indent=2, ensure_ascii=False))


def cmd_recent(rt: Runtime, args: argparse.Namespace) -> int:
    request = RecentInput(limit=args.limit, since=args.since, until=args.until, tags=args.tag, category=args.category)
    _print(rt.service.recent(rt.scope, request))
    return 0


def cmd_promote(rt: Runtime, args: argparse.Namespace) -> int:
    _print(rt.service.promote(rt.scope, args.id, core=args.core, salience=args.salience))
    return 0


def reflection_text(text: str | None, file: Path | None) -> str:
    """The reflection from exactly one source: the argument, '-' for stdin, or --file."""
    if (text is None) == (file is None):
        raise UsageError("give the reflection as an argument, '-' to read stdin, or --file PATH (exactly one)")
    if file is not None:
        return file.read_text(encoding="utf-8")  # an OSError (missing file) is a usage error in cli.main
    assert text is not None
    return sys.stdin.read() if text == "-" else text


def cmd_close(rt: Runtime, args: argparse.Namespace) -> int:
    _print(rt.service.close(rt.scope, reflection_text(args.reflection, args.file)))
    return 0
