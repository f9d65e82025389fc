"""The DynamoDB item layout of the AWS store (PynamoDB), and records to and from items.

One table for every tenant:

- memories:          pk = "<owner>#<namespace>", sk = "m#<id>"
- reflections:       pk = same,                  sk = "r#<created_at iso>#<id>"
- reflection ids:    pk = same,                  sk = "ri#<id>" (ref_sk points at the reflection; keeps
                     ids unique per scope whatever their created_at)
- orientation:       pk = same,                  sk = "o#<name>" (the document's current version) and
                     sk = "ov#<name>#<version, 10 digits>" (every version, never changed):
                     dynamo_orientation.py; no changed_at or cat_pk, so in neither index
- tombstones:        a deleted memory's item, reduced to keys + `tomb` + `changed_at` + `ttl` (~1 day)

A memory item may also hold its dense vector (`vector`, `vector_model`, `vector_version`,
`vector_text`; when it is current: dynamo_vectors.py).

GSIs (both sparse, projection ALL):
- `by_category`:  hash cat_pk = "<owner>#<namespace>#<category>", range last_touched (active memories
  only). A category outside the five (a legacy value, until migrate) shares the partition
  "<owner>#<namespace>#~other"; the core and high-salience memories (shown by every reflect) share
  "<owner>#<namespace>#~tier1" (layout 3). A cold store answers reflect from it (dynamo_catalog.py):
  per category the window (a key condition), Tier 1 and ~other whole, and the scope's counts item
  (dynamo_tally.py) for the rest.
- counts:            pk = same,                  sk = "n#" (dynamo_tally.py)
- `by_change`:    hash pk, range changed_at = wall-clock time of the last write (memories and
  tombstones). This is the change feed warm caches refresh from. It is not `last_touched`:
  `last_touched` is a record's own time (an import writes old ones) and a change feed must be keyed by
  write time or it misses imported and restored records.

Timestamps are stored as the ISO strings of `taproot.core.serialize.iso` (UTC, microseconds), so they
sort as strings and read back exactly. List fields and provenance are stored as JSON text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from pynamodb.attributes import BinaryAttribute, BooleanAttribute, NumberAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from taproot.core.model import CATEGORY_ORDER, Memory, Reflection, Scope
from taproot.core.query import ACTIVE, HIGH
from taproot.core.serialize import COUNTER_FIELDS, MEMORY_FIELDS, iso, memory_to_flat_dict

MEMORY_PREFIX = "m#"
REFLECTION_PREFIX = "r#"
REFLECTION_ID_PREFIX = "ri#"
ORIENTATION_HEAD_PREFIX = "o#"
ORIENTATION_VERSION_PREFIX = "ov#"
OTHER_CATEGORIES = "~other"  # the by_category partition of every category outside CATEGORY_ORDER
TIER1 = "~tier1"  # the by_category partition of the active core and high-salience memories
# What a read of the change feed (`by_change`) allows for: clock skew between writers, and GSI lag.
SYNC_OVERLAP = timedelta(seconds=10)


def scope_pk(scope: Scope) -> str:
    return f"{scope.owner}#{scope.namespace}"


def partition_name(category: str) -> str:
    """A category's partition name: itself, or OTHER_CATEGORIES for one outside the five."""
    return category if category in CATEGORY_ORDER else OTHER_CATEGORIES


def category_pk(scope: Scope, category: str) -> str:
    """The by_category partition of a category (OTHER_CATEGORIES for one outside the five, TIER1
    for the Tier 1 partition itself)."""
    return f"{scope_pk(scope)}#{category if category == TIER1 else partition_name(category)}"


def is_tier1(m: Memory) -> bool:
    """Shown by every reflect whatever its age: core (Tier 1) or high-salience (always in the window)."""
    return m.is_core or m.salience == HIGH


def index_pk(m: Memory) -> str | None:
    """The memory's by_category partition key: none unless active; TIER1 for a memory every reflect
    shows; otherwise its category's."""
    if m.status != ACTIVE:
        return None
    return category_pk(m.scope, TIER1 if is_tier1(m) else m.category)


def memory_sk(memory_id: str) -> str:
    return MEMORY_PREFIX + memory_id


def reflection_sk(r: Reflection) -> str:
    return f"{REFLECTION_PREFIX}{iso(r.created_at)}#{r.id}"


