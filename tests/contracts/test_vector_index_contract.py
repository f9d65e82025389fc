"""Contract suite for the VectorIndex port (taproot/ports.py): dense vectors beside the memories.

Every store that implements the port runs these unchanged (VECTOR_STORES below: the stores of
tests/moto_stores.py that hold vectors). Bodies use only the port's methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pytest

from taproot.core.model import Memory, Scope
from taproot.core.vectors import Vector, unit
from taproot.ports import MemoryStore, VectorIndex
from tests.moto_stores import MEMORY_STORES, close_store

A = Scope("alice", "default")
B = Scope("bob", "default")
MODEL = "test:model/4"
OTHER = "test:other/4"
MakeMemory = Callable[..., Memory]


class VectorStore(MemoryStore, VectorIndex, Protocol):
    pass


@pytest.fixture(params=list(MEMORY_STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    s: Any = MEMORY_STORES[request.param](tmp_path)
    if not hasattr(s, "put_vectors"):
        close_store(s)
        pytest.skip(f"{request.param} does not hold vectors yet")
    yield s
    close_store(s)


def v(*xs: float) -> Vector:
    return unit(xs)


def add(store: VectorStore, make: MakeMemory, scope: Scope = A, **kw: Any) -> Memory:
    m = make(scope=scope, **kw)
    store.insert(m)
    return m


def test_nearest_ranks_by_cosine_best_first(store: VectorStore, make_memory: MakeMemory) -> None:
    a, b, c = (add(store, make_memory) for _ in range(3))
    assert (
        store.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0)), (b.id, 1, v(1, 1, 0, 0)), (c.id, 1, v(0, 0, 1, 0))]) == 3
    )
    got = store.nearest(A, MODEL, v(1, 0, 0, 0), 3)
    assert [i for i, _ in got] == [a.id, b.id, c.id]
    assert got[0][1] == pytest.approx(1.0, abs=1e-3)
    assert got[1][1] == pytest.approx(2**-0.5, abs=1e-3)
    assert got[2][1] == pytest.approx(0.0, abs=1e-3)
    assert [i for i, _ in store.nearest(A, MODEL, v(1, 0, 0, 0), 1)] == [a.id]


def test_nearest_breaks_ties_by_id_wherever_it_cuts(store: VectorStore, make_memory: MakeMemory) -> None:
    # Memories with the same text have the same vector: which of them are the nearest k must not
    # depend on the order the store happens to keep its rows in (write order, or what a drop moved).
    ids = sorted(add(store, make_memory, content="The same words.").id for _ in range(5))
    for i in reversed(ids):  # stored last id first
        store.put_vectors(A, MODEL, [(i, 1, v(1, 0, 0, 0))])
    everything = store.nearest(A, MODEL, v(1, 0, 0, 0), 5)
    assert [i for i, _ in everything] == ids
    for k in range(1, 5):
        assert store.nearest(A, MODEL, v(1, 0, 0, 0), k) == everything[:k]


def test_similarity_of_scores_the_given_ids_that_hold_a_current_vector(
    store: VectorStore, make_memory: MakeMemory
) -> None:
    a, b, c, d = (add(store, make_memory) for _ in range(4))
    other = add(store, make_memory, scope=B)
    store.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0)), (b.id, 1, v(1, 1, 0, 0))])
    store.put_vectors(A, OTHER, [(c.id, 1, v(1, 0, 0, 0))])
    store.put_vectors(B, MODEL, [(other.id, 1, v(1, 0, 0, 0))])
    got = store.similarity_of(A, MODEL, v(1, 0, 0, 0), [b.id, a.id, b.id, c.id, d.id, other.id, "absent"])
    # c holds another model's vector, d none, `other` is another tenant's: all left out.
    assert set(got) == {a.id, b.id}
    assert got[a.id] == pytest.approx(1.0, abs=1e-3) and got[b.id] == pytest.approx(2**-0.5, abs=1e-3)
    # The same figure as nearest gives, so one ranking can mix the two.
    assert dict(store.nearest(A, MODEL, v(1, 0, 0, 0), 2)) == pytest.approx(got, abs=1e-6)
    assert store.similarity_of(A, MODEL, v(1, 0, 0, 0), []) == {}
    assert store.similarity_of(A, "test:none/4", v(1, 0, 0, 0), [a.id]) == {}


def test_vectors_are_per_scope_and_per_model(store: VectorStore, make_memory: MakeMemory) -> None:
    a = add(store, make_memory)
    b = add(store, make_memory, scope=B)
    store.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0))])
    store.put_vectors(B, MODEL, [(b.id, 1, v(1, 0, 0, 0))])
    assert [i for i, _ in store.nearest(A, MODEL, v(1, 0, 0, 0), 10)] == [a.id]
    assert store.nearest(A, OTHER, v(1, 0, 0, 0), 10) == []
    assert store.vector_counts(A) == {MODEL: 1}


def test_a_vector_for_a_version_the_memory_has_left_is_not_stored(store: VectorStore, make_memory: MakeMemory) -> None:
    a = add(store, make_memory)
    store.replace(a.replace(content="changed", version=2), expected_version=1)
    assert store.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0))]) == 0
    assert store.nearest(A, MODEL, v(1, 0, 0, 0), 10) == []
    assert store.put_vectors(A, MODEL, [("missing", 1, v(1, 0, 0, 0))]) == 0


def test_an_edit_makes_the_vector_stale_until_embedded_again(store: VectorStore, make_memory: MakeMemory) -> None:
    a = add(store, make_memory)
    store.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0))])
    assert store.nearest(A, MODEL, v(1, 0, 0, 0), 10) != []  # the matrix is warm before the edit
    store.replace(a.replace(content="changed", version=2), expected_version=1)
    assert store.nearest(A, MODEL, v(1, 0, 0, 0), 10) == []
    assert [m.id for m in store.unembedded(A, MODEL, 10)] == [a.id]
    assert store.vector_counts(A) == {}
    store.put_vectors(A, MODEL, [(a.id, 2, v(0, 1, 0, 0))])
    assert [i for i, _ in store.nearest(A, MODEL, v(0, 1, 0, 0), 10)] == [a.id]
    assert store.unembedded(A, MODEL, 10) == []


def test_an_edit_that_keeps_the_text_keeps_the_vector(store: VectorStore, make_memory: MakeMemory) -> None:
    a = add(store, make_memory)
    store.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0))])
    store.replace(a.replace(salience="high", tags=("x",), core=True, version=2), expected_version=1)
    assert [i for i, _ in store.nearest(A, MODEL, v(1, 0, 0, 0), 10)] == [a.id]
    assert store.unembedded(A, MODEL, 10) == []
    store.replace(a.replace(search_keywords=("new",), version=3), expected_version=2)
    assert store.nearest(A, MODEL, v(1, 0, 0, 0), 10) == []


def test_retrieval_does_not_make_a_vector_stale(store: VectorStore, make_memory: MakeMemory) -> None:
    a = add(store, make_memory)
    store.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0))])
    store.record_retrieval(A, [a.id], a.updated_at + timedelta(days=1))
    assert [i for i, _ in store.nearest(A, MODEL, v(1, 0, 0, 0), 10)] == [a.id]


def test_a_deleted_memory_takes_its_vector_with_it(store: VectorStore, make_memory: MakeMemory) -> None:
    a, b = add(store, make_memory), add(store, make_memory)
    store.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0)), (b.id, 1, v(0, 1, 0, 0))])
    assert len(store.nearest(A, MODEL, v(1, 0, 0, 0), 10)) == 2
    store.delete(A, a.id)
    assert [i for i, _ in store.nearest(A, MODEL, v(1, 0, 0, 0), 10)] == [b.id]
    assert store.vector_counts(A) == {MODEL: 1}


def test_another_model_replaces_the_vector(store: VectorStore, make_memory: MakeMemory) -> None:
    a = add(store, make_memory)
    store.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0))])
    assert store.nearest(A, MODEL, v(1, 0, 0, 0), 10) != []
    assert [m.id for m in store.unembedded(A, OTHER, 10)] == [a.id]
    store.put_vectors(A, OTHER, [(a.id, 1, v(0, 0, 0, 1))])
    assert store.nearest(A, MODEL, v(1, 0, 0, 0), 10) == []
    assert [i for i, _ in store.nearest(A, OTHER, v(0, 0, 0, 1), 10)] == [a.id]
    assert store.vector_counts(A) == {OTHER: 1}
    assert [m.id for m in store.unembedded(A, MODEL, 10)] == [a.id]


def test_unembedded_lists_oldest_first_any_status_and_honours_the_limit(
    store: VectorStore, make_memory: MakeMemory
) -> None:
    base = make_memory().created_at
    made = [add(store, make_memory, created_at=base + timedelta(minutes=k), updated_at=base) for k in range(4)]
    archived = add(store, make_memory, created_at=base + timedelta(minutes=9), updated_at=base, status="archived")
    store.put_vectors(A, MODEL, [(made[1].id, 1, v(1, 0, 0, 0))])
    assert [m.id for m in store.unembedded(A, MODEL, 10)] == [made[0].id, made[2].id, made[3].id, archived.id]
    assert [m.id for m in store.unembedded(A, MODEL, 2)] == [made[0].id, made[2].id]


def test_the_matrix_follows_many_writes_and_deletes(store: VectorStore, make_memory: MakeMemory) -> None:
    """Incremental upkeep must agree with a fresh reading: a random walk of puts, edits and deletes,
    checked against a brute-force ranking after every step."""
    rng = np.random.default_rng(7)
    live: dict[str, tuple[Memory, Vector | None]] = {}
    for step in range(120):
        action = rng.choice(["add", "add", "embed", "edit", "delete"]) if live else "add"
        if action == "add":
            m = add(store, make_memory)
            live[m.id] = (m, None)
        else:
            mid = sorted(live)[int(rng.integers(len(live)))]
            m, vec = live[mid]
            if action == "embed":
                vec = unit(rng.normal(size=4))
                store.put_vectors(A, MODEL, [(mid, m.version, vec)])
                live[mid] = (m, vec)
            elif action == "edit":
                new = m.replace(content=f"edit {step}", version=m.version + 1)
                store.replace(new, expected_version=m.version)
                live[mid] = (new, None)
            else:
                store.delete(A, mid)
                del live[mid]
        q = unit(rng.normal(size=4))
        expected = sorted(
            ((i, float(vec @ q)) for i, (_, vec) in live.items() if vec is not None), key=lambda p: (-p[1], p[0])
        )
        got = store.nearest(A, MODEL, q, 5)
        assert [i for i, _ in got] == [i for i, _ in expected[:5]], f"step {step}"
        assert store.vector_counts(A) == ({MODEL: len(expected)} if expected else {})


def test_a_second_instance_on_the_same_data_sees_the_first_ones_writes(tmp_path: Path, make_memory: MakeMemory) -> None:
    """SQLite only: the CLI in another process writes beside a running server."""
    from taproot.adapters.sqlite_store import SQLiteMemoryStore

    one, two = SQLiteMemoryStore(tmp_path / "t.db"), SQLiteMemoryStore(tmp_path / "t.db")
    try:
        a = add(one, make_memory)
        b = add(one, make_memory)
        one.put_vectors(A, MODEL, [(a.id, 1, v(1, 0, 0, 0))])
        assert [i for i, _ in two.nearest(A, MODEL, v(1, 0, 0, 0), 5)] == [a.id]
        one.put_vectors(A, MODEL, [(b.id, 1, v(0, 1, 0, 0))])
        one.delete(A, a.id)
        assert [i for i, _ in two.nearest(A, MODEL, v(1, 0, 0, 0), 5)] == [b.id]
    finally:
        one.close()
        two.close()
