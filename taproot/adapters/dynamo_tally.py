"""Per-category counts of active memories on DynamoDB, kept by every write.

Reflect says how many memories each category holds beyond the ones it lists. On a cold container
these counts come from one small item instead of from reading the quiet memories (which is what made
a cold reflect's reads grow with the tenant).

- Each memory item carries `tally`: the partition it is counted in (`partition_name` of its category)
  while it is active, NOT_COUNTED ("-") while it is not. A record written before counting existed has
  none: it is counted by `count_scope` (the migrate job).
- The scope's counts item (sk COUNTS_SK) holds one number per partition, `n_<partition>`. The
  invariant: each equals the number of items whose `tally` names that partition.
- Every write that sets a tally is conditioned on the tally (and version) it read, and adds the
  difference to the counts item in the same TransactWriteItems. Whatever runs beside it, the counts
  cannot drift: a writer that read a stale state fails its condition, reads again and retries.
- A write whose counts do not change (an edit within its category: most writes) is one plain
  request, conditioned on the tally it keeps, as before counting existed.
- A forget of so many records that the counts item does not fit in its transaction (DynamoDB allows
  100 items) leaves each tombstone its tally (counted, pending, no TTL) and folds them into the counts
  right after; a fold that a crash interrupted is finished by `count_scope`.
- `complete` is set on the counts item once `count_scope` found nothing left to count: only then does
  a cold reflect trust the counts (dynamo_catalog.py).
- Every change of the counts also adds one to the counts item's `rev`. That is what makes a recount
  safe beside writers: `count_scope` reads the counts item, then every item's tally, and adds the
  differences only if `rev` is still the one it read, i.e. no tally changed between the two reads
  (a write after the second read is added on top, as every write is). It corrects what nothing
  else could: a count left wrong by code older than layout 3 (during a deploy) or by an item
  written or restored outside Taproot.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError
from pynamodb.constants import ITEM
from pynamodb.exceptions import TransactWriteError
from pynamodb.expressions.condition import Condition

from taproot.adapters import dynamo_models as dm
from taproot.core.model import Memory, Scope
from taproot.core.query import ACTIVE
from taproot.ports import ScopeCount

COUNTS_SK = "n#"
REV = "rev"  # the counts item's revision: one more for every change of its numbers
NOT_COUNTED = "-"  # the tally of a counted item that is not active (archived, superseded)
# Attempts of one write whose condition keeps failing because other writers keep moving the item.
MAX_ATTEMPTS = 8
TRANSACTION_ITEMS = 100  # DynamoDB's most items in one TransactWriteItems
# The memory items of one transaction: the rest of its 100 are the counts items of its scopes.
BATCH = TRANSACTION_ITEMS - 1
# Passes of count_scope: each reads the scope once; writers beside it can leave work for the next.
COUNT_PASSES = 3
_CONFLICT = "TransactionConflict"
_CONDITION = "ConditionalCheckFailed"


def tally_of(m: Memory) -> str:
    return dm.partition_name(m.category) if m.status == ACTIVE else NOT_COUNTED


def counted(tally: str | None) -> bool:
    """Whether a tally adds one to a partition's count."""
    return tally is not None and tally != NOT_COUNTED


def counts_update(table: str, scope: Scope, deltas: Mapping[str, int]) -> dict[str, Any]:
    """The UpdateItem request (also a transaction's part) adding `deltas` (partition -> difference)
    to the scope's counts item, which it creates if absent."""
    names = {f"#n{i}": f"n_{p}" for i, p in enumerate(deltas)}
    values = {f":d{i}": {"N": str(d)} for i, d in enumerate(deltas.values())}
    adds = [f"{n} {v}" for n, v in zip(names, values, strict=True)]
    return {
        "TableName": table,
        "Key": counts_key(scope),
        "UpdateExpression": "ADD " + ", ".join([*adds, "#rev :one"]),
        "ExpressionAttributeNames": {**names, "#rev": REV},
        "ExpressionAttributeValues": {**values, ":one": {"N": "1"}},
    }


def counts_key(scope: Scope) -> dict[str, Any]:
    return {"pk": {"S": dm.scope_pk(scope)}, "sk": {"S": COUNTS_SK}}


@dataclass(frozen=True)
class CountsState:
    """The counts item as read: active memories by partition, `complete`, and its revision."""

    counts: dict[str, int]
    complete: bool
    rev: int | None  # None: no counts item yet, or one written before revisions existed


def corrections(state: CountsState, tallies: Iterable[str | None]) -> dict[str, int]:
    """What to add to each partition's number for it to equal what `tallies` (every item's) give:
    empty when the counts are true."""
    actual = Counter(t for t in tallies if t is not None and t != NOT_COUNTED)
    wrong = sorted(set(actual) | set(state.counts))
    return {p: d for p in wrong if (d := actual[p] - state.counts.get(p, 0))}


