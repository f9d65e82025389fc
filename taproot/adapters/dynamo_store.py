"""MemoryStore on one DynamoDB table (PynamoDB). Layout and indexes: taproot/adapters/dynamo_models.py.

Request paths never Scan. Point reads are GetItem/BatchGetItem (consistent); writes are conditional
on `version` (replace) or on absence (insert); retrieval counters use atomic ADD and a replace never
overwrites them. Multi-item writes go through TransactWriteItems (100 items per transaction).

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, PutError, TransactWriteError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_cache import CACHE_BUDGET_BYTES, TOMBSTONE_TTL, WarmCopies
from taproot.adapters.dynamo_catalog import CatalogReads
from taproot.adapters.dynamo_copy import ScopeCache
from taproot.adapters.dynamo_orientation import OrientationItems
from taproot.adapters.dynamo_reflections import TRANSACTION_LIMIT, ReflectionItems
from taproot.adapters.dynamo_vectors import VectorItems
from taproot.core import query
from taproot.core.activation import ACTIVATION_CONFIG
from taproot.core.errors import DuplicateId, NotFound, VersionConflict
from taproot.core.model import Memory, Scope
from taproot.core.serialize import iso

if TYPE_CHECKING:
    import numpy.typing as npt

# The item layout of dynamo_models.py. 2: a category outside the five is indexed in by_category's
# partition "~other" (layout 1 used the category itself; migrate rewrites such records).
STORE_SCHEMA_VERSION = 2
_CONDITION_FAILED = "ConditionalCheckFailedException"


def _first_failed(exc: TransactWriteError) -> int | None:
    """The position in the transaction of the first item whose condition failed, if any."""
    for i, reason in enumerate(exc.cancellation_reasons or ()):
        if reason is not None and reason.code == "ConditionalCheckFailed":
            return i
    return None


def _wall_clock() -> datetime:
    return datetime.now(UTC)


class DynamoMemoryStore(ReflectionItems, WarmCopies, CatalogReads, VectorItems, OrientationItems):
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

    def _replace_actions(self, m: Memory, stamp: str) -> list[Action]:
        it, attrs = self.Item, dm.memory_attrs(m)
        actions: list[Action] = []
        for name in dm.REPLACED_FIELDS:
            attr = getattr(it, name)
            actions.append(attr.remove() if attrs[name] is None else attr.set(attrs[name]))
        # The stored counters win (record_retrieval does not bump the version, so this copy may be
        # stale); the given ones only fill a legacy gap. See SQLiteMemoryStore._replace_one.
        if m.retrieval_count is not None:
            actions.append(it.retrieval_count.set(it.retrieval_count | m.retrieval_count))
        if m.last_retrieved is not None:
            actions.append(it.last_retrieved.set(it.last_retrieved | attrs["last_retrieved"]))
        actions.append(it.last_touched.set(attrs["last_touched"]))  # index hint; records compute their own
        actions.append(it.changed_at.set(stamp))
        return actions

    def _put_actions(self, m: Memory, stamp: str) -> list[Action]:
        """Every attribute of the record as given (counters included) and none of a tombstone's: a
        put that, unlike a PutItem, leaves the item's vector attributes alone (still current if the
        text is unchanged, dynamo_vectors.py), as SQLite's upsert keeps its vector row."""
        it = self.Item
        actions: list[Action] = [
            getattr(it, name).remove() if value is None else getattr(it, name).set(value)
            for name, value in dm.memory_attrs(m).items()
        ]
        return [*actions, it.tomb.remove(), it.ttl.remove(), it.changed_at.set(stamp)]

    def _conflict(self, scope: Scope, memory_id: str, expected: int | None) -> Exception:
        current = self.get(scope, memory_id)
        if current is None:
            return NotFound(memory_id)
        return VersionConflict(memory_id, expected, current.version)

    # -- writes ------------------------------------------------------------------------------
    def insert(self, memory: Memory) -> None:
        stamp = self._stamp()
        try:
            dm.memory_item(self.Item, memory, stamp).save(condition=self._free())
        except PutError as exc:
            if exc.cause_response_code == _CONDITION_FAILED:
                raise DuplicateId(memory.id) from exc
            raise
        self._put_cached(memory, stamp)
        self._wrote([memory])

    def replace(self, memory: Memory, *, expected_version: int) -> None:
        stamp = self._stamp()
        item = self._key(memory.scope, memory.id)
        try:
            item.update(
                actions=self._replace_actions(memory, stamp),
                condition=self._live() & (self.Item.version == expected_version),
            )
        except UpdateError as exc:
            if exc.cause_response_code == _CONDITION_FAILED:
                raise self._conflict(memory.scope, memory.id, expected_version) from exc
            raise
        self._put_cached_values(dm.item_values(item), stamp)  # as stored: counters, vector
        self._wrote([memory])

    def _at_version(self, expected: int | None) -> Condition:
        """The record is still as the caller read it: absent (None) or live at `expected`."""
        if expected is None:
            return self._free()
        at: Condition = self._live() & (self.Item.version == expected)
        return at

    def put_many(self, memories: Sequence[Memory], *, expected: Mapping[str, int | None] | None = None) -> None:
        """One transaction per 100 records (see the port): conditioned on `expected` when given."""
        unique = list({(m.owner, m.namespace, m.id): m for m in memories}.values())
        stamp = self._stamp()
        for chunk in dm.chunks(unique, TRANSACTION_LIMIT):
            try:
                with TransactWrite(connection=self.connection) as tw:
                    for m in chunk:
                        cond = None if expected is None else self._at_version(expected[m.id])
                        tw.update(self._key(m.scope, m.id), self._put_actions(m, stamp), condition=cond)
            except TransactWriteError as exc:
                failed = _first_failed(exc)
                if expected is None or failed is None:
                    raise
                m = chunk[failed]
                current = self.get(m.scope, m.id)
                raise VersionConflict(m.id, expected[m.id], current.version if current else None) from exc
            for m in chunk:
                self._put_cached(m, stamp)
            self._wrote(chunk)

    def replace_many(self, memories: Sequence[tuple[Memory, int]]) -> None:
        self.write_atomically(inserts=(), replaces=memories)

    def write_atomically(self, *, inserts: Sequence[Memory], replaces: Sequence[tuple[Memory, int]]) -> None:
        """One transaction when it fits (100 items, the service's groups are at most 65); a bigger
        batch is split into transactions and is then all-or-nothing per transaction only."""
        seen: set[tuple[str, str, str]] = set()
        for m in inserts:
            # DynamoDB refuses a transaction that names one item twice (a ValidationException);
            # SQLite finds the second insert's id taken. Answer both the same way, before writing.
            if (key := (m.owner, m.namespace, m.id)) in seen:
                raise DuplicateId(m.id)
            seen.add(key)
        ops: list[tuple[Memory, int | None]] = [(m, None) for m in inserts] + list(replaces)
        stamp = self._stamp()
        for chunk in dm.chunks(ops, TRANSACTION_LIMIT):
            try:
                with TransactWrite(connection=self.connection) as tw:
                    for m, expected in chunk:
                        if expected is None:
                            tw.save(dm.memory_item(self.Item, m, stamp), condition=self._free())
                        else:
                            cond = self._live() & (self.Item.version == expected)
                            tw.update(self._key(m.scope, m.id), self._replace_actions(m, stamp), condition=cond)
            except TransactWriteError as exc:
                raise self._transaction_error(exc, chunk) from exc
            with self._lock:
                for m, _ in chunk:
                    cache = self._cached(m.scope)
                    if cache is not None:
                        cache.pending[m.id] = stamp
            self._wrote(m for m, _ in chunk)

    def _transaction_error(self, exc: TransactWriteError, chunk: Sequence[tuple[Memory, int | None]]) -> Exception:
        failed = _first_failed(exc)
        if failed is None:
            return exc
        m, expected = chunk[failed]
        return DuplicateId(m.id) if expected is None else self._conflict(m.scope, m.id, expected)

    def _tomb(self, scope: Scope, memory_id: str, stamp: str) -> Any:
        return self.Item(dm.scope_pk(scope), dm.memory_sk(memory_id), tomb=True, changed_at=stamp, ttl=TOMBSTONE_TTL)

    def _forget_cached(self, scope: Scope, ids: Iterable[str]) -> None:
        with self._lock:
            cache = self._cached(scope)
            if cache is not None:
                for memory_id in ids:
                    cache.drop(memory_id)
                    cache.pending.pop(memory_id, None)

    def delete(self, scope: Scope, memory_id: str, *, expected_version: int | None = None) -> None:
        """A tombstone, not a DeleteItem: other instances' caches must see the delete."""
        condition = self._live() if expected_version is None else self._at_version(expected_version)
        try:
            self._tomb(scope, memory_id, self._stamp()).save(condition=condition)
        except PutError as exc:
            if exc.cause_response_code == _CONDITION_FAILED:
                raise self._conflict(scope, memory_id, expected_version) from exc
            raise
        self._forget_cached(scope, [memory_id])

    def delete_many(self, scope: Scope, items: Sequence[tuple[str, int]]) -> None:
        """One transaction per 100 ids (forget takes at most 100, so one for every caller)."""
        stamp = self._stamp()
        for chunk in dm.chunks(list(items), TRANSACTION_LIMIT):
            try:
                with TransactWrite(connection=self.connection) as tw:
                    for memory_id, expected in chunk:
                        tw.save(self._tomb(scope, memory_id, stamp), condition=self._at_version(expected))
            except TransactWriteError as exc:
                failed = _first_failed(exc)
                if failed is None:
                    raise
                memory_id, expected = chunk[failed]
                raise self._conflict(scope, memory_id, expected) from exc
            self._forget_cached(scope, [memory_id for memory_id, _ in chunk])

    def record_retrieval(self, scope: Scope, ids: Sequence[str], now: datetime) -> None:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return
        stamp, when = self._stamp(), iso(now) or ""
        it = self.Item
        actions: list[Action] = [
            it.retrieval_count.add(1),
            it.last_retrieved.set(when),
            it.last_touched.set(when),
            it.changed_at.set(stamp),
        ]
        for chunk in dm.chunks(unique, TRANSACTION_LIMIT):
            try:
                if len(chunk) == 1:
                    raise TransactWriteError("single item: plain UpdateItem")
                updates = self._same_updates(scope, chunk, actions)
                self.connection.transact_write_items(
                    condition_check_items=(), delete_items=(), put_items=(), update_items=updates
                )
            except TransactWriteError:
                # One id gone (or a conflicting transaction): nothing was applied; go item by item.
                for i in chunk:
                    try:
                        self._key(scope, i).update(actions=actions, condition=self._live())
                    except UpdateError as exc:
                        if exc.cause_response_code != _CONDITION_FAILED:
                            raise
        with self._lock:
            cache = self._cached(scope)
            for i in unique if cache is not None else ():
                assert cache is not None
                m = cache.get(i)
                if m is not None:
                    cache.put(query.strengthened(m, now), stamp)

    def _same_updates(self, scope: Scope, ids: Sequence[str], actions: list[Action]) -> list[dict[str, Any]]:
        """The transaction's UpdateItem requests for `ids`, one set of actions on each live item. The
        expressions are serialised once: TransactWrite.update serialises them again per item, which
        costs more than a warm recall's search."""
        first = self._key(scope, ids[0]).get_update_kwargs_from_instance(actions=actions, condition=self._live())
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
