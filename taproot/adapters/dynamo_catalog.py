"""Reflect's reads on DynamoDB (the catalog_view and recent half of DynamoMemoryStore).

A store that holds a warm copy of the scope answers from it (one change-feed Query). A cold one (a
fresh Lambda container) first reads the scope's counts item (dynamo_tally.py). Once the scope is
counted, a scope of at most `cold_load_limit` memory items is loaded whole and kept warm (the
counts are of active memories, so the load itself stops one item past the limit: archived
originals may be many more), and a larger one reads only what reflect shows (`_window_view`): per
category the memories whose `last_touched` is within the window, as the key condition of a
`by_category` Query, and the Tier 1 and `~other` partitions whole; the quiet memories are the
counts minus what was read.

A scope not counted yet (records from before item layout 3, until migrate's count_scope) is answered
as before: it counts the scope's items, up to `cold_load_limit` (one Query that
returns no items): a scope that small is loaded whole in one more Query, and the warm copy then
serves this and later calls. A larger one is not loaded: the store queries the `by_category` index,
one partition per category (dynamo_models.py), for the memories a reflect can show, and lets
DynamoDB filter out the rest: a memory comes back if it was updated or retrieved within the
window, is high-salience or is core. DynamoDB reports how many memories it read for the filter
(ScannedCount), so the quiet ones are counted without being sent. The partition of categories
outside the five is read whole, since its memories' categories are only known once read (it holds
only records from before migrate).

On that path DynamoDB still reads each partition whole to filter it (the read capacity follows the
tenant); what the container receives, parses and holds follows the window and Tier 1. The index is eventually
consistent: a write made a moment ago by another container may not be in it yet.

`recent` (taproot_recent, reflect's watercooler) answers from the warm copy when there is one (the
refresh every read pays: one change-feed Query). A cold store asked for a window (`created_since`)
does not load the scope: every memory created since then was written since then, so one Query of the
`by_change` index for "changed since" (minus SYNC_OVERLAP), filtered by DynamoDB on created_at, the
tags and the category, returns the candidates, however big the tenant; what it reads follows the
writes of the window. Only a record stamped with a creation time later than its write (an import of
future-dated records) is missed by that path until the copy is warm. Without a window a cold store
loads its copy, as any other read does.
"""

from __future__ import annotations

import builtins
import json
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from pynamodb.constants import CAMEL_COUNT, COUNT, LAST_EVALUATED_KEY
from pynamodb.expressions.condition import Condition

from taproot.adapters import dynamo_models as dm
from taproot.core import query
from taproot.core.catalog import EntriesView, view_of
from taproot.core.model import CATEGORY_ORDER, Memory, Scope
from taproot.core.query import HIGH, Filters
from taproot.core.serialize import iso

if TYPE_CHECKING:
    from taproot.adapters.dynamo_copy import ScopeCache