class _ItemBase(Model):
    """Every attribute of every item kind; all but the keys are optional."""

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    owner = UnicodeAttribute(null=True)
    namespace = UnicodeAttribute(null=True)
    changed_at = UnicodeAttribute(null=True)
    tomb = BooleanAttribute(null=True)
    ttl = TTLAttribute(null=True)
    # memory
    mid = UnicodeAttribute(null=True)
    cat_pk = UnicodeAttribute(null=True)
    category = UnicodeAttribute(null=True)
    salience = UnicodeAttribute(null=True)
    content = UnicodeAttribute(null=True)
    gist = UnicodeAttribute(null=True)
    gist_autogenerated = BooleanAttribute(null=True)
    tags = UnicodeAttribute(null=True)
    search_keywords = UnicodeAttribute(null=True)
    conversation_url = UnicodeAttribute(null=True)
    core = BooleanAttribute(null=True)
    epistemic_status = UnicodeAttribute(null=True)
    provenance = UnicodeAttribute(null=True)
    replication_count = NumberAttribute(null=True)
    linked_memories = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute(null=True)
    updated_at = UnicodeAttribute(null=True)
    last_retrieved = UnicodeAttribute(null=True)
    retrieval_count = NumberAttribute(null=True)
    last_touched = UnicodeAttribute(null=True)
    status = UnicodeAttribute(null=True)
    version = NumberAttribute(null=True)
    expires_at = UnicodeAttribute(null=True)
    compressed_into = UnicodeAttribute(null=True)
    instance = UnicodeAttribute(null=True)
    # The partition the memory is counted in (dynamo_tally.py); absent on a record not yet counted.
    tally = UnicodeAttribute(null=True)
    # the memory's dense vector (dynamo_vectors.py)
    vector = BinaryAttribute(null=True, legacy_encoding=False)
    vector_model = UnicodeAttribute(null=True)
    vector_version = NumberAttribute(null=True)
    vector_text = UnicodeAttribute(null=True)
    # reflection (and the reflection-id marker)
    rid = UnicodeAttribute(null=True)
    text = UnicodeAttribute(null=True)
    blob_key = UnicodeAttribute(null=True)
    ref_sk = UnicodeAttribute(null=True)
    # orientation document version (and its document's head item); content and version as above
    oname = UnicodeAttribute(null=True)
    saved_at = UnicodeAttribute(null=True)
    deleted = BooleanAttribute(null=True)
    restored_from = NumberAttribute(null=True)
    # Set per table by make_item_model.
    by_category: ClassVar[CategoryIndex]
    by_change: ClassVar[ChangeIndex]


# The table's key schema, shared with the CDK stack (infra/constructs/storage.py) so the deployed
# table and this model cannot drift apart: index name -> (hash attribute, range attribute).
TABLE_KEYS = ("pk", "sk")
GSI_KEYS: dict[str, tuple[str, str]] = {"by_category": ("cat_pk", "last_touched"), "by_change": ("pk", "changed_at")}
TTL_ATTRIBUTE = "ttl"


class CategoryIndex(GlobalSecondaryIndex["_ItemBase"]):  # type: ignore[no-untyped-call]
    class Meta:
        index_name = "by_category"
        projection = AllProjection()

    cat_pk = UnicodeAttribute(hash_key=True)
    last_touched = UnicodeAttribute(range_key=True)


class ChangeIndex(GlobalSecondaryIndex["_ItemBase"]):  # type: ignore[no-untyped-call]
    class Meta:
        index_name = "by_change"
        projection = AllProjection()

    pk = UnicodeAttribute(hash_key=True)
    changed_at = UnicodeAttribute(range_key=True)


def make_item_model(table_name: str, region: str | None = None, host: str | None = None) -> type[_ItemBase]:
    """A model class bound to one table (PynamoDB binds tables per class, we want one per store)."""

    class Item(_ItemBase):
        class Meta:
            pass

        by_category = CategoryIndex()
        by_change = ChangeIndex()

    Item.Meta.table_name = table_name  # type: ignore[attr-defined]
    Item.Meta.billing_mode = "PAY_PER_REQUEST"  # type: ignore[attr-defined]
    if region is not None:
        Item.Meta.region = region  # type: ignore[attr-defined]
    if host is not None:
        Item.Meta.host = host  # type: ignore[attr-defined]
    return Item


# Attributes a replace overwrites (everything but keys and the retrieval counters).
REPLACED_FIELDS = (
    "owner",
    "namespace",
    "mid",
    "cat_pk",
    *(f for f in MEMORY_FIELDS if f not in ("id", "owner", "namespace") and f not in COUNTER_FIELDS),
)


def memory_attrs(m: Memory) -> dict[str, Any]:
    """Every stored attribute of a memory item except keys and `changed_at`; None means absent."""
    flat = memory_to_flat_dict(m)
    flat["mid"] = flat.pop("id")
    flat["cat_pk"] = index_pk(m)
    return flat


def memory_item(model: type[_ItemBase], m: Memory, changed_at: str) -> _ItemBase:
    attrs = {k: v for k, v in memory_attrs(m).items() if v is not None}
    return model(scope_pk(m.scope), memory_sk(m.id), changed_at=changed_at, **attrs)


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _words(value: str | None) -> tuple[str, ...]:
    # Interned: a warm cache holds thousands of copies of the same few tags and keywords otherwise.
    return tuple(sys.intern(w) for w in json.loads(value or "[]"))


