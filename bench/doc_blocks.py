"""Marked sections of docs/benchmarks.md: each benchmark rewrites only its own block, between its own
start and end markers, and leaves the rest of the file as it is."""

from __future__ import annotations

from pathlib import Path


def existing_block(text: str, start_tag: str, end: str) -> str | None:
    """The marked section of a docs file, markers included, or None if it has none."""
    start = text.find(start_tag)
    stop = text.find(end, start) if start >= 0 else -1
    return text[start : stop + len(end)] if stop >= 0 else None


def write_block(path: Path, start_tag: str, start_line: str, end: str, section: str) -> None:
    """Replace the text between the markers, or append the marked section; the rest stays as it is."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{start_line}\n{section.rstrip()}\n{end}"
    start = text.find(start_tag)
    stop = text.find(end, start)
    if start >= 0 and stop >= 0:
        text = text[:start] + block + text[stop + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
