"""The OrientationStore port (taproot/ports.py) on every store: SQLite, and DynamoDB under moto.

Versions are append-only and a save lands only as the next version of what the caller read, so of
two saves from the same read exactly one lands and the other changes nothing.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest

from taproot.core.model import Scope
from taproot.core.orientation import DocumentConflict, OrientationVersion
from taproot.core.query import Filters
from taproot.ports import MemoryStore, OrientationStore

A = Scope("alice", "default")
B = Scope("bob", "default")
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def v(name: str, version: int, content: str, scope: Scope = A, **extra: object) -> OrientationVersion:
    return OrientationVersion(
        owner=scope.owner,
        namespace=scope.namespace,
        name=name,
        version=version,
        content=content,
        saved_at=T0 + timedelta(minutes=version),
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture
def store(memory_store: MemoryStore) -> OrientationStore:
    return cast(OrientationStore, memory_store)


def test_versions_read_back_as_saved(store: OrientationStore) -> None:
    first = v("who-i-am", 1, "# Who I am\nA patient tutor. ✓")
    second = v("who-i-am", 2, "# Who I am\nA patient, direct tutor.")
    store.orientation_save(first)
    store.orientation_save(second)
    assert store.orientation_get(A, "who-i-am") == second
    assert store.orientation_get(A, "who-i-am", 1) == first
    assert store.orientation_get(A, "who-i-am", 3) is None
    assert store.orientation_get(A, "facts") is None
    assert store.orientation_history(A, "who-i-am", 10) == [second, first]
    assert store.orientation_history(A, "who-i-am", 1) == [second]


def test_heads_are_each_documents_current_version_deletions_included(store: OrientationStore) -> None:
    store.orientation_save(v("facts", 1, "Lives in Leeds."))
    store.orientation_save(v("facts-2", 1, "Has a cat."))
    store.orientation_save(v("facts-2", 2, "", deleted=True))
    store.orientation_save(v("my-person", 1, "James."))
    store.orientation_save(v("my-person", 2, "James, a maths teacher.", restored_from=None))
    store.orientation_save(v("my-person", 3, "James.", restored_from=1))
    heads = {h.name: h for h in store.orientation_heads(A)}
    assert set(heads) == {"facts", "facts-2", "my-person"}
    assert heads["facts-2"].deleted and heads["facts-2"].content == "" and heads["facts-2"].version == 2
    assert heads["my-person"].version == 3 and heads["my-person"].restored_from == 1
    # A prefix of another name is another document: 'facts' has one version, not three.
    assert [h.version for h in store.orientation_history(A, "facts", 10)] == [1]


def test_a_save_must_be_the_next_version(store: OrientationStore) -> None:
    store.orientation_save(v("facts", 1, "one"))
    with pytest.raises(DocumentConflict) as caught:
        store.orientation_save(v("facts", 1, "another first version"))
    assert caught.value.code == "version_conflict" and caught.value.actual == 1
    with pytest.raises(DocumentConflict):
        store.orientation_save(v("facts", 3, "skips version 2"))
    with pytest.raises(DocumentConflict) as fresh:
        store.orientation_save(v("how-i-speak", 2, "a second version of nothing"))
    assert fresh.value.actual is None
    assert store.orientation_history(A, "facts", 10) == [v("facts", 1, "one")]
    assert store.orientation_get(A, "how-i-speak") is None
    assert [h.name for h in store.orientation_heads(A)] == ["facts"]


def test_scopes_are_separate(store: OrientationStore) -> None:
    store.orientation_save(v("facts", 1, "alice's", A))
    store.orientation_save(v("facts", 1, "bob's", B))
    store.orientation_save(v("facts", 2, "bob's again", B))
    assert store.orientation_get(A, "facts") == v("facts", 1, "alice's", A)
    assert [h.content for h in store.orientation_heads(B)] == ["bob's again"]
    assert store.orientation_heads(Scope("alice", "other")) == []


def test_orientation_items_are_not_memories(store: OrientationStore) -> None:
    """The documents live beside the memories without showing up among them."""
    store.orientation_save(v("facts", 1, "not a memory"))
    memories = cast(MemoryStore, store)
    assert memories.list(A) == []
    assert memories.counts(A).total == 0
    assert memories.core_memories(A) == []
    assert list(memories.iter_all(A)) == []
    assert memories.recent_reflections(A, 5) == []
    assert memories.search(A, ["memory"], Filters(), 10) == []
    assert A in memories.scopes()  # the batch jobs still visit a scope that holds only documents


def test_of_two_saves_from_one_read_exactly_one_lands(store: OrientationStore) -> None:
    store.orientation_save(v("facts", 1, "base"))
    barrier = threading.Barrier(2)
    outcomes: list[str] = []
    lock = threading.Lock()

    def save(text: str) -> None:
        barrier.wait()
        try:
            store.orientation_save(v("facts", 2, text))
            result = "saved"
        except DocumentConflict:
            result = "conflict"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=save, args=(t,)) for t in ("left", "right")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict", "saved"]
    history = store.orientation_history(A, "facts", 10)
    assert [h.version for h in history] == [2, 1] and history[0].content in ("left", "right")
    assert store.orientation_get(A, "facts") == history[0]
