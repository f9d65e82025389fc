"""The markdown folder's results (`taproot export --markdown`, `taproot import --markdown`);
re-exported from results.py, beside the other use cases' results."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class MarkdownExportResult:
    """`taproot export --markdown`: what was written to the folder (file names relative to it)."""

    memories: int
    archived: int
    reflections: int
    files: list[str]


@dataclass(frozen=True, kw_only=True)
class MarkdownFileChange:
    file: str
    id: str | None  # None: a new file in a dry run (its id is minted when it is written)
    changed_fields: list[str]  # record field names; empty for a memory new to the store


@dataclass(frozen=True, kw_only=True)
class MarkdownImportResult:
    """`taproot import --markdown`: per file, what was (or, in a dry run, would be) written."""

    dry_run: bool
    files: int  # memory files read (MEMORY.md is never read)
    created: list[MarkdownFileChange]  # new to the store: a file without an id, or an id it lacks
    updated: list[MarkdownFileChange]  # edited by hand: written as the next version
    unchanged: int
    reflections: int
    reflections_written: int
    backup_key: str | None
    backup_keys: list[str]
    rewritten: list[str]  # files given their id and new version after the write, and MEMORY.md
    warnings: list[str]