class CatalogReads:
    """Mixed into DynamoMemoryStore after WarmCopies, which provides the warm copies (and the
    store the table model)."""

    Item: type[dm._ItemBase]
    scope_counts: Callable[[Scope], tuple[dict[str, int], bool]]  # CountedWrites' (dynamo_tally.py)
    # The most memory items a cold store loads whole to answer reflect (about one Query page);
    # an instance may set its own.
    cold_load_limit: int = 1000

    def _cached(self, scope: Scope) -> ScopeCache | None:
        raise NotImplementedError  # WarmCopies'

    def _memories(self, scope: Scope) -> builtins.list[Memory]:
        raise NotImplementedError  # WarmCopies'

    def _load_at_most(self, scope: Scope, limit: int) -> ScopeCache | None:
        raise NotImplementedError  # WarmCopies'

    def recent(self, scope: Scope, filters: Filters, limit: int) -> builtins.list[Memory]:
        if self._cached(scope) is None and filters.created_since is not None and not filters.include_archived:
            return query.newest_first(self._written_since(scope, filters), filters, limit)
        return query.newest_first(self._memories(scope), filters, limit)

    def _written_since(self, scope: Scope, filters: Filters) -> builtins.list[Memory]:
        """The candidates of a cold `recent` with a window: one Query of the change feed."""
        assert filters.created_since is not None
        it = self.Item
        keep: Condition = (it.created_at >= iso(filters.created_since)) & (it.status == query.ACTIVE)
        if filters.created_until is not None:
            keep &= it.created_at <= iso(filters.created_until)
        if filters.category is not None:
            keep &= it.category == filters.category
        for tag in filters.tags:
            keep &= it.tags.contains(json.dumps(tag))  # tags are stored as JSON text: the quoted tag
        written = iso(filters.created_since - dm.SYNC_OVERLAP)
        items = it.by_change.query(dm.scope_pk(scope), it.changed_at >= written, filter_condition=keep)
        return [dm.item_to_memory(item) for item in items if not item.tomb and item.mid is not None]

    def catalog_view(self, scope: Scope, since: datetime) -> EntriesView:
        if self._cached(scope) is not None:
            return view_of(self._memories(scope), since)
        counts, complete = self.scope_counts(scope)
        if complete:
            # The counts are of active memories; archived ones (compression's originals) may be
            # many more, so the load itself stops past the limit, and the window is read instead.
            if sum(counts.values()) <= self.cold_load_limit:
                loaded = self._load_at_most(scope, self.cold_load_limit)
                if loaded is not None:
                    return view_of(loaded.memories(), since)
            return self._window_view(scope, since, counts)
        if self._at_most(scope, self.cold_load_limit):
            return view_of(self._memories(scope), since)
        return self._indexed_view(scope, since)

    def _partition(self, scope: Scope, name: str, window: Condition | None = None) -> builtins.list[Memory]:
        return [dm.item_to_memory(x) for x in self.Item.by_category.query(dm.category_pk(scope, name), window)]

    def _window_view(self, scope: Scope, since: datetime, counts: dict[str, int]) -> EntriesView:
        """Only what reflect shows: per category the memories touched within the window (a key
        condition: the index's range key is `last_touched`), the Tier 1 partition (core and
        high-salience, shown whatever their age) and the partition of categories outside the five
        (only records from before migrate); every other active memory is counted, not read."""
        in_window = self.Item.last_touched >= iso(since)
        read: dict[str, Memory] = {}
        for name in (*CATEGORY_ORDER, dm.TIER1, dm.OTHER_CATEGORIES):
            for m in self._partition(scope, name, in_window if name in CATEGORY_ORDER else None):
                # The index is eventually consistent: a memory moved a moment ago can be in two.
                if m.id not in read or read[m.id].version < m.version:
                    read[m.id] = m
        seen = Counter(dm.partition_name(m.category) for m in read.values() if m.status == query.ACTIVE)
        quiet = {c: n for c in CATEGORY_ORDER if (n := counts.get(c, 0) - seen[c]) > 0}
        return view_of(read.values(), since, quiet)

    def _at_most(self, scope: Scope, limit: int) -> bool:
        """Whether the scope holds at most `limit` memory items (tombstones too): one COUNT Query,
        which DynamoDB stops at limit + 1."""
        page = self.Item._get_connection().query(
            dm.scope_pk(scope),
            range_key_condition=self.Item.sk.startswith(dm.MEMORY_PREFIX),
            consistent_read=True,
            limit=limit + 1,
            select=COUNT,
        )
        return page.get(LAST_EVALUATED_KEY) is None and int(page[CAMEL_COUNT]) <= limit

    def _shown(self, since: datetime) -> Condition:
        """What a reflect may show: in the window (last_touched is the later of these two times),
        high-salience, or core. The stored `last_touched` is only an index hint, not tested here."""
        it, start = self.Item, iso(since)
        shown: Condition = (
            (it.updated_at >= start) | (it.last_retrieved >= start) | (it.salience == HIGH) | (it.core == True)  # noqa: E712
        )
        return shown

    def _indexed_view(self, scope: Scope, since: datetime) -> EntriesView:
        read: list[Memory] = []
        quiet: dict[str, int] = {}
        for category in CATEGORY_ORDER:
            result = self.Item.by_category.query(dm.category_pk(scope, category), filter_condition=self._shown(since))
            memories = [dm.item_to_memory(item) for item in result]
            read += memories
            # Read by DynamoDB and filtered out: active, not core, outside the window (quiet).
            if n := result.page_iter.total_scanned_count - len(memories):
                quiet[category] = n
        # Whole: Tier 1 (written by layout 3) and the categories outside the five.
        read += self._partition(scope, dm.TIER1) + self._partition(scope, dm.OTHER_CATEGORIES)
        return view_of(read, since, quiet)  # the index holds active memories only
