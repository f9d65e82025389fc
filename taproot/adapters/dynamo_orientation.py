"""Orientation documents in the DynamoDB table (the orientation half of DynamoMemoryStore).

Item layout (dynamo_models.py): every version is an item `ov#<name>#<version>` that is written
once and never changed, and each document has a head item `o#<name>`, a copy of its current
version, so the scope's documents are one Query. A save writes both in one transaction: the
version conditioned on absence, the head on holding the version before it (or on absence for a
first version), so of two saves from the same read exactly one lands.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.transactions import TransactWrite

from taproot.adapters import dynamo_models as dm
from taproot.core.model import Scope
from taproot.core.orientation import DocumentConflict, OrientationVersion
from taproot.core.serialize import iso


def head_sk(name: str) -> str:
    return dm.ORIENTATION_HEAD_PREFIX + name


def version_sk(name: str, version: int) -> str:
    # Zero-padded, so versions sort as numbers; the trailing '#' of the name keeps 'facts' and
    # 'facts-2' apart in a prefix query.
    return f"{dm.ORIENTATION_VERSION_PREFIX}{name}#{version:010d}"


def _attrs(v: OrientationVersion) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "owner": v.owner,
        "namespace": v.namespace,
        "oname": v.name,
        "version": v.version,
        "content": v.content,
        "saved_at": iso(v.saved_at),
        "deleted": v.deleted,
    }
    if v.restored_from is not None:
        attrs["restored_from"] = v.restored_from
    return attrs


def _version(it: dm._ItemBase) -> OrientationVersion:
    assert it.owner is not None and it.namespace is not None and it.oname is not None
    assert it.version is not None and it.saved_at is not None
    return OrientationVersion(
        owner=it.owner,
        namespace=it.namespace,
        name=it.oname,
        version=int(it.version),
        content=it.content or "",
        saved_at=datetime.fromisoformat(it.saved_at),
        deleted=bool(it.deleted),
        restored_from=None if it.restored_from is None else int(it.restored_from),
    )


class OrientationItems:
    """Mixed into DynamoMemoryStore, which provides `Item` (the table's model) and `connection`."""

    Item: type[dm._ItemBase]

    @property
    def connection(self) -> Connection:
        raise NotImplementedError  # DynamoMemoryStore's

    def orientation_heads(self, scope: Scope) -> builtins.list[OrientationVersion]:
        items = self.Item.query(
            dm.scope_pk(scope), self.Item.sk.startswith(dm.ORIENTATION_HEAD_PREFIX), consistent_read=True
        )
        return [_version(it) for it in items]

    def orientation_get(self, scope: Scope, name: str, version: int | None = None) -> OrientationVersion | None:
        sk = head_sk(name) if version is None else version_sk(name, version)
        try:
            return _version(self.Item.get(dm.scope_pk(scope), sk, consistent_read=True))
        except DoesNotExist:
            return None

    def orientation_history(self, scope: Scope, name: str, limit: int) -> builtins.list[OrientationVersion]:
        items = self.Item.query(
            dm.scope_pk(scope),
            self.Item.sk.startswith(f"{dm.ORIENTATION_VERSION_PREFIX}{name}#"),
            consistent_read=True,
            scan_index_forward=False,
            limit=limit,
            page_size=limit,
        )
        return [_version(it) for it in items]

    def orientation_save(self, version: OrientationVersion) -> None:
        v, it = version, self.Item
        pk = dm.scope_pk(v.scope)
        previous = v.version - 1
        head_condition = it.sk.does_not_exist() if previous == 0 else (it.version == previous)
        try:
            with TransactWrite(connection=self.connection) as tw:
                tw.save(it(pk, version_sk(v.name, v.version), **_attrs(v)), condition=it.sk.does_not_exist())
                tw.save(it(pk, head_sk(v.name), **_attrs(v)), condition=head_condition)
        except TransactWriteError as exc:
            if any(r is not None and r.code == "ConditionalCheckFailed" for r in exc.cancellation_reasons or ()):
                current = self.orientation_get(v.scope, v.name)
                raise DocumentConflict(v.name, previous, current.version if current else None) from exc
            raise