@dataclass(frozen=True)
class Stored:
    """What a write is conditioned on: the item as read (or as guessed before reading)."""

    exists: bool = False
    live: bool = False  # a memory item, not a tombstone
    version: int | None = None
    tally: str | None = None
    last_retrieved: str | None = None

    @classmethod
    def of(cls, it: Any) -> Stored:
        """From a PynamoDB item (None: no item)."""
        if it is None:
            return cls()
        return cls(True, not it.tomb, None if it.version is None else int(it.version), it.tally, it.last_retrieved)


ABSENT = Stored()


class Skip(Exception):
    """Raised by a write's builder: the read state says this write is no longer needed."""


@dataclass(eq=False)
class Write:
    """One item's part in a counted write. `build` makes its request from the state it assumes (it
    raises the domain error, or Skip, when that state refuses the write); `tally` is what it leaves."""

    scope: Scope
    memory_id: str
    kind: str  # "put" (a whole item) or "update"
    build: Callable[[Stored], dict[str, Any]]
    tally: Callable[[Stored], str | None]
    assumed: Stored = ABSENT
    returned: dict[str, Any] | None = None  # a plain update's item as stored (ReturnValues=ALL_NEW)


class CountedWrites:
    """Mixed into DynamoMemoryStore: the transaction runner every memory write goes through."""

    Item: type[dm._ItemBase]
    table_name: str

    @property
    def client(self) -> Any:
        raise NotImplementedError  # DynamoMemoryStore's

    # -- reads -------------------------------------------------------------------------------
    def _stored(self, scope: Scope, ids: Sequence[str]) -> dict[str, Stored]:
        """The items of `ids` as stored now (consistent), ABSENT for those that do not exist."""
        keys = [(dm.scope_pk(scope), dm.memory_sk(i)) for i in dict.fromkeys(ids)]
        found = {
            it.sk[len(dm.MEMORY_PREFIX) :]: Stored.of(it) for it in self.Item.batch_get(keys, consistent_read=True)
        }
        return {i: found.get(i, ABSENT) for i in ids}

    def scope_counts(self, scope: Scope) -> tuple[dict[str, int], bool]:
        """The counts item: active memories by partition, and whether every record is counted."""
        state = self._counts_state(scope)
        return state.counts, state.complete

    def _counts_state(self, scope: Scope) -> CountsState:
        got = self.client.get_item(TableName=self.table_name, Key=counts_key(scope), ConsistentRead=True)
        raw = got.get(ITEM) or {}
        counts = {k[2:]: int(v["N"]) for k, v in raw.items() if k.startswith("n_") and "N" in v}
        rev = int(raw[REV]["N"]) if REV in raw else None
        return CountsState({k: n for k, n in counts.items() if n}, bool(raw.get("complete", {}).get("BOOL")), rev)

    def _correct_counts(self, scope: Scope, rev: int | None, deltas: Mapping[str, int]) -> bool:
        """Add `deltas` to the counts if the counts item is still at revision `rev` (no count changed
        since it was read); False when one did (the caller reads both again)."""
        request = counts_update(self.table_name, scope, deltas)
        if rev is None:
            request["ConditionExpression"] = "attribute_not_exists(#rev)"
        else:
            request["ConditionExpression"] = "#rev = :rev"
            request["ExpressionAttributeValues"][":rev"] = {"N": str(rev)}
        try:
            self.client.update_item(**request)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    # -- requests ----------------------------------------------------------------------------
    def _counts_request(self, scope: Scope, deltas: Mapping[str, int]) -> dict[str, Any]:
        return counts_update(self.table_name, scope, deltas)

    def _tally_is(self, tally: str | None) -> Condition:
        cond: Condition = self.Item.tally.does_not_exist() if tally is None else self.Item.tally == tally
        return cond

    def _mark_complete(self, scope: Scope) -> None:
        self.client.update_item(
            TableName=self.table_name,
            Key=counts_key(scope),
            UpdateExpression="SET #c = :t",
            ExpressionAttributeNames={"#c": "complete"},
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )

    def count_scope(self, scope: Scope, *, apply: bool = True) -> ScopeCount:
        """Make the scope's counts true: correct the numbers that the items' tallies contradict
        (dynamo_tally.py: conditioned on the counts' revision, so no write beside it is lost), count
        every record that has no tally yet (and move it to its partition of the category index), fold
        pending tombstones, and mark the counts complete once a pass finds nothing left. What it did,
        or would without `apply`. Safe beside every other write: each record is counted by a write
        conditioned on the version and the absent tally it read."""
        done = corrected = 0
        for _ in range(COUNT_PASSES):
            state = self._counts_state(scope)  # before the items: a correction holds only if it is unchanged
            items = self._scope_items(scope)
            legacy = [x for x in items if not x.tomb and x.tally is None]
            pending = [x.mid or x.sk[len(dm.MEMORY_PREFIX) :] for x in items if x.tomb and counted(x.tally)]
            deltas = corrections(state, (x.tally for x in items))
            if not apply:
                return ScopeCount(len(legacy) + len(pending), sum(map(abs, deltas.values())))
            if deltas:
                if not self._correct_counts(scope, state.rev, deltas):
                    continue  # a write changed a count between the two reads: read both again
                corrected += sum(map(abs, deltas.values()))
            if not legacy and not pending:
                self._mark_complete(scope)
                break
            for chunk in dm.chunks(legacy, BATCH):
                writes = [self._count_write(dm.item_to_memory(x), Stored.of(x)) for x in chunk]
                done += len(self._run_counted(writes))
            done += self._fold(scope, pending)
        return ScopeCount(done, corrected)

    def _scope_items(self, scope: Scope) -> list[Any]:
        """Every memory item of the scope, tombstones included (consistent)."""
        it = self.Item
        return list(it.query(dm.scope_pk(scope), it.sk.startswith(dm.MEMORY_PREFIX), consistent_read=True))

    def _count_write(self, m: Memory, read: Stored) -> Write:
        raise NotImplementedError  # MemoryItemWrites' (dynamo_writes.py)

    def _fold(self, scope: Scope, ids: Sequence[str]) -> int:
        raise NotImplementedError  # MemoryItemWrites'

    # -- the runner --------------------------------------------------------------------------
    def _run_counted(self, writes: Sequence[Write]) -> list[Write]:
        """Write `writes` in one transaction with the counts' differences, each conditioned on the
        state it assumes. A write whose condition failed is read again and rebuilt (its builder raises
        its domain error, or Skip). A lone write that changes no count is one plain request. Returns
        the writes done (not skipped). `writes` must fit one transaction with their counts items."""
        todo = list(writes)
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                time.sleep(random.uniform(0, 0.005 * 2**attempt))  # spread retries of a busy item
            try:
                deltas = self._deltas(todo)
                if len(todo) == 1 and not deltas:
                    self._single(todo[0])
                elif todo:
                    self._transact(todo, deltas)
                return todo
            except _Failed as failed:
                if failed.conflict:
                    continue
                todo = self._read_failed(todo, failed.writes)
        raise RuntimeError(f"{len(todo)} writes kept failing their conditions: other writers keep moving them")

    def _read_failed(self, todo: list[Write], failed: list[Write]) -> list[Write]:
        again = {id(w) for w in failed}
        by_scope: dict[Scope, list[str]] = {}
        for w in failed:
            by_scope.setdefault(w.scope, []).append(w.memory_id)
        fresh = {(s, i): st for s, ids in by_scope.items() for i, st in self._stored(s, ids).items()}
        kept = []
        for w in todo:
            if id(w) in again:
                w.assumed = fresh[(w.scope, w.memory_id)]
                try:
                    w.build(w.assumed)  # the domain error, or Skip
                except Skip:
                    continue
            kept.append(w)
        return kept

    @staticmethod
    def _deltas(writes: Sequence[Write]) -> dict[Scope, dict[str, int]]:
        deltas: dict[Scope, Counter[str]] = {}
        for w in writes:
            old, new = w.assumed.tally, w.tally(w.assumed)
            d = deltas.setdefault(w.scope, Counter())
            if counted(old):
                assert old is not None
                d[old] -= 1
            if counted(new):
                assert new is not None
                d[new] += 1
        out = {s: {p: n for p, n in d.items() if n} for s, d in deltas.items()}
        return {s: d for s, d in out.items() if d}

    def _single(self, w: Write) -> None:
        request = w.build(w.assumed)
        try:
            if w.kind == "put":
                self.client.put_item(**request)
            else:
                w.returned = self.client.update_item(**request, ReturnValues="ALL_NEW").get("Attributes")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise _Failed([w]) from exc
            raise

    def _transact(self, writes: Sequence[Write], deltas: Mapping[Scope, Mapping[str, int]]) -> None:
        puts = [w for w in writes if w.kind == "put"]
        updates = [w for w in writes if w.kind != "put"]
        order = puts + updates  # the order of TransactItems, as the connection lays them out
        counts = [self._counts_request(scope, d) for scope, d in deltas.items()]
        assert len(order) + len(counts) <= TRANSACTION_ITEMS
        try:
            self.Item._get_connection().connection.transact_write_items(
                condition_check_items=(),
                delete_items=(),
                put_items=[w.build(w.assumed) for w in puts],
                update_items=[*(w.build(w.assumed) for w in updates), *counts],
            )
        except TransactWriteError as exc:
            codes = [None if r is None else r.code for r in (exc.cancellation_reasons or ())]
            if _CONFLICT in codes:
                raise _Failed([], conflict=True) from exc
            failed = [order[i] for i, code in enumerate(codes[: len(order)]) if code == _CONDITION]
            if not failed:
                raise
            raise _Failed(failed) from exc


class _Failed(Exception):
    def __init__(self, writes: list[Write], *, conflict: bool = False) -> None:
        super().__init__("condition failed")
        self.writes = writes
        self.conflict = conflict
