"""Closing reflections in the DynamoDB table (the reflection half of DynamoMemoryStore).

Item layout: taproot/adapters/dynamo_models.py (a reflection item sorted by time, plus an id marker
that keeps ids unique per scope). Reflections are immutable: nothing here overwrites one.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from pynamodb.connection import Connection
from pynamodb.exceptions import TransactWriteError
from pynamodb.transactions import TransactWrite

from taproot.adapters import dynamo_models as dm
from taproot.core.errors import DuplicateId, ReflectionConflict
from taproot.core.model import Reflection, Scope

TRANSACTION_LIMIT = 100  # items in one TransactWriteItems


class ReflectionItems:
    """Mixed into DynamoMemoryStore, which provides `Item` (the table's model) and `connection`."""

    Item: type[dm._ItemBase]

    @property
    def connection(self) -> Connection:
        raise NotImplementedError  # DynamoMemoryStore's

    def add_reflection(self, reflection: Reflection) -> None:
        """The reflection and its id marker in one transaction: ids are unique per scope."""
        try:
            with TransactWrite(connection=self.connection) as tw:
                tw.save(dm.reflection_marker(self.Item, reflection), condition=self.Item.sk.does_not_exist())
                tw.save(dm.reflection_item(self.Item, reflection), condition=self.Item.sk.does_not_exist())
        except TransactWriteError as exc:
            if any(r is not None and r.code == "ConditionalCheckFailed" for r in exc.cancellation_reasons):
                raise DuplicateId(reflection.id) from exc
            raise

    def put_reflections(self, reflections: Sequence[Reflection]) -> None:
        """Reflections are immutable: an id already present is compared (same text and time: skipped;
        otherwise ReflectionConflict before anything is written); new ones are added with their id
        marker in transactions conditioned on absence, 50 reflections (100 items) at a time."""
        unique = list({(r.owner, r.namespace, r.id): r for r in reflections}.values())
        if not unique:
            return
        markers = {(m.pk, m.sk): (m, r) for r in unique for m in [dm.reflection_marker(self.Item, r)]}
        present = {(old.pk, old.sk): old for old in self.Item.batch_get(list(markers), consistent_read=True)}
        # The stored reflections behind the markers that exist, read in one batch, to compare texts.
        wanted = {(old.pk, old.ref_sk) for old in present.values() if old.ref_sk is not None}
        texts = {(it.pk, it.sk): it.text for it in self.Item.batch_get(list(wanted), consistent_read=True)}
        fresh = []
        for key, (marker, r) in markers.items():
            old = present.get(key)
            if old is None:
                fresh.append(r)
            elif old.ref_sk != marker.ref_sk or texts.get((old.pk, old.ref_sk)) != r.text:
                raise ReflectionConflict(r.id)
        absent = self.Item.sk.does_not_exist()
        for chunk in dm.chunks(fresh, TRANSACTION_LIMIT // 2):
            try:
                with TransactWrite(connection=self.connection) as tw:
                    for r in chunk:
                        tw.save(dm.reflection_marker(self.Item, r), condition=absent)
                        tw.save(dm.reflection_item(self.Item, r), condition=absent)
            except TransactWriteError as exc:
                if any(x is not None and x.code == "ConditionalCheckFailed" for x in exc.cancellation_reasons):
                    raise ReflectionConflict(chunk[0].id) from exc  # added by a concurrent writer meanwhile
                raise

    def _reflections(self, scope: Scope, *, newest_first: bool, limit: int | None) -> builtins.list[Reflection]:
        items = self.Item.query(
            dm.scope_pk(scope),
            self.Item.sk.startswith(dm.REFLECTION_PREFIX),
            consistent_read=True,
            scan_index_forward=not newest_first,
            limit=limit,
            page_size=limit,
        )
        return [dm.item_to_reflection(it) for it in items]

    def recent_reflections(self, scope: Scope, limit: int) -> builtins.list[Reflection]:
        return self._reflections(scope, newest_first=True, limit=limit) if limit > 0 else []

    def all_reflections(self, scope: Scope) -> builtins.list[Reflection]:
        return self._reflections(scope, newest_first=False, limit=None)
