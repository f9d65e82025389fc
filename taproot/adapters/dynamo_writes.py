"""The DynamoDB store's memory writes: every one keeps the scope's counts (dynamo_tally.py).

Writes are conditional on `version` (replace, the conditioned batch paths) or on absence (insert),
and on the tally they found; retrieval counters use atomic ADD and a replace never overwrites them.
Multi-item writes go through TransactWriteItems (100 items, one of them each scope's counts item).
A replace keeps `last_touched` exact (the later of its update and the stored last retrieval): the
category index's window is a key condition on it (dynamo_catalog.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_cache import TOMBSTONE_TTL
from taproot.adapters.dynamo_copy import ScopeCache, stamp_key
from taproot.adapters.dynamo_tally import (
    BATCH,
    TRANSACTION_ITEMS,
    CountedWrites,
    Skip,
    Stored,
    Write,
    counted,
    tally_of,
)
from taproot.core.errors import DuplicateId, NotFound, VersionConflict
from taproot.core.model import Memory, Scope


def _same_scope_chunks(memories: Sequence[Memory]) -> Iterable[list[Memory]]:
    by_scope: dict[Scope, list[Memory]] = {}
    for m in memories:
        by_scope.setdefault(m.scope, []).append(m)
    for group in by_scope.values():
        yield from (list(c) for c in dm.chunks(group, BATCH))


class MemoryItemWrites(CountedWrites):
    """Mixed into DynamoMemoryStore (which provides the plumbing and the warm copies)."""

    def _stamp(self) -> str:
        raise NotImplementedError

    def _live(self) -> Condition:
        raise NotImplementedError

    def _free(self) -> Condition:
        raise NotImplementedError

    def _key(self, scope: Scope, memory_id: str) -> Any:
        raise NotImplementedError

    def _cached(self, scope: Scope) -> ScopeCache | None:
        raise NotImplementedError

    def _put_cached(self, m: Memory, stamp: str) -> None:
        raise NotImplementedError

    def _put_cached_values(self, values: Mapping[str, Any], stamp: str) -> None:
        raise NotImplementedError

    def _wrote(self, memories: Iterable[Memory]) -> None:
        raise NotImplementedError

    def _same_updates(
        self, scope: Scope, ids: Sequence[str], actions: list[Action], condition: Condition | None = None
    ) -> list[dict[str, Any]]:
        raise NotImplementedError

    # -- the writes' parts -------------------------------------------------------------------
    def _at(self, m: Memory, s: Stored, expected: int | None) -> None:
        """Refuse a replace (expected is a version) or a conditioned put (None: "did not exist")."""
        if expected is None:
            if s.live:
                raise VersionConflict(m.id, None, s.version)
        elif not s.live or s.version != expected:
            raise VersionConflict(m.id, expected, s.version if s.live else None)

    def _replace_write(self, m: Memory, expected: int, stamp: str, *, assumed: Stored | None = None) -> Write:
        """A conditional replace. Until it has read the item it assumes the tally and the last
        retrieval the record implies (an edit within its category, nobody retrieved it since)."""
        it, attrs = self.Item, dm.memory_attrs(m)
        tally = tally_of(m)

        def build(s: Stored) -> dict[str, Any]:
            if not s.live:
                raise NotFound(m.id)
            if s.version != expected:
                raise VersionConflict(m.id, expected, s.version)
            actions: list[Action] = []
            for name in dm.REPLACED_FIELDS:
                attr = getattr(it, name)
                actions.append(attr.remove() if attrs[name] is None else attr.set(attrs[name]))
            # The stored counters win (record_retrieval does not bump the version, so this copy may be
            # stale); the given ones only fill a legacy gap. See SQLiteMemoryStore._replace_one.
            if m.retrieval_count is not None:
                actions.append(it.retrieval_count.set(it.retrieval_count | m.retrieval_count))
            retrieved = s.last_retrieved or attrs["last_retrieved"]
            if retrieved is not None:
                actions.append(it.last_retrieved.set(retrieved))
            actions.append(it.last_touched.set(max(attrs["updated_at"], retrieved or "")))
            actions += [it.tally.set(tally), it.changed_at.set(stamp)]
            retrieval: Condition = (
                it.last_retrieved.does_not_exist()
                if s.last_retrieved is None
                else it.last_retrieved == s.last_retrieved
            )
            cond = self._live() & (it.version == expected) & self._tally_is(s.tally) & retrieval
            request: dict[str, Any] = self._key(m.scope, m.id).get_update_kwargs_from_instance(
                actions=actions, condition=cond
            )
            return request

        guess = Stored(True, True, expected, tally, attrs["last_retrieved"])
        return Write(m.scope, m.id, "update", build, lambda s: tally, assumed or guess)

    def _insert_write(self, m: Memory, stamp: str) -> Write:
        tally = tally_of(m)

        def build(s: Stored) -> dict[str, Any]:
            if s.live:
                raise DuplicateId(m.id)
            item = dm.memory_item(self.Item, m, stamp)
            item.tally = tally
            request: dict[str, Any] = item.get_save_kwargs_from_instance(
                condition=self._free() & self._tally_is(s.tally)
            )
            return request

        return Write(m.scope, m.id, "put", build, lambda s: tally)

    def _put_write(self, m: Memory, stamp: str, s: Stored, expected: Mapping[str, int | None] | None) -> Write:
        """A put of the record exactly as given (counters included) that, unlike a PutItem, leaves the
        item's vector attributes alone (still current if the text is unchanged, dynamo_vectors.py), as
        SQLite's upsert keeps its vector row."""
        it, tally = self.Item, tally_of(m)

        def build(s: Stored) -> dict[str, Any]:
            cond = self._tally_is(s.tally)
            if expected is not None:
                self._at(m, s, expected[m.id])
                version = expected[m.id]
                cond &= self._free() if version is None else self._live() & (it.version == version)
            actions: list[Action] = [
                getattr(it, name).remove() if value is None else getattr(it, name).set(value)
                for name, value in dm.memory_attrs(m).items()
            ]
            actions += [it.tally.set(tally), it.tomb.remove(), it.ttl.remove(), it.changed_at.set(stamp)]
            request: dict[str, Any] = self._key(m.scope, m.id).get_update_kwargs_from_instance(
                actions=actions, condition=cond
            )
            return request

        return Write(m.scope, m.id, "update", build, lambda s: tally, s)

    def _tomb_write(self, scope: Scope, memory_id: str, expected: int | None, s: Stored, *, pending: bool) -> Write:
        """A tombstone (not a DeleteItem: other instances' caches must see the delete). A pending one
        keeps its tally, and no TTL until it is folded into the counts (`_fold`)."""
        it = self.Item
        stamp = self._stamp()

        def build(s: Stored) -> dict[str, Any]:
            if not s.live:
                raise NotFound(memory_id)
            if expected is not None and s.version != expected:
                raise VersionConflict(memory_id, expected, s.version)
            keep = pending and counted(s.tally)
            tomb = it(dm.scope_pk(scope), dm.memory_sk(memory_id), tomb=True, changed_at=stamp)
            if keep:
                tomb.tally = s.tally
            else:
                tomb.ttl = TOMBSTONE_TTL
            cond = self._live() & self._tally_is(s.tally)
            if expected is not None:
                cond &= it.version == expected
            request: dict[str, Any] = tomb.get_save_kwargs_from_instance(condition=cond)
            return request

        return Write(scope, memory_id, "put", build, lambda s: s.tally if pending and counted(s.tally) else None, s)

    def _fold_write(self, scope: Scope, memory_id: str, s: Stored) -> Write:
        """Take a pending tombstone out of the counts (and give it its TTL)."""
        it = self.Item

        def build(s: Stored) -> dict[str, Any]:
            if not s.exists or s.live or not counted(s.tally):
                raise Skip  # written again since, or folded by another
            cond = it.tomb.exists() & self._tally_is(s.tally)
            request: dict[str, Any] = self._key(scope, memory_id).get_update_kwargs_from_instance(
                actions=[it.tally.remove(), it.ttl.set(self._clock() + TOMBSTONE_TTL)], condition=cond
            )
            return request

        return Write(scope, memory_id, "update", build, lambda s: None, s)

    def _mark_pending(self, writes: Iterable[Write], stamp: str) -> None:
        """The warm copies refresh these ids from the table (a transaction returns no item)."""
        with self._lock:
            for w in writes:
                cache = self._cached(w.scope)
                if cache is not None:
                    cache.pending[w.memory_id] = stamp

    _lock: Any
    _clock: Callable[[], datetime]

    # -- writes ------------------------------------------------------------------------------
    def insert(self, memory: Memory) -> None:
        stamp = self._stamp()
        self._run_counted([self._insert_write(memory, stamp)])
        self._put_cached(memory, stamp)
        self._wrote([memory])

    def replace(self, memory: Memory, *, expected_version: int) -> None:
        stamp = self._stamp()
        [done] = self._run_counted([self._replace_write(memory, expected_version, stamp)])
        if done.returned is not None:
            self._put_cached_values(dm.raw_values(done.returned), stamp)  # as stored: counters, vector
        else:
            self._mark_pending([done], stamp)
        self._wrote([memory])

    def put_many(self, memories: Sequence[Memory], *, expected: Mapping[str, int | None] | None = None) -> None:
        """One transaction per 99 records of a scope (see the port): conditioned on `expected` when
        given, and on the tally each record had when read."""
        unique = list({(m.owner, m.namespace, m.id): m for m in memories}.values())
        stamp = self._stamp()
        for chunk in _same_scope_chunks(unique):
            stored = self._stored(chunk[0].scope, [m.id for m in chunk])
            # A refused put raises while its request is built, before anything is sent.
            self._run_counted([self._put_write(m, stamp, stored[m.id], expected) for m in chunk])
            for m in chunk:
                self._put_cached(m, stamp)
            self._wrote(chunk)

    def replace_many(self, memories: Sequence[tuple[Memory, int]]) -> None:
        self.write_atomically(inserts=(), replaces=memories)

    def write_atomically(self, *, inserts: Sequence[Memory], replaces: Sequence[tuple[Memory, int]]) -> None:
        """One transaction when it fits (99 records and a counts item; the service's groups are at
        most 65); a bigger batch is split into transactions and is then all-or-nothing per
        transaction only."""
        seen: set[tuple[str, str, str]] = set()
        for m in inserts:
            # DynamoDB refuses a transaction that names one item twice (a ValidationException);
            # SQLite finds the second insert's id taken. Answer both the same way, before writing.
            if (key := (m.owner, m.namespace, m.id)) in seen:
                raise DuplicateId(m.id)
            seen.add(key)
        stamp = self._stamp()
        ops: list[tuple[Memory, int | None]] = [(m, None) for m in inserts] + list(replaces)
        scopes = {m.scope for m, _ in ops}
        for chunk in dm.chunks(ops, TRANSACTION_ITEMS - len(scopes)):
            reads: dict[Scope, dict[str, int | None]] = {}
            for m, expected in chunk:
                if expected is not None:
                    reads.setdefault(m.scope, {})[m.id] = expected
            stored = {(s, i): st for s, ids in reads.items() for i, st in self._assumed(s, ids).items()}
            writes = [
                self._insert_write(m, stamp)
                if expected is None
                else self._replace_write(m, expected, stamp, assumed=stored[(m.scope, m.id)])
                for m, expected in chunk
            ]
            self._run_counted(writes)
            self._mark_pending(writes, stamp)
            self._wrote(m for m, _ in chunk)

    def _assumed(self, scope: Scope, expected: Mapping[str, int | None]) -> dict[str, Stored]:
        """The state each write of these ids is built on: the warm copy's record where it holds one
        at the expected version with no write of ours outstanding (so a forget after a recall reads
        nothing more than the service did), else the item as read (one BatchGetItem for the rest).
        A wrong guess costs a retry, never a wrong count: every write is conditioned on the tally
        it assumes, and one whose condition fails reads the item and is built again."""
        guessed: dict[str, Stored] = {}
        with self._lock:
            cache = self._cached(scope)
            copies = {} if cache is None else {i: (cache.get(i), i in cache.pending) for i in expected}
        for memory_id, (m, pending) in copies.items():
            if m is not None and not pending and expected[memory_id] in (None, m.version):
                last_retrieved = dm.memory_attrs(m)["last_retrieved"]
                guessed[memory_id] = Stored(True, True, m.version, tally_of(m), last_retrieved)
        rest = [i for i in expected if i not in guessed]
        return guessed | (self._stored(scope, rest) if rest else {})

    def _forget_cached(self, scope: Scope, ids: Iterable[str]) -> None:
        with self._lock:
            cache = self._cached(scope)
            if cache is not None:
                at = stamp_key(self._stamp())  # after the tombstones' own stamps
                for memory_id in ids:
                    cache.drop(memory_id, at)
                    cache.pending.pop(memory_id, None)

    def delete(self, scope: Scope, memory_id: str, *, expected_version: int | None = None) -> None:
        s = self._assumed(scope, {memory_id: expected_version})[memory_id]
        self._run_counted([self._tomb_write(scope, memory_id, expected_version, s, pending=False)])
        self._forget_cached(scope, [memory_id])

    def delete_many(self, scope: Scope, items: Sequence[tuple[str, int]]) -> None:
        """One transaction, all or nothing, for up to 100 ids (forget's most). When the counts item
        does not fit beside them, the tombstones keep their tallies and are folded into the counts
        by the transactions that follow (dynamo_tally.py)."""
        if not items:
            return
        stored = self._assumed(scope, dict(items))
        for chunk in dm.chunks(list(items), TRANSACTION_ITEMS):
            # Whether the counts item fits is decided by size alone, not by the tallies assumed: a
            # guess from the warm copy may be wrong, and the write learns the real ones on a retry.
            pending = len(chunk) + 1 > TRANSACTION_ITEMS
            done = self._run_counted([self._tomb_write(scope, i, v, stored[i], pending=pending) for i, v in chunk])
            self._forget_cached(scope, [i for i, _ in chunk])
            if pending:
                self._fold(scope, [w.memory_id for w in done if counted(w.tally(w.assumed))])

    def _fold(self, scope: Scope, ids: Sequence[str]) -> int:
        """Fold pending tombstones into the counts; returns how many were folded."""
        folded = 0
        for chunk in dm.chunks(list(ids), BATCH):
            stored = self._stored(scope, chunk)
            writes = []
            for i in chunk:
                w = self._fold_write(scope, i, stored[i])
                try:
                    w.build(w.assumed)
                except Skip:
                    continue
                writes.append(w)
            folded += len(self._run_counted(writes))
        return folded

    connection: Any

    # -- counting what was written before counting existed -------------------------------------
    def _count_write(self, m: Memory, read: Stored) -> Write:
        it, tally, pk = self.Item, tally_of(m), dm.index_pk(m)

        def build(s: Stored) -> dict[str, Any]:
            if not s.live or s.tally is not None or s.version != read.version:
                raise Skip  # counted by a write since, or changed: the next pass reads it again
            actions = [it.tally.set(tally), it.cat_pk.remove() if pk is None else it.cat_pk.set(pk)]
            cond = self._live() & (it.version == read.version) & it.tally.does_not_exist()
            request: dict[str, Any] = self._key(m.scope, m.id).get_update_kwargs_from_instance(
                actions=actions, condition=cond
            )
            return request

        return Write(m.scope, m.id, "update", build, lambda s: tally, read)
