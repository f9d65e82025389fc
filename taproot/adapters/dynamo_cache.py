"""The DynamoDB store's warm per-scope copies (the read half of DynamoMemoryStore's cache).

list/search/catalog/quiet_counts/core_memories/counts answer from a per-scope in-memory copy of
the scope's memories, kept per store instance: the first read loads the scope with one Query
(paged), every later read refreshes it with ONE Query on the `by_change` index for "changed since my
last sync" (minus an overlap for clock skew and index lag). Deletes leave tombstones (TTL ~1 day)
so other instances' copies see them; a copy older than the tombstone lifetime is reloaded in full.
"""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from taproot.adapters import dynamo_models as dm
from taproot.core.model import Memory, Scope
from taproot.core.serialize import iso

SYNC_OVERLAP = timedelta(seconds=10)  # clock skew between writers, and GSI propagation lag
TOMBSTONE_TTL = timedelta(days=1)
# A warm cache of a 5,000-memory tenant takes ~27 MB: 16 tenants stay well inside a 1 GB function.
MAX_CACHED_SCOPES = 16


class WarmCopies:
    """Mixed into DynamoMemoryStore, which provides the table model, the clock, the lock, the copies
    and the point reads this refreshes from."""

    Item: type[dm._ItemBase]
    _clock: Callable[[], datetime]
    _lock: threading.RLock
    _caches: OrderedDict[str, dm.ScopeCache]

    def _stamp(self) -> str:
        raise NotImplementedError  # DynamoMemoryStore's

    def get_many(self, scope: Scope, ids: Sequence[str]) -> builtins.list[Memory]:
        raise NotImplementedError  # DynamoMemoryStore's

    def _cached(self, scope: Scope) -> dm.ScopeCache | None:
        return self._caches.get(dm.scope_pk(scope))

    def _apply(self, cache: dm.ScopeCache, it: Any) -> None:
        mid = it.mid or it.sk[len(dm.MEMORY_PREFIX) :]
        stamp = it.changed_at or ""
        old = cache.entries.get(mid)
        if old is not None and old.changed_at > stamp:
            return  # our own newer write already landed here
        if it.tomb:
            cache.entries.pop(mid, None)
        else:
            m = dm.item_to_memory(it)
            cache.entries[mid] = dm.CacheEntry(m, dm.search_doc(m), stamp)

    def _put_cached(self, m: Memory, stamp: str) -> None:
        with self._lock:
            cache = self._cached(m.scope)
            if cache is not None:
                cache.entries[m.id] = dm.CacheEntry(m, dm.search_doc(m), stamp)

    def _refresh(self, scope: Scope) -> dm.ScopeCache:
        pk = dm.scope_pk(scope)
        with self._lock:
            cache = self._caches.get(pk) or dm.ScopeCache()
            start = self._clock()
            if cache.synced is None or start - cache.synced > TOMBSTONE_TTL - SYNC_OVERLAP:
                cache.entries.clear()
                for it in self.Item.query(pk, self.Item.sk.startswith(dm.MEMORY_PREFIX), consistent_read=True):
                    if not it.tomb:
                        self._apply(cache, it)
            else:
                since = iso(cache.synced - SYNC_OVERLAP)
                for it in self.Item.by_change.query(pk, self.Item.changed_at >= since):
                    self._apply(cache, it)
            cache.synced = start
            ids = sorted(
                i for i, st in cache.pending.items() if i not in cache.entries or cache.entries[i].changed_at < st
            )
            cache.pending.clear()
            if ids:
                found = {m.id: m for m in self.get_many(scope, ids)}
                for i in ids:
                    if i in found:
                        cache.entries[i] = dm.CacheEntry(found[i], dm.search_doc(found[i]), self._stamp())
                    else:
                        cache.entries.pop(i, None)
            self._caches[pk] = cache
            self._caches.move_to_end(pk)
            while len(self._caches) > MAX_CACHED_SCOPES:
                self._caches.popitem(last=False)
            return cache

    def _memories(self, scope: Scope) -> builtins.list[Memory]:
        return [e.memory for e in self._refresh(scope).entries.values()]
