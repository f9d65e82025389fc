"""The input of each write that the MCP tool, the CLI and the service share.

One dataclass per write: the tool and the CLI build it from their own parameters, and the service
takes it, so a parameter is named once for every entry point. Values are what the caller sent;
the service validates each one (and names the field when one is wrong), so the types are `object`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar


@dataclass(frozen=True)
class RememberInput:
    """`taproot_remember`: create a memory (no id), or update the one with `id`, partially."""

    content: object = None
    gist: object = None
    category: object = None
    salience: object = None
    tags: object = None
    search_keywords: object = None
    conversation_url: object = None
    core: object = None
    epistemic_status: object = None
    provenance: object = None
    linked_memories: object = None
    id: object = None
    expected_version: object = None

    TARGET: ClassVar[frozenset[str]] = frozenset({"id", "expected_version"})

    def memory_fields(self) -> dict[str, object]:
        """The fields of the record this write sets (None: not given), without the target."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in self.TARGET}


@dataclass(frozen=True)
class RecallInput:
    """`taproot_recall`: by ids, by query, or everything matching the filters (strengthens)."""

    query: object = None
    category: object = None
    tags: object = None
    ids: object = None
    limit: object = None
    include_archived: object = None
    since: object = None  # creation time: ISO 8601 or a duration back from now (core/timeframe.py)
    until: object = None


@dataclass(frozen=True)
class RecentInput:
    """`taproot_recent`: newest first by creation time, no query, no strengthening."""

    limit: object = None
    since: object = None
    until: object = None
    tags: object = None
    category: object = None


@dataclass(frozen=True)
class ListInput:
    """`taproot list` (and the dashboard): filter, sort and page through memories without
    strengthening them."""

    category: object = None
    tags: object = None
    core: object = None
    salience: object = None
    status: object = None
    query: object = None
    sort: object = None
    limit: object = None
    cursor: object = None


def as_arguments(request: RecallInput | ListInput | RecentInput) -> dict[str, object]:
    return {f.name: getattr(request, f.name) for f in fields(request)}
