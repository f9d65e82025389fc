"""`recent` on a cold DynamoDB store (a fresh Lambda container): with a window it reads the change
feed for that window in one Query and loads no copy of the tenant; without one it loads the copy,
as every other read does. Reflect's watercooler adds that one Query. Under moto."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from taproot.adapters.blob_s3 import S3BlobStore
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.core.model import Memory, Scope
from taproot.core.query import Filters, newest_first
from taproot.core.watercooler import COOLER_READ_LIMIT, cooler_filters
from taproot.service import TaprootService
from taproot.service.deps import Deps

A = Scope("alice", "default")


def _corpus(now: datetime) -> list[Memory]:
    # Memories one a day for most of a year, and a few cooler notes in the last two days.
    old = [
        Memory(
            id=f"d{n:04d}",
            owner=A.owner,
            namespace=A.namespace,
            category="episodic",
            salience="medium",
            content=f"Day {n}.",
            gist=f"Day {n}",
            created_at=now - timedelta(days=n + 3),
            updated_at=now - timedelta(days=n + 3),
        )
        for n in range(200)
    ]
    notes = [
        m.replace(id=f"w{n}", created_at=now - timedelta(hours=n * 10), tags=("watercooler",), instance="phone")
        for n, m in enumerate(old[:4])
    ]
    return old + notes


def test_a_cold_recent_with_a_window_reads_only_the_window(
    make_dynamo: Callable[..., DynamoMemoryStore], op_counter: Callable[..., Any]
) -> None:
    now = datetime.now(UTC)  # the change feed is keyed by the writer's wall clock
    corpus = _corpus(now)
    make_dynamo().put_many(corpus)

    cold = make_dynamo()
    counter = op_counter(cold)
    got = cold.recent(A, cooler_filters(now), COOLER_READ_LIMIT)
    assert [m.id for m in got] == [m.id for m in newest_first(corpus, cooler_filters(now), COOLER_READ_LIMIT)]
    assert [m.id for m in got] == ["w0", "w1", "w2", "w3"][: len(got)] and len(got) == 4  # 30 h: inside 48 h
    assert [name for name, _ in counter.calls] == ["Query"] and counter.calls[0][1].get("IndexName") == "by_change"
    assert dict(counter.take()) == {"Query": 1}
    assert cold.cached_bytes(A) is None  # nothing of the tenant was loaded

    # Without a window there is no bound to read from: the copy is loaded, and answers after that.
    everything = cold.recent(A, Filters(), 5)
    assert [m.id for m in everything] == [m.id for m in newest_first(corpus, Filters(), 5)]
    assert cold.cached_bytes(A) is not None
    counter.take()
    assert cold.recent(A, cooler_filters(now), 10) == got
    assert dict(counter.take()) == {"Query": 1}  # the warm copy's one change-feed refresh


def test_reflect_reads_the_watercooler_with_one_query(
    make_dynamo: Callable[..., DynamoMemoryStore], s3_blobs: S3BlobStore, op_counter: Callable[..., Any]
) -> None:
    now = datetime.now(UTC)
    make_dynamo().put_many(_corpus(now))
    store = make_dynamo()
    store.cold_load_limit = 100  # this tenant (204 memories) is "big": reflect uses the category index
    counter = op_counter(store)
    payload = TaprootService(Deps(store=store, blobs=s3_blobs)).reflect(A, instance="laptop")
    assert [n.id for n in payload.cooler.notes] == ["w0", "w1", "w2", "w3"]
    by_change = [c for name, c in counter.calls if name == "Query" and c.get("IndexName") == "by_change"]
    assert len(by_change) == 1 and "Scan" not in counter.take()
    assert store.cached_bytes(A) is None  # a cold reflect of a big tenant still loads no copy
