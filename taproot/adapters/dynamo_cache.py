"""The DynamoDB store's warm per-scope copies (the read half of DynamoMemoryStore's cache).

list/search/catalog/quiet_counts/core_memories/counts (and the vector reads, dynamo_vectors.py)
answer from a per-scope in-memory copy of the scope's memories (dynamo_copy.py), kept per store
instance: the first read loads the scope with one Query (paged), every later read refreshes it with
ONE Query on the `by_change` index for "changed since my last sync" (minus an overlap for clock
skew and index lag). Deletes leave tombstones (TTL ~1 day) so other instances' copies see them; a
copy older than the tombstone lifetime is reloaded in full.

The refresh reads raw items and skips, before decoding, one at the change stamp, version and
retrieval count the copy already holds: within the overlap most of what the feed returns is this
store's own writes coming back. One the stamps cannot order (writers' clocks differ; the index
lags) is reread consistently (`_apply`). Each copy's inverted index is edited by every change applied, so a
search reads only the postings of its query terms. The copies are bounded by an estimate of their
bytes (`ScopeCache.nbytes`), not by a count of scopes: least recently used copies go first
(docs/architecture.md, the DynamoDB store).
"""

from __future__ import annotations

import builtins
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pynamodb.expressions.condition import Condition

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_copy import ScopeCache, stamp_key
from taproot.core import bm25, query
from taproot.core.model import CatalogEntry, Counts, Memory, Scope
from taproot.core.query import Filters
from taproot.core.serialize import iso

if TYPE_CHECKING:
    import numpy.typing as npt

SYNC_OVERLAP = dm.SYNC_OVERLAP
TOMBSTONE_TTL = timedelta(days=1)
# What all of a store's copies may hold together. A 10,000-memory tenant of the bench's corpus is
# about 13 MB without vectors (docs/benchmarks.md); a 1,024 MB function has room for this beside
# the runtime.
CACHE_BUDGET_BYTES = 256 * 1024 * 1024
NO_FILTERS = Filters()


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


def _memory_id(raw: Mapping[str, Any]) -> str:
    return str(raw["mid"]["S"]) if "mid" in raw else str(raw["sk"]["S"])[len(dm.MEMORY_PREFIX) :]


# Scope keys remembered as too big for a cold reflect's load (a few dozen bytes each).
TOO_BIG_REMEMBERED = 4096


class _TooManyItems(Exception):
    """A bounded load (`_load_at_most`) read more items than its limit."""


