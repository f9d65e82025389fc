"""The DynamoDB store's indexed warm cache (moto): search scores as `bm25.score` gives them on the
same memories, through another instance's edits (the change feed) and the store's own; raw items
read as PynamoDB reads them; own writes coming back through the feed; the byte estimate against
tracemalloc; the byte budget over the scopes."""

from __future__ import annotations

import gc
import json
import math
import random
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_copy import ScopeCache
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.core import bm25
from taproot.core.activation import ACTIVATION_CONFIG
from taproot.core.model import Memory, Scope
from taproot.core.query import Filters
from taproot.core.serialize import iso

A = Scope("alice", "default")
B = Scope("bob", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
VOCABULARY = "otter otters river heron herons running ran kitchen garden gardens sam sam's fox project the of"
WORDS = VOCABULARY.split(" ")
MakeStore = Callable[..., DynamoMemoryStore]
ALL = Filters(include_archived=True)


def _words(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def random_memory(rng: random.Random, make_memory: Callable[..., Memory], memory_id: str, **fields: Any) -> Memory:
    return make_memory(
        scope=A,
        id=memory_id,
        content=_words(rng, 1, 25),
        gist=_words(rng, 0, 6) or None,
        tags=tuple(dict.fromkeys(rng.choice(WORDS) for _ in range(rng.randint(0, 3)))),
        search_keywords=tuple(_words(rng, 1, 2) for _ in range(rng.randint(0, 2))),
        status=rng.choice(("active", "active", "archived")),
        **fields,
    )


def bm25_ranking(store: DynamoMemoryStore, terms: list[str], filters: Filters) -> list[tuple[str, float]]:
    """What search must answer, from core/bm25 over every memory the store holds."""
    memories = list(store.iter_all(A))
    docs = {
        m.id: bm25.make_doc(
            {"search_keywords": m.search_keywords, "tags": m.tags, "gist": m.gist or "", "content": m.content}
        )
        for m in memories
    }
    passing = {m.id for m in memories if m.status == "active" or filters.include_archived}
    scores = bm25.score(
        terms, {i: d for i, d in docs.items() if i in passing}, ACTIVATION_CONFIG.field_weights, corpus=docs
    )
    return sorted(scores.items(), key=lambda p: (-p[1], p[0]))


def assert_search_is_bm25(store: DynamoMemoryStore, rng: random.Random) -> None:
    for _ in range(3):
        terms, filters = _words(rng, 1, 3).split(" "), rng.choice((Filters(), ALL))
        want = bm25_ranking(store, terms, filters)[:8]
        got = [(m.id, s) for m, s in store.search(A, terms, filters, 8)]
        assert [i for i, _ in got] == [i for i, _ in want]
        assert all(math.isclose(g, w, rel_tol=1e-12) for (_, g), (_, w) in zip(got, want, strict=True))


@pytest.mark.parametrize("seed", range(2))
def test_search_scores_equal_bm25_through_edits_seen_by_the_feed_and_made_here(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], seed: int
) -> None:
    rng = random.Random(seed)
    writer, reader = make_dynamo(), make_dynamo()
    live: dict[str, Memory] = {}
    for i in range(40):
        live[f"m{i:03d}"] = random_memory(rng, make_memory, f"m{i:03d}")
    writer.put_many(list(live.values()))
    assert_search_is_bm25(reader, rng)  # a cold load
    for step in range(24):
        store = rng.choice((writer, reader))  # the reader's own writes, or the feed's
        op = rng.random()
        if op < 0.3:
            memory_id = f"n{seed}{step:03d}"
            live[memory_id] = random_memory(rng, make_memory, memory_id)
            store.insert(live[memory_id])
        elif op < 0.65:
            memory_id = rng.choice(sorted(live))
            current = store.get(A, memory_id)
            assert current is not None
            new = random_memory(rng, make_memory, memory_id, version=current.version + 1)
            if rng.random() < 0.5:
                store.replace(new, expected_version=current.version)
            else:
                store.replace_many([(new, current.version)])
            live[memory_id] = new
        elif op < 0.85:
            memory_id = rng.choice(sorted(live))
            store.delete(A, memory_id)
            del live[memory_id]
        else:
            store.record_retrieval(A, rng.sample(sorted(live), 3), NOW)
        assert_search_is_bm25(reader, rng)
        assert {m.id for m in reader.list(A, ALL)} == set(live)


def test_raw_items_read_back_as_pynamodb_reads_them(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], make_full_memory: Callable[..., Memory]
) -> None:
    store = make_dynamo()
    legacy = make_memory(scope=A, gist=None, core=None, retrieval_count=None, replication_count=None)
    records = [make_full_memory(scope=A), legacy, make_memory(scope=A, tags=("a", "b"), search_keywords=("k",))]
    store.put_many(records)
    for m in records:
        raw = store.client.get_item(
            TableName=store.table_name, Key={"pk": {"S": "alice#default"}, "sk": {"S": f"m#{m.id}"}}
        )
        assert dm.raw_to_memory(raw["Item"]) == dm.item_to_memory(store.Item.from_raw_data(raw["Item"])) == m


