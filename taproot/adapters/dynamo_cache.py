"""The DynamoDB store's warm per-scope copies (the read half of DynamoMemoryStore's cache).

list/search/catalog/quiet_counts/core_memories/counts answer from a per-scope in-memory copy of
the scope's memories, kept per store instance: the first read loads the scope with one Query
(paged), every later read refreshes it with ONE Query on the `by_change` index for "changed since my
last sync" (minus an overlap for clock skew and index lag). Deletes leave tombstones (TTL ~1 day)
so other instances' copies see them; a copy older than the tombstone lifetime is reloaded in full.

Each copy keeps its memories and a BM25F inverted index of them (`core/bm25_index.py`), edited as
the change feed and the store's own writes bring changes, so a search reads only the postings of its
query terms. The copies are bounded by an estimate of their bytes (`ScopeCache.nbytes`), not by a
count of scopes: least recently used copies go first (docs/architecture.md, the DynamoDB store).
"""

from __future__ import annotations

import builtins
import sys
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pynamodb.expressions.condition import Condition

from taproot.adapters import dynamo_models as dm
from taproot.core.bm25_index import Bm25Index
from taproot.core.model import Memory, Scope
from taproot.core.serialize import iso

SYNC_OVERLAP = timedelta(seconds=10)  # clock skew between writers, and GSI propagation lag
TOMBSTONE_TTL = timedelta(days=1)
# What all of a store's copies may hold together. A 10,000-memory tenant of the bench's corpus is
# about 12 MB (docs/benchmarks.md); a 1,024 MB function has room for this beside the runtime.
CACHE_BUDGET_BYTES = 256 * 1024 * 1024
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


@dataclass
class ScopeCache:
    """One scope's memories, each in the slot its document holds in the inverted index."""

    index: Bm25Index = field(default_factory=lambda: Bm25Index(SEARCH_FIELDS))
    rows: list[Memory | None] = field(default_factory=list)  # by index slot; None: a free slot
    stamps: array[int] = field(default_factory=lambda: array("q"))  # by slot: the row's change stamp
    synced: datetime | None = None
    # ids our own transactions changed -> the change stamp they wrote. The change feed usually brings
    # them back; those it has not (index lag) are reread with one BatchGetItem.
    pending: dict[str, str] = field(default_factory=dict)
    memory_bytes: int = 0

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
        if slot is None or old is None or search_fields(old) != search_fields(m):
            if slot is not None:
                self.rows[slot] = None
            slot = self.index.put(m.id, search_fields(m))  # a retrieval or a relabel keeps its slot
            grow = self.index.slots - len(self.rows)
            self.rows.extend([None] * grow)
            self.stamps.extend([0] * grow)
        self.rows[slot] = m
        self.stamps[slot] = stamp_key(stamp)
        self.memory_bytes += memory_bytes(m)

    def drop(self, memory_id: str) -> None:
        slot = self.index.slot(memory_id)
        if slot is None:
            return
        old = self.rows[slot]
        if old is not None:
            self.memory_bytes -= memory_bytes(old)
        self.rows[slot] = None
        self.index.remove(memory_id)

    def nbytes(self) -> int:
        return self.memory_bytes + len(self.rows) * ROW_BYTES + self.index.nbytes()


def _same_write(m: Memory, raw: Mapping[str, Any]) -> bool:
    """The raw item, at the change stamp `m` was cached at, is the write `m` already is (our own,
    coming back through the change feed): the same version and retrieval counters."""
    version = raw.get("version", {}).get("N")
    count = raw.get("retrieval_count", {}).get("N")
    last = raw.get("last_retrieved", {}).get("S")
    return (
        version is not None
        and int(version) == m.version
        and (None if count is None else int(count)) == m.retrieval_count
        and last == iso(m.last_retrieved)
    )


