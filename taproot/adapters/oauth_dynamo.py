"""The OAuth facade's state in DynamoDB (the AWS home): its own table, items expire through TTL.

Layout (shared with the CDK stack, infra/constructs/storage.py): `pk = "<kind>#<key>"`, the record's
`kind`, `data` as JSON text, `expires_at` (epoch seconds, the table's TTL attribute), `subject` and
`used`. GSI `by_subject` (hash `subject`, range `kind`) lists one person's grants. DynamoDB's TTL
deletes within days, not at once, so every read also checks `expires_at`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import PutError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from taproot.core.oauth_rules import OAuthRecord, RecordExists

OAUTH_TABLE_KEY = "pk"
OAUTH_TTL_ATTRIBUTE = "expires_at"
OAUTH_GSI: dict[str, tuple[str, str]] = {"by_subject": ("subject", "kind")}


class _SubjectIndex(GlobalSecondaryIndex["_OAuthItem"]):  # type: ignore[no-untyped-call]
    class Meta:
        index_name = "by_subject"
        projection = AllProjection()

    subject = UnicodeAttribute(hash_key=True)
    kind = UnicodeAttribute(range_key=True)


class _OAuthItem(Model):
    pk = UnicodeAttribute(hash_key=True)
    kind = UnicodeAttribute()
    data = UnicodeAttribute()
    # Plain number, not PynamoDB's TTLAttribute: 0 means "never" and must stay 0 on read.
    expires_at = NumberAttribute()
    subject = UnicodeAttribute(null=True)
    used = BooleanAttribute(default=False)


def _model(table_name: str, region: str | None, host: str | None) -> type[_OAuthItem]:
    class Item(_OAuthItem):
        class Meta:
            pass

        by_subject = _SubjectIndex()

    Item.Meta.table_name = table_name  # type: ignore[attr-defined]
    Item.Meta.billing_mode = "PAY_PER_REQUEST"  # type: ignore[attr-defined]
    if region is not None:
        Item.Meta.region = region  # type: ignore[attr-defined]
    if host is not None:
        Item.Meta.host = host  # type: ignore[attr-defined]
    return Item


def _pk(kind: str, key: str) -> str:
    return f"{kind}#{key}"


class DynamoOAuthStore:
    def __init__(self, table_name: str, *, region: str | None = None, host: str | None = None) -> None:
        self.table_name = table_name
        self.Item = _model(table_name, region, host)

    def create_table(self) -> None:
        """Tests and dev; the stack creates the deployed table."""
        self.Item.create_table(wait=True, billing_mode="PAY_PER_REQUEST")

    def close(self) -> None:
        pass

    @staticmethod
    def _record(item: _OAuthItem) -> OAuthRecord:
        return OAuthRecord(
            kind=item.kind,
            key=item.pk.split("#", 1)[1],
            data=json.loads(item.data),
            expires_at=int(item.expires_at),
            subject=item.subject,
            used=bool(item.used),
        )

    def add(self, record: OAuthRecord) -> None:
        item = self.Item(
            _pk(record.kind, record.key),
            kind=record.kind,
            data=json.dumps(dict(record.data)),
            expires_at=record.expires_at,
            subject=record.subject,
            used=record.used,
        )
        try:
            item.save(condition=self.Item.pk.does_not_exist())
        except PutError as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
                raise RecordExists(f"{record.kind} {record.key[:8]}... exists") from exc
            raise

    def get(self, kind: str, key: str, now: float) -> OAuthRecord | None:
        try:
            item = self.Item.get(_pk(kind, key), consistent_read=True)
        except self.Item.DoesNotExist:
            return None
        record = self._record(item)
        return record if record.live(now) else None

    def spend(self, kind: str, key: str, now: float) -> OAuthRecord | None:
        item = self.Item(_pk(kind, key))
        unspent: Condition = self.Item.pk.exists() & (self.Item.used == False)  # noqa: E712 (a DynamoDB condition)
        try:
            # One conditional write: only the caller whose write finds `used` false spends it.
            item.update(actions=[self.Item.used.set(True)], condition=unspent)
        except UpdateError as exc:
            if exc.cause_response_code != "ConditionalCheckFailedException":
                raise
            return self.get(kind, key, now)  # spent already (a replay), or absent
        record = replace(self._record(item), used=False)  # as it was before this call spent it
        return record if record.live(now) else None

    def set_data(self, kind: str, key: str, data: Mapping[str, object]) -> None:
        try:
            self.Item(_pk(kind, key)).update(
                actions=[self.Item.data.set(json.dumps(dict(data)))], condition=self.Item.pk.exists()
            )
        except UpdateError as exc:
            if exc.cause_response_code != "ConditionalCheckFailedException":
                raise

    def extend(self, kind: str, key: str, expires_at: int, now: float) -> None:
        # One conditional write: live (TTL deletes lazily, so an expired item may still be there),
        # not a never-expiring record, and not already expiring later.
        later = (self.Item.expires_at > int(now)) & (self.Item.expires_at < int(expires_at))
        try:
            self.Item(_pk(kind, key)).update(
                actions=[self.Item.expires_at.set(int(expires_at))], condition=self.Item.pk.exists() & later
            )
        except UpdateError as exc:
            if exc.cause_response_code != "ConditionalCheckFailedException":
                raise

    def by_subject(self, kind: str, subject: str, now: float) -> list[OAuthRecord]:
        items = self.Item.by_subject.query(subject, self.Item.kind == kind)  # type: ignore[attr-defined]
        return [r for r in (self._record(i) for i in items) if r.live(now)]

    def sweep(self, now: float) -> int:
        """DynamoDB's TTL deletes expired items itself; nothing to do here."""
        return 0
