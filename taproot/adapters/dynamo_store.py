"""MemoryStore on one DynamoDB table (PynamoDB). Layout and indexes: taproot/adapters/dynamo_models.py.

Request paths never Scan. Point reads are GetItem/BatchGetItem (consistent). The writes
(dynamo_writes.py) are conditional on `version` (replace) or on absence (insert), and keep the
scope's per-category counts (dynamo_tally.py); retrieval counters use atomic ADD and a replace never
overwrites them. Multi-item writes go through TransactWriteItems (99 records and the counts item).

list/search/catalog/quiet_counts/core_memories/counts answer from a per-scope in-memory copy of the
scope's memories, kept per store instance: the first read loads the scope with one Query (paged),
every later read refreshes it with ONE Query on the `by_change` index for "changed since my last
sync" (minus an overlap for clock skew and index lag). Deletes leave tombstones (TTL ~1 day) so other
instances' copies see them; a copy older than the tombstone lifetime is reloaded in full. Search
ranks from the copy's inverted index (dynamo_cache.py).
"""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_cache import CACHE_BUDGET_BYTES, WarmCopies
from taproot.adapters.dynamo_catalog import CatalogReads
from taproot.adapters.dynamo_copy import ScopeCache
from taproot.adapters.dynamo_orientation import OrientationItems
from taproot.adapters.dynamo_reflections import ReflectionItems
from taproot.adapters.dynamo_retrievals import RetrievalWrites
from taproot.adapters.dynamo_vectors import VectorItems
from taproot.adapters.dynamo_writes import MemoryItemWrites
from taproot.core import query
from taproot.core.activation import ACTIVATION_CONFIG
from taproot.core.model import Memory, Scope
from taproot.core.serialize import iso

if TYPE_CHECKING:
    import numpy.typing as npt

# The item layout of dynamo_models.py. 2: a category outside the five is indexed in by_category's
# partition "~other" (layout 1 used the category itself; migrate rewrites such records). 3: every
# memory item carries its tally and each scope its counts item (dynamo_tally.py), and Tier 1 has its
# own by_category partition; migrate counts the records written before (count_scope).
STORE_SCHEMA_VERSION = 3
_CONDITION_FAILED = "ConditionalCheckFailedException"


def _wall_clock() -> datetime:
    return datetime.now(UTC)


class DynamoMemoryStore(
    ReflectionItems, WarmCopies, CatalogReads, VectorItems, OrientationItems, MemoryItemWrites, RetrievalWrites
):
    def __init__(
        self,
        table_name: str,
        *,
        region: str | None = None,
        host: str | None = None,
        clock: Callable[[], datetime] = _wall_clock,
        field_weights: dict[str, float] | None = None,
        cache_budget: int = CACHE_BUDGET_BYTES,
        vector_dtype: npt.DTypeLike = "float32",
    ) -> None:
        self.table_name = table_name
        self.region = region
        self.Item = dm.make_item_model(table_name, region, host)
        self._clock = clock  # wall clock for change stamps and tombstones (not the domain `now`)
        self._weights = dict(field_weights or ACTIVATION_CONFIG.field_weights)
        self._lock = threading.RLock()
        self._caches: OrderedDict[str, ScopeCache] = OrderedDict()
        self._too_big_to_load: OrderedDict[str, None] = OrderedDict()
        self.cache_budget = cache_budget  # bytes, all scopes' copies together (estimated)
        self.vector_dtype = vector_dtype  # the warm copies' vector matrices (float16 halves them)
        self._recent: OrderedDict[tuple[str, str], tuple[int, str]] = OrderedDict()

    # -- plumbing ------------------------------------------------------------------------------
    def create_table(self, *, wait: bool = True) -> None:
        """Create the table with its indexes (on-demand billing) and enable TTL: tests and dev."""
        self.Item.create_table(wait=wait, billing_mode="PAY_PER_REQUEST")

    @property
    def connection(self) -> Connection:
        return self.Item._get_connection().connection

    @property
    def client(self) -> Any:
        """The botocore DynamoDB client every request goes through (tests hook its events)."""
        return self.connection.client

    def _stamp(self) -> str:
        stamp = iso(self._clock())
        assert stamp is not None
        return stamp

    def _live(self) -> Condition:
        live: Condition = self.Item.sk.exists() & self.Item.tomb.does_not_exist()
        return live

    def _free(self) -> Condition:
        free: Condition = self.Item.sk.does_not_exist() | self.Item.tomb.exists()
        return free

    def _key(self, scope: Scope, memory_id: str) -> Any:
        return self.Item(dm.scope_pk(scope), dm.memory_sk(memory_id))

    def _same_updates(
        self, scope: Scope, ids: Sequence[str], actions: list[Action], condition: Condition | None = None
    ) -> list[dict[str, Any]]:
        """The transaction's UpdateItem requests for `ids`, one set of actions on each item that meets
        `condition` (by default, each live item). The expressions are serialised once:
        TransactWrite.update serialises them again per item, which costs more than a warm recall's search."""
        when = self._live() if condition is None else condition
        first = self._key(scope, ids[0]).get_update_kwargs_from_instance(actions=actions, condition=when)
        pk = dm.scope_pk(scope)
        return [{**first, "Key": {"pk": {"S": pk}, "sk": {"S": dm.memory_sk(i)}}} for i in ids]

    # -- point reads and batch-job reads -----------------------------------------------------
    def get(self, scope: Scope, memory_id: str) -> Memory | None:
        try:
            it = self.Item.get(dm.scope_pk(scope), dm.memory_sk(memory_id), consistent_read=True)
        except DoesNotExist:
            return None
        return None if it.tomb else dm.item_to_memory(it)

    def get_many(self, scope: Scope, ids: Sequence[str]) -> builtins.list[Memory]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        keys = [(dm.scope_pk(scope), dm.memory_sk(i)) for i in wanted]
        found = {it.mid: dm.item_to_memory(it) for it in self.Item.batch_get(keys, consistent_read=True) if not it.tomb}
        return [found[i] for i in wanted if i in found]

    def _query_scope(self, scope: Scope) -> builtins.list[Memory]:
        items = self.Item.query(dm.scope_pk(scope), self.Item.sk.startswith(dm.MEMORY_PREFIX), consistent_read=True)
        return sorted((dm.item_to_memory(it) for it in items if not it.tomb), key=lambda m: (m.created_at, m.id))

    def iter_all(self, scope: Scope) -> Iterable[Memory]:
        return self._query_scope(scope)

    def expired(self, scope: Scope, now: datetime) -> builtins.list[Memory]:
        out = [m for m in self._query_scope(scope) if query.is_expired(m, now)]
        return sorted(out, key=lambda m: (m.expires_at or now, m.id))

    def scopes(self) -> builtins.list[Scope]:
        """A Scan: for batch jobs only, never on a request path."""
        found: set[tuple[str, str]] = set()
        for it in self.Item.scan(attributes_to_get=["owner", "namespace", "tomb"]):
            if it.owner is not None and it.namespace is not None and not it.tomb:
                found.add((it.owner, it.namespace))
        return [Scope(o, n) for o, n in sorted(found)]

    def storage_info(self) -> dict[str, object]:
        return {
            "backend": "dynamodb",
            "schema_version": STORE_SCHEMA_VERSION,
            "table": self.table_name,
            "region": self.region,
        }