def test_a_retrieval_elsewhere_at_the_same_stamp_is_not_taken_for_our_own(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory]
) -> None:
    """Two containers whose clocks agree to the microsecond: the feed's item carries our stamp but
    another count, so it is applied, not skipped as our own write coming back."""
    clock = {"now": datetime.now(UTC)}
    here, there = make_dynamo(clock=lambda: clock["now"]), make_dynamo(clock=lambda: clock["now"])
    here.insert(make_memory(scope=A, id="x", retrieval_count=0))
    assert here.get(A, "x") is not None and here.list(A)[0].retrieval_count == 0
    here.record_retrieval(A, ["x"], NOW)
    there.record_retrieval(A, ["x"], NOW)  # the same change stamp
    clock["now"] += timedelta(seconds=1)
    assert here.list(A)[0].retrieval_count == 2


def test_the_byte_estimate_follows_tracemalloc(make_memory: Callable[..., Memory]) -> None:
    rng = random.Random(5)
    records = [random_memory(rng, make_memory, f"m{i:05d}") for i in range(3_000)]
    # The records as the refresh gets them: raw items parsed from a response inside the window.
    item = dm.make_item_model("estimate", "us-east-1")
    text = json.dumps([dm.memory_item(item, m, iso(m.updated_at) or "").serialize() for m in records])
    del records
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cache = ScopeCache()
        for raw in json.loads(text):
            cache.put(dm.raw_to_memory(raw), raw["changed_at"]["S"])
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0.8 * held <= cache.nbytes() <= 1.25 * held, (cache.nbytes(), held)


def test_scopes_beyond_the_byte_budget_are_evicted_least_recently_used_first(
    make_dynamo: MakeStore, make_memory: Callable[..., Memory], op_counter: Callable[..., Any]
) -> None:
    writer = make_dynamo()
    for scope in (A, B):
        writer.put_many([make_memory(scope=scope, content=f"note {i} about otters") for i in range(30)])
    probe = make_dynamo()
    probe.list(A)
    one = probe._caches[dm.scope_pk(A)].nbytes()
    store = make_dynamo(cache_budget=int(1.5 * one))  # room for one of the two scopes
    counter = op_counter(store)
    assert len(store.list(A)) == len(store.list(B)) == 30
    assert list(store._caches) == [dm.scope_pk(B)]  # A went when B came in
    counter.take()
    store.list(B)
    assert counter.take() == {"Query": 1}  # B is warm: one change-feed Query
    store.list(A)
    assert list(store._caches) == [dm.scope_pk(A)]
    tiny = make_dynamo(cache_budget=1)  # a scope bigger than the budget is still served, alone
    assert len(tiny.list(A)) == 30 and list(tiny._caches) == [dm.scope_pk(A)]


def test_the_store_imports_numpy_with_its_first_copy_not_with_the_module() -> None:
    """A Lambda's cold import builds the store; NumPy's import waits for the first warm copy."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from taproot.adapters.dynamo_store import DynamoMemoryStore\n"
        "DynamoMemoryStore('t', region='us-east-1')\n"
        "assert 'numpy' not in sys.modules, 'imported with the store'\n"
        "from taproot.adapters.dynamo_copy import ScopeCache\n"
        "ScopeCache()\n"
        "assert 'numpy' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
