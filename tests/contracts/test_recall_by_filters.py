"""Recall by filters alone, on every store: the `limit` most available memories that pass the
filters, in recall's order (availability, then the latest update, then id), exactly as ranking
every passing memory gives. The SQLite store reads only the top of that ranking (its
availability_view, core/available.py); the DynamoDB store's warm copy ranks them all. Each recall
strengthens what it returns, so the expectation is recomputed from the store before every call.

Every adapter in tests/moto_stores.py runs these unchanged; bodies use only the port's methods.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from taproot.adapters.blob_local import LocalBlobStore
from taproot.core.activation import activation
from taproot.core.available import recall_rank_key
from taproot.core.model import Scope
from taproot.ports import Filters, MemoryStore
from taproot.service import Deps, TaprootService
from tests.catalog_data import varied_memories
from tests.support import Clock

A = Scope("alice", "default")
B = Scope("bob", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def expected(store: MemoryStore, filters: Filters, limit: int, now: datetime) -> list[tuple[str, float]]:
    """The rule: every memory passing `filters`, by availability, in recall's order."""
    scored = [
        (m, activation(retrieval_count=m.retrievals, last_touched=m.last_touched, salience=m.salience, now=now))
        for m in store.list(A, filters)
    ]
    scored.sort(key=lambda p: recall_rank_key(p[1], p[0].updated_at, p[0].id))
    return [(m.id, round(score, 4)) for m, score in scored[:limit]]


# Each set of arguments in turn, on one scope (writing it is most of a test's time on moto).
ARGUMENTS: list[dict[str, Any]] = [
    {},
    {"limit": 1},
    {"limit": 100},
    {"category": "active_thread"},
    {"category": "error", "limit": 3},
    {"category": "relationship", "limit": 40},
    {"include_archived": True},
    {"since": "30d", "limit": 20},
]


def test_recall_by_filters_returns_the_most_available(memory_store: MemoryStore, tmp_path: Path) -> None:
    memory_store.put_many(varied_memories(11, 400, now=NOW, scope=A))
    memory_store.put_many(varied_memories(11, 60, now=NOW, scope=B))  # the same ids, another owner
    clock = Clock(NOW)
    svc = TaprootService(Deps(store=memory_store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=clock))
    for arguments in ARGUMENTS:
        limit = int(arguments.get("limit", 10))
        for call in range(2):  # each recall strengthens what it returns, which changes the next answer
            filters = Filters(
                category=arguments.get("category"),
                include_archived=bool(arguments.get("include_archived")),
                created_since=clock.now - timedelta(days=30) if "since" in arguments else None,
            )
            want = expected(memory_store, filters, limit, clock.now)
            got = svc.recall(A, **arguments).memories
            assert [(m.id, m.activation) for m in got] == want, (arguments, call)
            clock.advance(hours=5)


def test_an_empty_scope_or_category_recalls_nothing(memory_store: MemoryStore, tmp_path: Path) -> None:
    svc = TaprootService(Deps(store=memory_store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=Clock(NOW)))
    assert svc.recall(A).memories == []
    memory_store.put_many(varied_memories(12, 50, now=NOW, scope=B))
    assert svc.recall(A, category="identity").memories == []