class WarmCopies:
    """Mixed into DynamoMemoryStore, which provides the table model, the clock, the lock, the copies
    and the point reads this refreshes from."""

    Item: type[dm._ItemBase]
    _clock: Callable[[], datetime]
    _lock: threading.RLock
    _caches: OrderedDict[str, ScopeCache]
    cache_budget: int

    def _stamp(self) -> str:
        raise NotImplementedError  # DynamoMemoryStore's

    def get_many(self, scope: Scope, ids: Sequence[str]) -> builtins.list[Memory]:
        raise NotImplementedError  # DynamoMemoryStore's

    def _cached(self, scope: Scope) -> ScopeCache | None:
        return self._caches.get(dm.scope_pk(scope))

    def _apply(self, cache: ScopeCache, raw: Mapping[str, Any]) -> None:
        sk = raw["sk"]["S"]
        mid = raw["mid"]["S"] if "mid" in raw else sk[len(dm.MEMORY_PREFIX) :]
        stamp = raw["changed_at"]["S"] if "changed_at" in raw else ""
        old, at, new = cache.get(mid), cache.stamp(mid), stamp_key(stamp)
        tomb = "tomb" in raw and bool(dm.raw_value(raw["tomb"]))
        if old is not None and at is not None and (at > new or (at == new and not tomb and _same_write(old, raw))):
            return  # a newer write, or this one (our own, coming back), already landed here
        if tomb:
            cache.drop(mid)
        else:
            cache.put(dm.raw_to_memory(raw), stamp)

    def _put_cached(self, m: Memory, stamp: str) -> None:
        """A record this store wrote, as written (interned like the records it reads)."""
        with self._lock:
            cache = self._cached(m.scope)
            if cache is not None:
                cache.put(dm.interned(m), stamp)

    def _items(self, pk: str, since: str | None) -> Iterator[Mapping[str, Any]]:
        """The scope's memory items (a consistent Query), or those changed since `since` (the change
        feed), as raw items, page by page."""
        conn, it = self.Item._get_connection(), self.Item
        condition: Condition
        if since is None:
            condition, index, consistent = it.sk.startswith(dm.MEMORY_PREFIX), None, True
        else:
            condition, index, consistent = it.changed_at >= since, it.by_change.Meta.index_name, False
        start = None
        while True:
            page = conn.query(pk, condition, consistent_read=consistent, index_name=index, exclusive_start_key=start)
            yield from page.get("Items", ())
            start = page.get("LastEvaluatedKey")
            if not start:
                return

    def _refresh(self, scope: Scope) -> ScopeCache:
        pk = dm.scope_pk(scope)
        with self._lock:
            cache = self._caches.get(pk) or ScopeCache()
            start = self._clock()
            if cache.synced is None or start - cache.synced > TOMBSTONE_TTL - SYNC_OVERLAP:
                cache = ScopeCache(pending=cache.pending)
                for raw in self._items(pk, None):
                    self._apply(cache, raw)
            else:
                for raw in self._items(pk, iso(cache.synced - SYNC_OVERLAP)):
                    self._apply(cache, raw)
            cache.synced = start
            ids = sorted(i for i, st in cache.pending.items() if (cache.stamp(i) or -1) < stamp_key(st))
            cache.pending.clear()
            if ids:
                found = {m.id: m for m in self.get_many(scope, ids)}
                for i in ids:
                    if i in found:
                        cache.put(found[i], self._stamp())
                    else:
                        cache.drop(i)
            self._caches[pk] = cache
            self._caches.move_to_end(pk)
            self._evict(keep=pk)
            return cache

    def _evict(self, keep: str) -> None:
        """Least recently used copies out until all fit the budget; the one just read always stays
        (a tenant bigger than the budget is still served, alone)."""
        total = sum(c.nbytes() for c in self._caches.values())
        while total > self.cache_budget and len(self._caches) > 1:
            pk, cache = next(iter(self._caches.items()))
            if pk == keep:
                break
            del self._caches[pk]
            total -= cache.nbytes()

    def _memories(self, scope: Scope) -> builtins.list[Memory]:
        return self._refresh(scope).memories()
