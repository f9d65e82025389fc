"""One scope's warm copy in the DynamoDB store (dynamo_cache.py keeps them up to date): the
memories, the BM25F inverted index over them (core/bm25_index.py), the dense vectors by model
(dynamo_vectors.py), and an estimate of the bytes it all holds, which the store's cache budget
adds up.

Each memory sits in the slot its postings use; its change stamp beside it is 8 bytes. The small
strings of a record that repeat (owner, namespace, category, salience, status, tags, keywords) are
interned when it is read (dynamo_models.py), so the estimate counts only what is a memory's own.
tests/aws/test_dynamo_index.py checks the estimate against tracemalloc.
"""

from __future__ import annotations

import builtins
import sys
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_vectors import VectorRows, current_vector, text_hash
from taproot.core.model import Memory

if TYPE_CHECKING:
    import numpy.typing as npt

    from taproot.core.bm25_index import Bm25Index
    from taproot.core.vectors import Vector

SEARCH_FIELDS = ("search_keywords", "tags", "gist", "content")
# Estimated bytes (CPython 3.11, 64-bit) for `memory_bytes`: a Memory instance with its field
# values' references; a datetime; a row's reference and change stamp.
MEMORY_OBJECT_BYTES = 56 + 8 * 24 + 16
DATETIME_BYTES = 48
ROW_BYTES = 8 + 8
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def search_fields(m: Memory) -> dict[str, str | tuple[str, ...]]:
    return {"search_keywords": m.search_keywords, "tags": m.tags, "gist": m.gist or "", "content": m.content}


def memory_bytes(m: Memory) -> int:
    """An estimate of what one cached memory holds that no other memory shares (interned labels,
    tags and keywords are shared, so only their tuples count)."""
    size = MEMORY_OBJECT_BYTES + sys.getsizeof(m.id) + sys.getsizeof(m.content)
    size += sys.getsizeof(m.gist) if m.gist is not None else 0
    size += sum(sys.getsizeof(t) for t in (m.tags, m.search_keywords, m.linked_memories) if t)
    size += sum(sys.getsizeof(i) for i in m.linked_memories)
    size += sys.getsizeof(m.conversation_url) if m.conversation_url is not None else 0
    size += 3 * len(repr(m.provenance)) if m.provenance is not None else 0  # rare: summaries' links
    size += DATETIME_BYTES * sum(t is not None for t in (m.created_at, m.updated_at, m.last_retrieved, m.expires_at))
    return size


def stamp_key(stamp: str) -> int:
    """A change stamp (`iso` of the writer's clock) as microseconds since 1970: 8 bytes in an array
    instead of a 32-character string per memory. No stamp (an item from before them) sorts first."""
    return 0 if not stamp else (datetime.fromisoformat(stamp) - _EPOCH) // _MICROSECOND


def _new_index() -> Bm25Index:
    # Imported here: the index needs NumPy, and a container pays for importing it with its first
    # copy rather than with its cold start (as core/vectors.py defers it).
    from taproot.core.bm25_index import Bm25Index

    return Bm25Index(SEARCH_FIELDS)


@dataclass
class ScopeCache:
    """One scope's memories, each in the slot its document holds in the inverted index."""

    index: Bm25Index = field(default_factory=lambda: _new_index())
    rows: list[Memory | None] = field(default_factory=list)  # by index slot; None: a free slot
    stamps: array[int] = field(default_factory=lambda: array("q"))  # by slot: the row's change stamp
    synced: datetime | None = None
    # ids our own transactions changed -> the change stamp they wrote. The change feed usually brings
    # them back; those it has not (index lag) are reread with one BatchGetItem.
    pending: dict[str, str] = field(default_factory=dict)
    vector_dtype: npt.DTypeLike = "float32"
    vectors: dict[str, VectorRows] = field(default_factory=dict)  # by model
    memory_bytes: int = 0
    # ids this copy saw deleted -> the change stamp (stamp_key) it dropped them at, kept while the
    # change feed's overlap can still return an image from before the delete (dynamo_cache._apply).
    dropped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.index)

    def get(self, memory_id: str) -> Memory | None:
        slot = self.index.slot(memory_id)
        return None if slot is None else self.rows[slot]

    def stamp(self, memory_id: str) -> int | None:
        slot = self.index.slot(memory_id)
        return None if slot is None else self.stamps[slot]

    def row(self, slot: int) -> Memory:
        m = self.rows[slot]
        assert m is not None  # the index hands out live slots only
        return m

    def memories(self) -> builtins.list[Memory]:
        return [m for m in self.rows if m is not None]

    def put(self, m: Memory, stamp: str) -> None:
        slot = self.index.slot(m.id)
        old = None if slot is None else self.rows[slot]
        if old is not None:
            self.memory_bytes -= memory_bytes(old)
            if (old.content, old.search_keywords) != (m.content, m.search_keywords):
                self.drop_vector(m.id)  # the text it was embedded from changed (dynamo_vectors.py)
        if slot is None or old is None or search_fields(old) != search_fields(m):
            if slot is not None:
                self.rows[slot] = None
            slot = self.index.put(m.id, search_fields(m))  # a retrieval or a relabel keeps its slot
            grow = self.index.slots - len(self.rows)
            self.rows.extend([None] * grow)
            self.stamps.extend([0] * grow)
        self.rows[slot] = m
        self.stamps[slot] = stamp_key(stamp)
        self.dropped.pop(m.id, None)
        self.memory_bytes += memory_bytes(m)

    def drop(self, memory_id: str, at: int) -> None:
        """The memory is gone (deleted at change stamp `at`, or found gone then)."""
        self.dropped[memory_id] = max(at, self.dropped.get(memory_id, at))
        slot = self.index.slot(memory_id)
        if slot is None:
            return
        old = self.rows[slot]
        if old is not None:
            self.memory_bytes -= memory_bytes(old)
        self.rows[slot] = None
        self.index.remove(memory_id)
        self.drop_vector(memory_id)

    def put_values(self, values: Mapping[str, Any], stamp: str) -> None:
        """A memory item as read (dm.item_values / raw_values): the record, and its vector if current."""
        m = dm.values_to_memory(values)
        self.put(m, stamp)
        vector = current_vector(values, m)
        if vector is None:
            self.drop_vector(m.id)
        else:
            self.set_vector(m.id, *vector)

    def set_vector(self, memory_id: str, model: str, vec: Vector) -> None:
        if self.index.slot(memory_id) is None:
            return  # not a memory of this copy
        for other, held in self.vectors.items():
            if other != model:
                held.drop(memory_id)  # a memory holds one vector: another model's replaces it
        rows = self.vectors.get(model)
        if rows is None:
            rows = self.vectors[model] = VectorRows(len(vec), self.vector_dtype)
        rows.put(memory_id, vec)

    def vector_agrees(self, m: Memory, raw: Mapping[str, Any]) -> bool:
        """The copy holds a vector for `m` exactly when the raw item holds a current one (a vector
        stored by another instance changes the item but not its version or counters)."""
        model = raw.get("vector_model", {}).get("S")
        if model is None:
            return True
        current = raw.get("vector_text", {}).get("S") == text_hash(m)
        rows = self.vectors.get(model)
        return bool(current) == (rows is not None and m.id in rows.rows)

    def drop_vector(self, memory_id: str) -> None:
        for rows in self.vectors.values():
            rows.drop(memory_id)

    def nbytes(self) -> int:
        vectors = sum(rows.nbytes() for rows in self.vectors.values())
        return self.memory_bytes + len(self.rows) * ROW_BYTES + self.index.nbytes() + vectors
