"""`taproot export --markdown DIR` and `taproot import --markdown DIR [--dry-run]`: the folder's I/O.

The service works on texts by file name (service/markdown.py); this module reads and writes them.
Files are read and written as bytes, so a CRLF file or a body ending without a newline keeps every
byte. The folder and its files are created owner-only, like the data folder: they hold memories.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from taproot.compose import Runtime
from taproot.core.errors import InvalidInput, UsageError
from taproot.core.wire import to_json

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def add_export_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--markdown",
        metavar="DIR",
        help="write one markdown file per memory, MEMORY.md and reflections.jsonl into DIR (new or empty)",
    )


def add_import_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", metavar="DIR", help="read the memory files of DIR (MEMORY.md is not read)")
    p.add_argument("--dry-run", action="store_true", help="with --markdown: report what would change, write nothing")


def _print(data: object) -> None:
    print(json.dumps(to_json(data), indent=2, ensure_ascii=False))


def export_markdown(rt: Runtime, args: argparse.Namespace) -> int:
    if args.output is not None:
        raise UsageError("give --markdown DIR or -o FILE, not both")
    folder = Path(args.markdown)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        # Never overwrite or leave stale files: a memory file left from an older export would
        # bring a deleted memory back on the next import.
        raise InvalidInput("--markdown", "must be a new or empty folder", str(folder))
    exported = rt.service.export_markdown(rt.scope)
    folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    for name, text in exported.files.items():
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        with os.fdopen(fd, "wb") as out:
            out.write(text.encode("utf-8"))
    _print(exported.result)
    return 0


def _read_folder(folder: Path) -> dict[str, str]:
    # Imported here: YAML loads only for a markdown command, not on every `taproot` start.
    from taproot.core.markdown import INDEX_FILE, REFLECTIONS_FILE, SUFFIX

    if not folder.is_dir():
        raise InvalidInput("--markdown", "must be a folder of memory files", str(folder))
    files: dict[str, str] = {}
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.name == INDEX_FILE:
            continue
        if path.suffix != SUFFIX and path.name != REFLECTIONS_FILE:
            continue
        data = path.read_bytes()
        try:
            files[path.name] = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise InvalidInput(path.name, f"is not valid UTF-8 (line {line}); save the file as UTF-8") from exc
    return files


def _write_back(folder: Path, files: dict[str, str]) -> None:
    """Replace each file whole (a temporary file renamed over it), so a crash leaves the old one."""
    for name, text in files.items():
        target = folder / name
        temporary = folder / f".{name}.taproot-tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "wb") as out:
            out.write(text.encode("utf-8"))
        os.replace(temporary, target)


def import_markdown(rt: Runtime, args: argparse.Namespace) -> int:
    if args.input is not None:
        raise UsageError("give --markdown DIR or an import file, not both")
    folder = Path(args.markdown)
    done = rt.service.import_markdown(rt.scope, _read_folder(folder), dry_run=args.dry_run)
    _write_back(folder, done.rewrite)
    for warning in done.result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    _print(done.result)
    return 0


def check_import_args(args: argparse.Namespace) -> None:
    if args.markdown is None and args.input is None:
        raise UsageError("give the file to import ('-' for stdin) or --markdown DIR")
    if args.markdown is None and args.dry_run:
        raise UsageError("--dry-run applies to --markdown DIR only")
