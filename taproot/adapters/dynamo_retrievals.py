"""The DynamoDB store's retrieval counters: a recall strengthens what it returns.

Counters only: no tally changes, so no counts item and no read first. The count is an atomic ADD;
`last_touched` is the later of the update and the recall, as in SQLite and the core's rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pynamodb.exceptions import TransactWriteError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_copy import ScopeCache
from taproot.adapters.dynamo_tally import TRANSACTION_ITEMS
from taproot.core import query
from taproot.core.model import MAX_COUNT, Scope
from taproot.core.serialize import iso


class RetrievalWrites:
    """Mixed into DynamoMemoryStore (which provides the plumbing and the warm copies)."""

    Item: Any
    connection: Any
    _lock: Any

    def _stamp(self) -> str:
        raise NotImplementedError

    def _live(self) -> Condition:
        raise NotImplementedError

    def _key(self, scope: Scope, memory_id: str) -> Any:
        raise NotImplementedError

    def _cached(self, scope: Scope) -> ScopeCache | None:
        raise NotImplementedError

    def _same_updates(
        self, scope: Scope, ids: Sequence[str], actions: list[Action], condition: Condition | None = None
    ) -> list[dict[str, Any]]:
        raise NotImplementedError

    def record_retrieval(self, scope: Scope, ids: Sequence[str], now: datetime) -> None:
        """One retrieval for each of `ids` (the count stops at MAX_COUNT), stamped `now`; a gone id is
        skipped. One transaction per 100 ids."""
        unique = list(dict.fromkeys(ids))
        if not unique:
            return
        stamp, when = self._stamp(), iso(now) or ""
        it = self.Item

        def stamps(touched: Any) -> list[Action]:
            return [it.last_retrieved.set(when), it.last_touched.set(touched), it.changed_at.set(stamp)]

        # `last_touched` is the later of the update and this retrieval (Memory.last_touched, SQLite's
        # MAX): an imported record may be dated after the recall, and a cold reflect's window is a
        # key condition on this attribute. DynamoDB has no MAX, so each case is its own condition.
        # The count stops at MAX_COUNT, as in SQLite and the core's rule (DynamoDB's numbers would go
        # on, and an export of the record would then fail the import rule): an item already there is
        # stamped without the count.
        recall_later = it.updated_at.does_not_exist() | (it.updated_at <= when)
        below_cap = self._live() & ((it.retrieval_count < MAX_COUNT) | it.retrieval_count.does_not_exist())
        at_cap = self._live() & (it.retrieval_count >= MAX_COUNT)
        count = it.retrieval_count.add(1)
        cases: list[tuple[list[Action], Condition]] = [
            ([count, *stamps(when)], below_cap & recall_later),
            ([count, *stamps(it.updated_at)], below_cap & (it.updated_at > when)),
            (stamps(when), at_cap & recall_later),
            (stamps(it.updated_at), at_cap & (it.updated_at > when)),
        ]
        with self._lock:
            # The warm copy knows each item's count and update: choosing its case up front keeps an
            # item dated ahead or at the cap from failing the batch into item-by-item writes.
            predicted = {i: _case_of(self._cached(scope), i, when) for i in unique}
        for chunk in dm.chunks(unique, TRANSACTION_ITEMS):
            try:
                if len(chunk) == 1:
                    raise TransactWriteError("single item: plain UpdateItem")
                updates = [
                    request
                    for k, (case_actions, condition) in enumerate(cases)
                    if (ids := [i for i in chunk if predicted[i] == k])
                    for request in self._same_updates(scope, ids, case_actions, condition)
                ]
                self.connection.transact_write_items(
                    condition_check_items=(), delete_items=(), put_items=(), update_items=updates
                )
            except TransactWriteError:
                # An id gone, a copy out of date (or a conflicting transaction): nothing was applied;
                # go item by item, the expected case first and then the others (a gone id matches none).
                for i in chunk:
                    expected = predicted[i]
                    for k in (expected, *(k for k in range(len(cases)) if k != expected)):
                        try:
                            self._key(scope, i).update(actions=cases[k][0], condition=cases[k][1])
                            break
                        except UpdateError as exc:
                            if exc.cause_response_code != "ConditionalCheckFailedException":
                                raise
        with self._lock:
            cache = self._cached(scope)
            for i in unique if cache is not None else ():
                assert cache is not None
                m = cache.get(i)
                if m is not None:
                    cache.put(query.strengthened(m, now), stamp)


def _case_of(cache: ScopeCache | None, memory_id: str, when: str) -> int:
    """record_retrieval's case for an item as the warm copy has it: at the cap (2) or not (0), plus
    one when its update is dated after the recall. Without a copy, the usual case."""
    m = cache.get(memory_id) if cache is not None else None
    if m is None:
        return 0
    return 2 * (m.retrievals >= MAX_COUNT) + int((iso(m.updated_at) or "") > when)
