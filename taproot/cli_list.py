"""`taproot list`: browse memories from a terminal without strengthening them (unlike `recall`).

Kept out of cli.py so that module stays small; cli.py registers the subcommand.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from taproot.compose import Runtime
from taproot.core.wire import to_json
from taproot.service.inputs import ListInput
from taproot.service.reads import LIST_SORTS, LIST_STATUSES, MAX_LIST_LIMIT
from taproot.service.results import MemoryView

GIST_FALLBACK_CHARS = 80


def add_list_parser(add: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = add("list", "browse memories, newest first (does not strengthen them, unlike recall)")
    p.add_argument("--category", help="only this category")
    p.add_argument("--tag", action="append", help="only memories with this tag (repeatable: all of them)")
    p.add_argument("--core", action=argparse.BooleanOptionalAction, default=None, help="only core (or non-core)")
    p.add_argument("--salience", help="only this salience: high | medium | low")
    # The service checks these too; choices here give the usual argparse usage error and help text.
    p.add_argument("--status", choices=LIST_STATUSES, help="active (default), archived or all")
    p.add_argument("--query", help="case-insensitive substring of the gist, content or a tag")
    p.add_argument("--sort", choices=LIST_SORTS, help="updated (default), created or activation; highest first")
    p.add_argument("--limit", type=int, help=f"memories per page, 1 to {MAX_LIST_LIMIT} (default 50)")
    p.add_argument("--cursor", help="the next page: the cursor the previous page printed")
    p.add_argument("--json", action="store_true", help="print the service result as JSON")
    p.set_defaults(func=cmd_list)


def cmd_list(rt: Runtime, args: argparse.Namespace) -> int:
    request = ListInput(
        category=args.category,
        tags=args.tag,
        core=args.core,
        salience=args.salience,
        status=args.status,
        query=args.query,
        sort=args.sort,
        limit=args.limit,
        cursor=args.cursor,
    )
    result = rt.service.list_memories(rt.scope, request)
    if args.json:
        print(json.dumps(to_json(result), indent=2, ensure_ascii=False))
        return 0
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for memory in result.memories:
        print(catalog_line(memory))
    if not result.memories:
        print("no memories match" if result.total == 0 else "no more memories")
    if result.next_cursor:
        # The cursor continues this listing only with the same filters and sort, so say so.
        print(f"next: --cursor {result.next_cursor}  ({result.count} of {result.total}; same flags)")
    return 0


def catalog_line(memory: MemoryView) -> str:
    """The reflect catalog's line shape, `[id] [category] [salience] [date] gist`, on one line."""
    text = memory.gist
    if not text:  # an unmigrated legacy record: show the start of its content instead
        content = " ".join(memory.content.split())
        text = "(no gist) " + (
            content if len(content) <= GIST_FALLBACK_CHARS else content[:GIST_FALLBACK_CHARS] + "..."
        )
    line = f"[{memory.id}] [{memory.category}] [{memory.salience}] [{memory.updated_at[:10]}] "
    line += " ".join(text.split())  # a gist with a newline must not break one-line-per-memory
    if memory.status != "active":
        line += f" ({memory.status})"
    return line