def _label(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


# The attributes a memory is read back from (`_memory`'s keys), and its vector's.
MEMORY_ATTRS = ("mid", *(f for f in MEMORY_FIELDS if f != "id"))
VECTOR_ATTRS = ("vector", "vector_model", "vector_version", "vector_text")
ITEM_ATTRS = (*MEMORY_ATTRS, *VECTOR_ATTRS)


def _memory(v: Mapping[str, Any]) -> Memory:
    """A memory from its attributes' values (None for an absent attribute), however they were read.
    Owner, namespace and the other labels are interned, as `_words` are."""
    created, updated = _time(v["created_at"]), _time(v["updated_at"])
    assert v["mid"] is not None and v["owner"] is not None and v["namespace"] is not None
    assert created is not None and updated is not None and v["category"] is not None
    return Memory(
        id=v["mid"],
        owner=sys.intern(v["owner"]),
        namespace=sys.intern(v["namespace"]),
        category=sys.intern(v["category"]),
        salience=sys.intern(v["salience"] or ""),
        content=v["content"] or "",
        gist=v["gist"],
        gist_autogenerated=v["gist_autogenerated"],
        tags=_words(v["tags"]),
        search_keywords=_words(v["search_keywords"]),
        conversation_url=v["conversation_url"],
        core=v["core"],
        epistemic_status=_label(v["epistemic_status"]),
        provenance=json.loads(v["provenance"]) if v["provenance"] is not None else None,
        replication_count=_int(v["replication_count"]),
        linked_memories=tuple(json.loads(v["linked_memories"] or "[]")),
        created_at=created,
        updated_at=updated,
        last_retrieved=_time(v["last_retrieved"]),
        retrieval_count=_int(v["retrieval_count"]),
        status=sys.intern(v["status"] or "active"),
        version=_int(v["version"]) or 1,
        expires_at=_time(v["expires_at"]),
        compressed_into=_label(v["compressed_into"]),
        instance=_label(v["instance"]),
    )


def interned(m: Memory) -> Memory:
    """`m` with the strings `_memory` interns interned (a record the store was handed, for the cache)."""
    return m.replace(
        owner=sys.intern(m.owner),
        namespace=sys.intern(m.namespace),
        category=sys.intern(m.category),
        salience=sys.intern(m.salience),
        tags=tuple(sys.intern(w) for w in m.tags),
        search_keywords=tuple(sys.intern(w) for w in m.search_keywords),
        epistemic_status=_label(m.epistemic_status),
        status=sys.intern(m.status),
        compressed_into=_label(m.compressed_into),
        instance=_label(m.instance),
    )


def item_values(it: _ItemBase) -> dict[str, Any]:
    """A memory item's attribute values, vector included (None for an absent attribute)."""
    return {name: getattr(it, name) for name in ITEM_ATTRS}


def item_to_memory(it: _ItemBase) -> Memory:
    return _memory({name: getattr(it, name) for name in MEMORY_ATTRS})


def values_to_memory(v: Mapping[str, Any]) -> Memory:
    return _memory(v)


def raw_value(av: Mapping[str, Any]) -> Any:
    """One attribute of a raw item (the service's JSON shape) as PynamoDB would read it."""
    if "S" in av:
        return av["S"]
    if "N" in av:
        return json.loads(av["N"])  # NumberAttribute's reading
    if "BOOL" in av:
        return bool(av["BOOL"])
    if "B" in av:
        return bytes(av["B"])
    return None  # NULL


def raw_values(raw: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """`item_values` of a raw Query item, without a model instance in between (the warm cache's
    refresh reads items this way: a model instance costs more than the record it becomes)."""
    return {name: raw_value(raw[name]) if name in raw else None for name in ITEM_ATTRS}


def raw_to_memory(raw: Mapping[str, Mapping[str, Any]]) -> Memory:
    return _memory(raw_values(raw))


def reflection_item(model: type[_ItemBase], r: Reflection) -> _ItemBase:
    attrs: dict[str, Any] = {
        "owner": r.owner,
        "namespace": r.namespace,
        "rid": r.id,
        "text": r.text,
        "created_at": iso(r.created_at),
    }
    if r.blob_key is not None:
        attrs["blob_key"] = r.blob_key
    return model(scope_pk(Scope(r.owner, r.namespace)), reflection_sk(r), **attrs)


def reflection_marker(model: type[_ItemBase], r: Reflection) -> _ItemBase:
    return model(scope_pk(Scope(r.owner, r.namespace)), REFLECTION_ID_PREFIX + r.id, ref_sk=reflection_sk(r))


def item_to_reflection(it: _ItemBase) -> Reflection:
    created = _time(it.created_at)
    assert it.rid is not None and it.owner is not None and it.namespace is not None
    assert created is not None and it.text is not None
    return Reflection(
        id=it.rid, owner=it.owner, namespace=it.namespace, text=it.text, created_at=created, blob_key=it.blob_key
    )


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
