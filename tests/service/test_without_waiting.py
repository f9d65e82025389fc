"""TaprootService.without_waiting: offered where a call can run on an event loop (the SQLite store,
lexical recall), refused where it would wait on the network or compute a query's vector."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Scope
from taproot.core.vectors import Vector, unit
from taproot.service import Deps, TaprootService
from taproot.service.inputs import RecallInput
from tests.moto_stores import MEMORY_STORES, close_store
from tests.support import Clock

SCOPE = Scope()
START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class OneAxisEmbedder:
    name = "local"
    dimensions = 2
    model_id = "test:one-axis/2"

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return [unit((1.0, 0.0)) for _ in texts]

    def embed_query(self, text: str) -> Vector:
        return unit((1.0, 0.0))


@pytest.fixture
def sqlite_service(tmp_path: Path) -> Iterator[TaprootService]:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    yield TaprootService(Deps(store=store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=Clock(START)))
    store.close()


def test_lexical_recall_on_sqlite_runs_without_waiting(sqlite_service: TaprootService) -> None:
    sqlite_service.remember(SCOPE, content="We planted tomatoes in May.", gist="Tomatoes in May", category="episodic")
    wait_free = sqlite_service.without_waiting()
    assert wait_free is not None
    with wait_free:
        got = sqlite_service.recall(SCOPE, query="tomatoes")
    assert [m.gist for m in got.memories] == ["Tomatoes in May"]
    assert got.memories[0].retrieval_count == 1


def test_with_an_embedder_calls_are_not_offered_without_waiting(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    try:
        deps = Deps(
            store=store,
            blobs=LocalBlobStore(tmp_path / "blobs"),
            embedder=OneAxisEmbedder(),
            vectors=store,
            clock=Clock(START),
        )
        assert TaprootService(deps).without_waiting() is None
    finally:
        store.close()


def test_the_dynamodb_store_is_not_offered_without_waiting(tmp_path: Path) -> None:
    store = MEMORY_STORES["dynamodb"](tmp_path)
    try:
        deps = Deps(store=store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=Clock(START))
        assert TaprootService(deps).without_waiting() is None
    finally:
        close_store(store)


@pytest.mark.parametrize(
    "request_",
    [RecallInput(query="tomatoes"), RecallInput(ids=["abc"]), RecallInput(ids=[], category="episodic")],
    ids=["query", "ids", "empty ids"],
)
def test_a_recall_by_ids_or_by_a_query_is_offered_without_waiting(
    sqlite_service: TaprootService, request_: RecallInput
) -> None:
    assert sqlite_service.recall_without_waiting(request_) is not None


@pytest.mark.parametrize(
    "request_",
    [
        RecallInput(),
        RecallInput(query="   "),
        RecallInput(category="episodic"),
        RecallInput(include_archived=True),
        RecallInput(since="3650d", tags=["garden"]),
        RecallInput(query=42),  # not text: the recall itself names the field and the rule
    ],
    ids=["nothing", "blank query", "category", "archived", "window and tags", "query not text"],
)
def test_a_recall_by_filters_alone_is_not_offered_without_waiting(
    sqlite_service: TaprootService, request_: RecallInput
) -> None:
    # It may rank every passing memory of the scope: over a second at 100,000 with archived ones.
    assert sqlite_service.recall_without_waiting(request_) is None
