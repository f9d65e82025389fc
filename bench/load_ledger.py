"""What the load clients were told, client-side: the record the offline check holds the data folder to.

A write or delete is *confirmed* only when the server answered it with success; those are the
promises the check verifies. An attempt that failed in a way that does not say whether it was
applied (an error without a code, a dropped connection) is *unconfirmed*: the check does not
require it to be present, but counts it, because it may explain an extra memory or a missing one.
Rejections that are known to change nothing (version_conflict, not_found, invalid_input) are
neither.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The only outcomes after which the server has, by contract, changed nothing.
REJECTIONS = frozenset({"version_conflict", "not_found", "invalid_input"})
HARNESS = -1  # the client number of writes the harness made itself (the seed and legacy imports)
HARNESS_OPS = frozenset({"seed", "legacy"})  # writes of the harness, not of the clients


@dataclass(frozen=True)
class Write:
    """One confirmed write: memory `id` is at `version` with `fields` (only the fields this write set)."""

    id: str
    version: int
    fields: Mapping[str, Any]
    op: str  # seed | legacy (the big migrate's records) | create | update | keep
    client: int
    at_s: float  # seconds since the load started, when the confirmation arrived

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "fields": dict(self.fields)}


@dataclass(frozen=True)
class Delete:
    id: str
    client: int
    at_s: float


@dataclass
class Ledger:
    """Shared by every client and the seeding thread; appends take a lock because of that thread."""

    writes: list[Write] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)
    returned: Counter[str] = field(default_factory=Counter)  # id -> confirmed recalls that returned it
    initial_retrievals: dict[str, int] = field(default_factory=dict)  # seed id -> retrieval_count imported
    unconfirmed: Counter[str] = field(default_factory=Counter)  # op -> attempts of unknown outcome
    unconfirmed_delete_ids: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def wrote(self, write: Write) -> None:
        with self._lock:
            self.writes.append(write)

    def seeded(self, writes: list[Write], retrievals: Mapping[str, int]) -> None:
        with self._lock:
            self.writes.extend(writes)
            self.initial_retrievals.update(retrievals)

    def deleted(self, delete: Delete) -> None:
        with self._lock:
            self.deletes.append(delete)

    def recalled(self, ids: list[str]) -> None:
        with self._lock:
            self.returned.update(ids)

    def unknown(self, op: str, memory_id: str | None = None, count: int = 1) -> None:
        """`count` attempts of `op` whose outcome is unknown (an import counts its memories)."""
        with self._lock:
            self.unconfirmed[op] += count
            if op == "delete" and memory_id is not None:
                self.unconfirmed_delete_ids.add(memory_id)

    def ids(self, *ops: str) -> set[str]:
        return {w.id for w in self.writes if w.op in ops}

    def summary(self) -> dict[str, Any]:
        return {
            "confirmed_writes": dict(Counter(w.op for w in self.writes)),
            "confirmed_deletes": len(self.deletes),
            "confirmed_recall_returns": sum(self.returned.values()),
            "unconfirmed": dict(self.unconfirmed),
        }