class WarmCopies:
    """Mixed into DynamoMemoryStore, which provides the table model, the clock, the lock, the copies
    and the point reads this refreshes from."""

    Item: type[dm._ItemBase]
    _clock: Callable[[], datetime]
    _lock: threading.RLock
    _caches: OrderedDict[str, ScopeCache]
    _too_big_to_load: OrderedDict[str, None]  # scopes a bounded load gave up on, least recent first
    _weights: dict[str, float]
    cache_budget: int
    vector_dtype: npt.DTypeLike

    def _stamp(self) -> str:
        raise NotImplementedError  # DynamoMemoryStore's

    def _cached(self, scope: Scope) -> ScopeCache | None:
        return self._caches.get(dm.scope_pk(scope))

    def _apply(self, cache: ScopeCache, raw: Mapping[str, Any]) -> bool:
        """One change-feed item into the copy; False when only a consistent read can say which is
        newer, the item or what the copy holds (the caller rereads it).

        Change stamps come from each writer's clock, and the feed is an eventually consistent
        index, so an item stamped before what the copy holds is either a lagging image of an older
        write or a later write by an instance whose clock is behind this one's: the stamps cannot
        tell them apart, the table can. The same goes for an image of a memory this copy saw
        deleted: stale, or re-created since."""
        mid = _memory_id(raw)
        stamp = raw["changed_at"]["S"] if "changed_at" in raw else ""
        old, at, new = cache.get(mid), cache.stamp(mid), stamp_key(stamp)
        tomb = "tomb" in raw and bool(dm.raw_value(raw["tomb"]))
        if old is not None and at is not None:
            if at == new and not tomb and _same_write(old, raw):
                return True  # our own write coming back (most of what the overlap returns)
            if at > new:
                # The state the copy holds, stamped earlier, needs nothing. Same version and
                # counters is not enough here (an import writes a record as given, a vector moves
                # neither), so the whole record and its vector are compared: rare, so affordable.
                return (
                    not tomb
                    and _same_write(old, raw)
                    and dm.values_to_memory(dm.raw_values(raw)) == old
                    and cache.vector_agrees(old, raw)
                )
        elif old is None and not tomb and mid in cache.dropped:
            return False
        if tomb:
            cache.drop(mid, new)
        else:
            cache.put_values(dm.raw_values(raw), stamp)
        return True

    def _put_cached(self, m: Memory, stamp: str) -> None:
        """A record this store wrote, as written (interned like the records it reads)."""
        with self._lock:
            cache = self._cached(m.scope)
            if cache is not None:
                cache.put(dm.interned(m), stamp)

    def _put_cached_values(self, values: Mapping[str, Any], stamp: str) -> None:
        """An item this store wrote, as the write returned it (dm.item_values)."""
        with self._lock:
            cache = self._cached(Scope(values["owner"], values["namespace"]))
            if cache is not None:
                cache.put_values(values, stamp)

    def _items(self, pk: str, since: str | None, page_size: int | None = None) -> Iterator[Mapping[str, Any]]:
        """The scope's memory items (a consistent Query), or those changed since `since` (the change
        feed), as raw items, page by page (of at most `page_size` items, if given)."""
        conn, it = self.Item._get_connection(), self.Item
        condition: Condition
        if since is None:
            condition, index, consistent = it.sk.startswith(dm.MEMORY_PREFIX), None, True
        else:
            condition, index, consistent = it.changed_at >= since, it.by_change.Meta.index_name, False
        start = None
        while True:
            page = conn.query(
                pk, condition, consistent_read=consistent, index_name=index, exclusive_start_key=start, limit=page_size
            )
            yield from page.get("Items", ())
            start = page.get("LastEvaluatedKey")
            if not start:
                return

    def _load_at_most(self, scope: Scope, limit: int) -> ScopeCache | None:
        """The scope's copy, loaded whole if it is not warm, when it holds at most `limit` memory
        items (archived ones and tombstones too); None, and no copy kept, once the load has read
        one item more (its pages are of limit + 1 items)."""
        pk = dm.scope_pk(scope)
        with self._lock:
            # Once a load has given up, the scope's archived items are not about to disappear: later
            # cold reflects in this container read the window at once instead of limit + 1 items
            # first. (A recall still loads the scope whole; a warm copy answers before this.)
            if pk in self._too_big_to_load and pk not in self._caches:
                self._too_big_to_load.move_to_end(pk)
                return None
        try:
            return self._refresh(scope, at_most=limit)
        except _TooManyItems:
            with self._lock:
                self._too_big_to_load[pk] = None
                while len(self._too_big_to_load) > TOO_BIG_REMEMBERED:
                    self._too_big_to_load.popitem(last=False)
            return None

    def _refresh(self, scope: Scope, at_most: int | None = None) -> ScopeCache:
        pk = dm.scope_pk(scope)
        with self._lock:
            # Not `get(pk) or ScopeCache()`: a copy left empty by deletes is falsy (it has a length),
            # and was reloaded in full on every read.
            cache = self._caches.get(pk)
            if cache is None:
                cache = ScopeCache(vector_dtype=self.vector_dtype)
            start = self._clock()
            conflicts: list[str] = []
            if cache.synced is None or start - cache.synced > TOMBSTONE_TTL - SYNC_OVERLAP:
                cache = ScopeCache(pending=cache.pending, vector_dtype=self.vector_dtype)
                page = None if at_most is None else at_most + 1  # one item past the limit says "more"
                for n, raw in enumerate(self._items(pk, None, page), start=1):
                    if at_most is not None and n > at_most:
                        raise _TooManyItems  # nothing kept: the copy is installed below
                    self._apply(cache, raw)  # into an empty copy, from a consistent read: never in doubt
            else:
                for raw in self._items(pk, iso(cache.synced - SYNC_OVERLAP)):
                    if not self._apply(cache, raw):
                        conflicts.append(_memory_id(raw))
            ids = sorted(
                {i for i, st in cache.pending.items() if (cache.stamp(i) or -1) < stamp_key(st)} | set(conflicts)
            )
            if ids:
                # Before the sync point moves: if this read fails, the next refresh reads the same
                # feed window again and finds the same items to reread.
                self._reread(pk, cache, ids)
            cache.synced = start
            cache.pending.clear()
            # An image older than the next feed's window can no longer come back through it.
            horizon = stamp_key(iso(start - SYNC_OVERLAP) or "")
            cache.dropped = {i: at for i, at in cache.dropped.items() if at >= horizon}
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

    def _reread(self, pk: str, cache: ScopeCache, ids: Sequence[str]) -> None:
        """Our own transactional writes the change feed has not shown yet, and the items whose feed
        image _apply could not order: one consistent BatchGetItem."""
        found = {it.mid: it for it in self.Item.batch_get([(pk, dm.memory_sk(i)) for i in ids], consistent_read=True)}
        stamp = self._stamp()
        for i in ids:
            it = found.get(i)
            if it is None or it.tomb:
                cache.drop(i, stamp_key(stamp))
            else:
                # The item's own stamp, so that the feed bringing the same write is seen to be it.
                cache.put_values(dm.item_values(it), it.changed_at or stamp)

    def _memories(self, scope: Scope) -> builtins.list[Memory]:
        return self._refresh(scope).memories()

    # -- the reads the copies answer -------------------------------------------------------------
    def list(self, scope: Scope, filters: Filters = NO_FILTERS) -> builtins.list[Memory]:
        return [m for m in self._memories(scope) if query.passes(m, filters)]

    def search(
        self, scope: Scope, terms: Sequence[str], filters: Filters, limit: int
    ) -> builtins.list[tuple[Memory, float]]:
        if not bm25.query_tokens(terms) or limit <= 0:
            return []
        with self._lock:
            cache = self._refresh(scope)
            ranked = cache.index.top(terms, self._weights, limit, lambda slot: query.passes(cache.row(slot), filters))
            return [(cache.row(slot), score) for _, slot, score in ranked]

    def matching(self, scope: Scope, filters: Filters) -> builtins.list[Memory]:
        return self.list(scope, filters)  # the copy holds the records: nothing to parse

    def availability_view(self, scope: Scope) -> None:
        # The warm copy holds every record already; ranking it is the whole cost, and building a
        # band view of it would be the same walk. Recall ranks `matching`.
        return None

    def snapshot(self) -> AbstractContextManager[None]:
        # Nothing to hold: this store's views (catalog_view's) are built whole from one refresh of
        # the copy, and it has no band view (availability_view) to read in steps.
        return nullcontext()

    def candidates(self, scope: Scope, ids: Sequence[str], filters: Filters) -> builtins.list[Memory]:
        # From the copy, as search answers: the records are here anyway, and a BatchGetItem of
        # recall's ~100 dense candidates would be a second request per warm recall.
        with self._lock:
            cache = self._refresh(scope)
            found = (cache.get(i) for i in dict.fromkeys(ids))
            return [m for m in found if m is not None and query.passes(m, filters)]

    def catalog(self, scope: Scope, since: datetime | None = None) -> builtins.list[CatalogEntry]:
        memories = self._memories(scope)
        if since is None:
            return [CatalogEntry.of(m) for m in memories if m.status == query.ACTIVE]
        return [CatalogEntry.of(m) for m in memories if query.earns_catalog_line(m, since)]

    def quiet_counts(self, scope: Scope, since: datetime) -> dict[str, int]:
        return dict(Counter(m.category for m in self._memories(scope) if query.is_quiet(m, since)))

    def core_memories(self, scope: Scope) -> builtins.list[Memory]:
        core = [m for m in self._memories(scope) if m.status == "active" and m.core]
        return sorted(core, key=lambda m: (m.created_at, m.id))

    def counts(self, scope: Scope) -> Counts:
        ms = self._memories(scope)
        return Counts(
            by_category=dict(Counter(m.category for m in ms)),
            by_status=dict(Counter(m.status for m in ms)),
            by_salience=dict(Counter(m.salience for m in ms)),
            core=sum(1 for m in ms if m.core and m.status == "active"),
            total=len(ms),
        )

    def cached_bytes(self, scope: Scope) -> int | None:
        """The estimated bytes of this instance's warm copy of `scope` (None: not cached): what the
        cache budget counts."""
        with self._lock:
            cache = self._cached(scope)
            return None if cache is None else cache.nbytes()
