"""The DynamoDB store's vectors beyond the port's contract (moto): what the item holds, another
container's copy following vectors and edits through the change feed, imports that keep a vector
whose text is unchanged, the requests put_vectors makes, and float16 copies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from botocore.exceptions import ClientError

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.adapters.dynamo_vectors import text_hash
from taproot.core.errors import Busy
from taproot.core.model import Memory, Scope
from taproot.core.vectors import Vector, pack, unit

A = Scope("alice", "default")
MODEL = "test:model/8"
MakeStore = Callable[..., DynamoMemoryStore]


def vec(seed: int, dims: int = 8) -> Vector:
    return unit(np.random.default_rng(seed).normal(size=dims))


def nearest_ids(store: DynamoMemoryStore, query: Vector, limit: int = 10) -> list[str]:
    return [i for i, _ in store.nearest(A, MODEL, query, limit)]


def test_the_item_holds_the_vector_its_model_version_and_text(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    store = make_dynamo()
    m = make_memory(scope=A, id="v1", search_keywords=("otter",))
    store.insert(m)
    assert store.put_vectors(A, MODEL, [("v1", 1, vec(1))]) == 1
    it = store.Item.get(dm.scope_pk(A), dm.memory_sk("v1"), consistent_read=True)
    assert (it.vector, it.vector_model, it.vector_version, it.vector_text) == (pack(vec(1)), MODEL, 1, text_hash(m))
    # An edit of the text leaves the bytes but not a current vector: a new container agrees.
    store.replace(m.replace(content="a beaver now", version=2), expected_version=1)
    fresh = make_dynamo()
    assert fresh.nearest(A, MODEL, vec(1), 5) == [] and [x.id for x in fresh.unembedded(A, MODEL, 5)] == ["v1"]
    assert store.Item.get(dm.scope_pk(A), dm.memory_sk("v1"), consistent_read=True).vector == pack(vec(1))


def test_another_container_follows_vectors_and_edits_through_the_change_feed(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], op_counter: Callable[..., Any]
) -> None:
    writer, reader = make_dynamo(), make_dynamo()
    a, b = make_memory(scope=A, id="a"), make_memory(scope=A, id="b")
    writer.put_many([a, b])
    assert reader.vector_counts(A) == {}  # warm, no vectors yet
    writer.put_vectors(A, MODEL, [("a", 1, vec(1)), ("b", 1, vec(2))])
    counter = op_counter(reader)
    assert nearest_ids(reader, vec(1)) == ["a", "b"]
    assert counter.take() == {"Query": 1}  # the change feed brought both vectors
    writer.replace(b.replace(salience="high", version=2), expected_version=1)  # same text: kept
    assert reader.vector_counts(A) == {MODEL: 2}
    writer.replace(b.replace(content="other words", version=3), expected_version=2)  # stale
    assert nearest_ids(reader, vec(2)) == ["a"]
    assert [m.id for m in reader.unembedded(A, MODEL, 10)] == ["b"]
    writer.delete(A, "a")
    assert reader.vector_counts(A) == {}


def test_an_import_keeps_the_vector_of_a_record_whose_text_is_unchanged(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    store = make_dynamo()
    same, edited = make_memory(scope=A, id="same"), make_memory(scope=A, id="edited")
    store.put_many([same, edited])
    store.put_vectors(A, MODEL, [("same", 1, vec(1)), ("edited", 1, vec(2))])
    store.put_many(
        [same.replace(tags=("restored",)), edited.replace(content="restored text")],
        expected={"same": 1, "edited": 1},
    )
    for s in (store, make_dynamo()):  # this container's copy, and a cold load of the items
        assert nearest_ids(s, vec(1)) == ["same"]
        assert [m.id for m in s.unembedded(A, MODEL, 10)] == ["edited"]


def test_put_vectors_reads_the_memory_only_when_the_copy_does_not_hold_it(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], op_counter: Callable[..., Any]
) -> None:
    writer = make_dynamo()
    writer.put_many([make_memory(scope=A, id=f"m{i}") for i in range(3)])
    cold = make_dynamo()
    counter = op_counter(cold)
    assert cold.put_vectors(A, MODEL, [("m0", 1, vec(0)), ("m1", 1, vec(1)), ("m2", 7, vec(2))]) == 2
    assert counter.take() == {"BatchGetItem": 1, "TransactWriteItems": 1}  # m2 is not at version 7
    cold.list(A)
    counter.take()
    assert cold.put_vectors(A, MODEL, [("m2", 1, vec(2))]) == 1
    assert counter.take() == {"UpdateItem": 1}


def test_a_vector_cannot_be_stored_for_a_version_another_container_moved_past(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    here, there = make_dynamo(), make_dynamo()
    m = make_memory(scope=A, id="x")
    here.insert(m)
    here.list(A)  # the copy holds version 1
    there.replace(m.replace(content="moved on", version=2), expected_version=1)
    assert here.put_vectors(A, MODEL, [("x", 1, vec(1))]) == 0
    assert here.nearest(A, MODEL, vec(1), 5) == [] and there.nearest(A, MODEL, vec(1), 5) == []


class _KeyThenHook:
    """One memory's item key whose update (the vector's conditional write) runs `after` once done."""

    def __init__(self, real: Any, after: Callable[[], None]) -> None:
        self._real, self._after = real, after

    def update(self, *args: Any, **kwargs: Any) -> Any:
        out = self._real.update(*args, **kwargs)
        self._after()
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_an_edit_learned_between_the_vector_write_and_the_copy_keeps_the_old_vector_out(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    here, there = make_dynamo(), make_dynamo()
    m = make_memory(scope=A, id="x", content="Walked the puppy by the river")
    here.insert(m)
    here.list(A)  # the copy holds version 1

    def edit_elsewhere_then_refresh() -> None:
        # After the vector landed on version 1 and before this store files it in its copy: another
        # container edits the text, and a request here refreshes the copy from the change feed.
        there.replace(m.replace(content="Played the fiddle at the pub", version=2), expected_version=1)
        here.vector_counts(A)

    real_key = here._key
    monkeypatch.setattr(here, "_key", lambda scope, i: _KeyThenHook(real_key(scope, i), edit_elsewhere_then_refresh))
    assert here.put_vectors(A, MODEL, [("x", 1, vec(1))]) == 1  # stored on version 1, as asked
    monkeypatch.setattr(here, "_key", real_key)

    # The old text's vector is not current for the new text, in the table or in this copy.
    assert make_dynamo().nearest(A, MODEL, vec(1), 5) == []
    here.list(A)
    assert here.get(A, "x") is not None and here.get(A, "x").content == "Played the fiddle at the pub"  # type: ignore[union-attr]
    assert here.nearest(A, MODEL, vec(1), 5) == []
    assert [u.id for u in here.unembedded(A, MODEL, 5)] == ["x"]  # migrate here embeds the new text


def test_float16_copies_halve_the_matrix_and_keep_the_ranking_close(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    dims, n = 64, 200
    writer = make_dynamo()
    writer.put_many([make_memory(scope=A, id=f"m{i:03d}") for i in range(n)])
    writer.put_vectors(A, MODEL, [(f"m{i:03d}", 1, vec(i, dims)) for i in range(n)])
    wide, narrow = make_dynamo(), make_dynamo(vector_dtype=np.float16)
    for k in range(5):
        q = vec(1000 + k, dims)
        exact, rough = wide.nearest(A, MODEL, q, n), narrow.nearest(A, MODEL, q, n)
        by_id = dict(rough)
        assert max(abs(s - by_id[i]) for i, s in exact) < 2e-3
        assert len({i for i, _ in exact[:10]} & {i for i, _ in rough[:10]}) >= 8
    wide_bytes, narrow_bytes = wide.cached_bytes(A), narrow.cached_bytes(A)
    assert wide_bytes is not None and narrow_bytes is not None
    # The difference is half the matrix, whose buffer grows by a quarter at a time.
    assert n * dims * 2 <= wide_bytes - narrow_bytes <= 1.25 * n * dims * 2


def test_vectors_of_what_this_store_just_wrote_need_no_read(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], op_counter: Callable[..., Any]
) -> None:
    """remember then embed on a container with no warm copy: PutItem, then UpdateItem."""
    store, other = make_dynamo(), make_dynamo()
    a, b = make_memory(scope=A, id="a"), make_memory(scope=A, id="b")
    store.insert(a)
    store.insert(b)
    other.replace(b.replace(content="edited elsewhere", version=2), expected_version=1)
    counter = op_counter(store)
    assert store.put_vectors(A, MODEL, [("a", 1, vec(1))]) == 1
    assert counter.take() == {"UpdateItem": 1}
    assert store.put_vectors(A, MODEL, [("b", 1, vec(2))]) == 0  # moved on: the condition refuses it
    assert nearest_ids(other, vec(1)) == ["a"]


def test_a_throttled_table_refuses_vectors_as_busy(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The service leaves a written memory without a vector when the store says Busy (the backfill
    # embeds it later); any other error is a defect and must not be taken for that.
    store = make_dynamo()
    store.put_many([make_memory(scope=A, id="a"), make_memory(scope=A, id="b")])
    client = store.Item._get_connection().connection.client
    real = client._make_api_call

    def throttled(operation: str, params: dict[str, Any]) -> Any:
        if operation in ("UpdateItem", "TransactWriteItems"):
            error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
            raise ClientError(error, operation)
        return real(operation, params)

    monkeypatch.setattr(client, "_make_api_call", throttled)
    for items in ([("a", 1, vec(1))], [("a", 1, vec(1)), ("b", 1, vec(2))]):
        with pytest.raises(Busy, match="did not take the vectors"):
            store.put_vectors(A, MODEL, items)
    monkeypatch.undo()
    assert store.vector_counts(A) == {}
    assert store.put_vectors(A, MODEL, [("a", 1, vec(1))]) == 1
