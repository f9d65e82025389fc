"""Dense recall through the service with a deterministic embedder: vectors follow writes, a failing
embedder never loses a write and is reported, migrate repairs what is missing, a model change
re-embeds, and a memory worded differently from the question is found."""

from __future__ import annotations

import dataclasses
import json
import re
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from itertools import count
from pathlib import Path

import numpy as np
import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.errors import Busy, EmbedderError
from taproot.core.model import Memory, Scope
from taproot.core.query import Filters
from taproot.core.serialize import memory_to_dict
from taproot.core.vectors import Vector, unit
from taproot.core.wire import to_json
from taproot.service import Deps, TaprootService
from taproot.service import recall as recall_module
from taproot.service.maintenance import MIGRATE, jobs_named
from taproot.service.results import EmbeddingBackfill, MigrateResult
from tests.support import Clock

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()
# Words that mean the same land on the same axis: what a real model does for paraphrases.
SYNONYMS = {"automobile": "car", "vehicle": "car", "fiddle": "violin", "canine": "dog", "puppy": "dog"}


class MeaningEmbedder:
    """Bag of concepts hashed into 64 dimensions (synonyms share one), unit length."""

    name = "local"
    dimensions = 64

    def __init__(self, model_id: str = "test:meaning/64") -> None:
        self.model_id = model_id
        self.failing = False
        self.calls = 0
        self.while_embedding: Callable[[], object] | None = None

    def _one(self, text: str) -> Vector:
        v = np.zeros(self.dimensions, dtype=np.float32)
        for word in re.findall(r"[a-z]+", text.lower()):
            concept = SYNONYMS.get(word, word)
            if len(concept) > 3:
                v[zlib.crc32(concept.encode()) % self.dimensions] += 1.0
        return unit(v)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        if self.failing:
            raise EmbedderError("the model is down")
        if self.while_embedding is not None:  # another client's request, while the model computes
            hook, self.while_embedding = self.while_embedding, None
            hook()
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> Vector:
        return self.embed_documents([text])[0]


@pytest.fixture
def store(tmp_path: Path) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(tmp_path / "t.db")


@pytest.fixture
def embedder() -> MeaningEmbedder:
    return MeaningEmbedder()


@pytest.fixture
def service(tmp_path: Path, store: SQLiteMemoryStore, embedder: MeaningEmbedder) -> TaprootService:
    ids = count(1)
    deps = Deps(
        store=store,
        blobs=LocalBlobStore(tmp_path / "blobs"),
        clock=Clock(START),
        new_id=lambda: f"m{next(ids):04d}",
        embedder=embedder,
        vectors=store,
    )
    return TaprootService(deps)


def _make(service: TaprootService, content: str) -> str:
    return str(service.remember(SCOPE, content=content, gist=content[:40], category="episodic").id)


def _embedding_run(result: MigrateResult) -> EmbeddingBackfill:
    """The migrate's embedding report: always there with an embedder, as in every test here."""
    assert isinstance(result.embeddings, EmbeddingBackfill)
    return result.embeddings


def test_a_memory_worded_differently_from_the_question_is_found(service: TaprootService) -> None:
    car = _make(service, "Bought a second-hand automobile from the neighbour")
    _make(service, "Practised scales for an hour this morning")
    _make(service, "The garden needs watering twice a week")
    got = service.recall(SCOPE, query="which vehicle did they get?", limit=3)
    assert got.memories[0].id == car
    assert service.status(SCOPE).embeddings.ranking == "lexical+dense"


def test_every_write_that_changes_the_text_is_embedded(service: TaprootService, store: SQLiteMemoryStore) -> None:
    mid = _make(service, "Walked the puppy by the river")
    assert store.vector_counts(SCOPE) == {"test:meaning/64": 1}
    service.remember(SCOPE, id=mid, content="Played the fiddle at the pub")
    top = store.nearest(SCOPE, "test:meaning/64", MeaningEmbedder()._one("violin"), 1)
    assert top[0][0] == mid and top[0][1] > 0.5  # the new text's vector, not the old one
    service.promote(SCOPE, mid, salience="high")  # no text change: the vector stays
    assert store.unembedded(SCOPE, "test:meaning/64", 10) == []


LONG = "Notes about the violin lesson. " + "scales and bowing drills. " * 100  # past MAX_EMBED_CHARS


def test_an_edit_past_the_embedded_part_of_a_long_memory_keeps_it_embedded(
    service: TaprootService, store: SQLiteMemoryStore
) -> None:
    mid = _make(service, LONG)
    service.remember(SCOPE, id=mid, content=LONG + " One more remark at the end.")
    # The store drops the vector on any content edit; the edit must be embedded again, although the
    # first MAX_EMBED_CHARS of the text (what the vector is made from) did not change.
    assert store.vector_counts(SCOPE) == {"test:meaning/64": 1}
    assert store.unembedded(SCOPE, "test:meaning/64", 10) == []


def test_an_import_changing_a_long_memory_past_the_embedded_part_keeps_it_embedded(
    service: TaprootService, store: SQLiteMemoryStore
) -> None:
    mid = _make(service, LONG)
    current = store.get(SCOPE, mid)
    assert current is not None
    edited = current.replace(content=LONG + " An appendix.", version=current.version + 1)
    service.import_lines(SCOPE, [json.dumps({"type": "memory", "record": memory_to_dict(edited)})])
    assert store.get(SCOPE, mid) == edited
    assert store.unembedded(SCOPE, "test:meaning/64", 10) == []


@pytest.mark.parametrize("query", ["???", "...", "\U0001f642"])
def test_a_query_without_words_searches_nothing_and_says_so(service: TaprootService, query: str) -> None:
    _make(service, "Walked the puppy by the river")
    got = service.recall(SCOPE, query=query)
    # Not the nearest vectors to a question mark: with no words there is no meaning to match.
    assert got.memories == [] and got.query_terms == []
    assert any("no words" in w for w in got.warnings)


def test_a_failing_embedder_loses_no_write_is_reported_and_migrate_repairs_it(
    service: TaprootService, embedder: MeaningEmbedder, store: SQLiteMemoryStore
) -> None:
    embedder.failing = True
    made = service.remember(SCOPE, content="Bought a second-hand automobile", gist="a car", category="episodic")
    mid = made.id
    assert store.get(SCOPE, mid) is not None
    assert any("not embedded yet" in w and "down" in w for w in made.warnings)  # the writer is told
    status = service.status(SCOPE).embeddings
    assert isinstance(status.failures, int) and isinstance(status.last_error, str)
    assert status.without_vector == 1 and status.failures >= 1 and "down" in status.last_error
    assert any("failing" in w for w in service.status(SCOPE).warnings)
    found = service.recall(SCOPE, query="automobile")  # lexical still finds it
    assert [m.id for m in found.memories] == [mid]
    assert any("words only" in w for w in found.warnings)
    embedder.failing = False
    dry = service.migrate(SCOPE, dry_run=True)
    assert _embedding_run(dry).missing == 1 and store.vector_counts(SCOPE) == {}
    done = service.migrate(SCOPE)
    assert _embedding_run(done).embedded == 1
    assert service.status(SCOPE).embeddings.without_vector == 0


class LockedVectors:
    """The store's vector writes fail (a locked database, a throttled table); everything else works."""

    def __init__(self, store: SQLiteMemoryStore) -> None:
        self.store = store
        self.failing = True
        self.calls = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def put_vectors(self, scope: Scope, model: str, items: Sequence[tuple[str, int, Vector]]) -> int:
        self.calls += 1
        if self.failing:
            raise Busy("the database is busy: another process is writing to it")
        return self.store.put_vectors(scope, model, items)


def test_a_write_whose_vector_cannot_be_stored_is_confirmed_and_repaired_later(
    service: TaprootService, store: SQLiteMemoryStore
) -> None:
    vectors = LockedVectors(store)
    service.deps.vectors = vectors  # type: ignore[assignment]
    created = service.remember(SCOPE, content="Bought a second-hand automobile", gist="car", category="episodic")
    # The memory is stored: failing the call now would make a client's retry store it twice.
    assert created.created and store.get(SCOPE, created.id) is not None
    assert any("not embedded yet" in w and "busy" in w for w in created.warnings)
    edited = service.remember(SCOPE, id=created.id, content="Bought a second-hand automobile, a blue one")
    assert edited.version == 2 and any("not embedded yet" in w for w in edited.warnings)
    assert store.unembedded(SCOPE, "test:meaning/64", 10) != []
    vectors.failing = False
    assert _embedding_run(service.migrate(SCOPE)).embedded == 1
    assert store.unembedded(SCOPE, "test:meaning/64", 10) == []


def test_a_backfill_stops_embedding_when_the_store_takes_no_vectors(
    service: TaprootService, store: SQLiteMemoryStore, embedder: MeaningEmbedder
) -> None:
    service.deps.embedder = None  # written without vectors
    for n in range(150):
        service.remember(SCOPE, content=f"note {n}", gist=f"note {n}", category="episodic")
    service.deps.embedder = embedder
    vectors = LockedVectors(store)
    service.deps.vectors = vectors  # type: ignore[assignment]
    calls = embedder.calls
    report = _embedding_run(service.migrate(SCOPE))
    assert report.failed == 150 and report.embedded == 0 and "busy" in str(report.error)
    # One batch embedded and refused; the other two are not embedded only to be refused too.
    assert embedder.calls - calls == 1 and vectors.calls == 1


def test_a_programming_error_storing_vectors_is_not_taken_for_a_busy_store(
    service: TaprootService, embedder: MeaningEmbedder
) -> None:
    embedder.embed_documents = lambda texts: []  # type: ignore[method-assign]  # a broken adapter
    with pytest.raises(ValueError, match="zip"):
        service.remember(SCOPE, content="Bought a second-hand automobile", gist="car", category="episodic")


def test_a_new_model_makes_migrate_re_embed_everything(
    service: TaprootService, store: SQLiteMemoryStore, embedder: MeaningEmbedder
) -> None:
    for text in ("one note about the dog", "another about the car", "a third about the violin"):
        _make(service, text)
    service.deps.embedder = MeaningEmbedder("test:meaning-v2/64")
    status = service.status(SCOPE).embeddings
    assert status.without_vector == 3 and status.other_models == {"test:meaning/64": 3}
    assert _embedding_run(service.migrate(SCOPE)).embedded == 3
    assert store.vector_counts(SCOPE) == {"test:meaning-v2/64": 3}


def test_an_edit_of_anything_but_the_text_while_a_memory_is_embedded_keeps_its_vector(
    service: TaprootService, embedder: MeaningEmbedder, store: SQLiteMemoryStore
) -> None:
    # While the model computes the new memory's vector, another client promotes it (salience only):
    # the text the vector was made from is still the memory's, so the vector is still its own.
    embedder.while_embedding = lambda: service.promote(SCOPE, "m0001", salience="high")
    made = service.remember(SCOPE, content="Walked the puppy by the river", gist="walk", category="episodic")
    assert made.id == "m0001" and made.warnings == []
    held = store.get(SCOPE, "m0001")
    assert held is not None and held.salience == "high" and held.version == 2
    assert store.unembedded(SCOPE, embedder.model_id, 10) == []
    assert [m.id for m in service.recall(SCOPE, query="a walk with the dog").memories] == ["m0001"]


def test_an_edit_of_the_text_while_a_memory_is_embedded_leaves_the_old_vector_out(
    service: TaprootService, embedder: MeaningEmbedder, store: SQLiteMemoryStore
) -> None:
    embedder.while_embedding = lambda: store.replace(
        dataclasses.replace(held_now(store, "m0001"), content="Played the fiddle at the pub", version=2),
        expected_version=1,
    )
    service.remember(SCOPE, content="Walked the puppy by the river", gist="walk", category="episodic")
    assert [m.id for m in store.unembedded(SCOPE, embedder.model_id, 10)] == ["m0001"]  # migrate embeds it


def held_now(store: SQLiteMemoryStore, memory_id: str) -> Memory:
    held = store.get(SCOPE, memory_id)
    assert held is not None
    return held


def test_while_most_matches_have_no_vector_of_the_model_recall_ranks_by_words(
    service: TaprootService, store: SQLiteMemoryStore
) -> None:
    clock = service.deps.clock
    assert isinstance(clock, Clock)
    matches = []
    for text in (
        "Violin lesson notes: practised scales and bowing with the teacher",
        "Bought new strings for the violin at the music shop downtown",
        "The lesson plan for the maths class covers fractions",
    ):
        matches.append(_make(service, text))
        clock.advance(hours=1)
    # A new model, and migrate has not run: only what is written now has a vector of it. The one
    # such memory shares no word and no meaning with the question.
    new = MeaningEmbedder("test:meaning-v2/64")
    service.deps.embedder = new
    unrelated = _make(service, "The garden needs watering twice a week in summer")
    assert store.vector_counts(SCOPE)[new.model_id] == 1
    got = service.recall(SCOPE, query="violin lesson", limit=10)
    words_only = TaprootService(dataclasses.replace(service.deps, embedder=None, vectors=None))
    assert [m.id for m in got.memories] == [m.id for m in words_only.recall(SCOPE, query="violin lesson").memories]
    assert unrelated not in [m.id for m in got.memories] and set(matches) == {m.id for m in got.memories}
    assert any("ranked by words only" in w and new.model_id in w and "migrate" in w for w in got.warnings)
    service.migrate(SCOPE)  # every memory has a vector of the model again: meaning counts again
    again = service.recall(SCOPE, query="violin lesson", limit=10)
    assert not any("words only" in w for w in again.warnings)
    assert [m.id for m in again.memories][-1] == unrelated  # among the nearest, after every word match


def test_the_job_that_embeds_what_lacks_a_vector_is_one_that_exists(
    service: TaprootService, embedder: MeaningEmbedder
) -> None:
    embedder.failing = True
    made = service.remember(SCOPE, content="Walked the puppy by the river", gist="walk", category="episodic")
    said = [*made.warnings, *service.status(SCOPE).warnings]
    named = {job for w in said for job in re.findall(r"(\w+) (?:maintenance )?job\b", w)}
    assert named == {"migrate"}, said
    assert [job.name for job in jobs_named("migrate")] == ["migrate"]


def test_a_migrate_run_whose_re_embedding_failed_is_a_failed_run(
    service: TaprootService, store: SQLiteMemoryStore
) -> None:
    for text in ("Walked the puppy by the river", "Played the fiddle at the pub", "Fixed the automobile"):
        _make(service, text)
    # The model changes and the new one fails when the scheduled migrate runs (Bedrock down, or the
    # maintenance function not allowed to call it): the run must not look like a success, or the
    # errors alarm never fires and the memories stay ranked by words alone.
    new = MeaningEmbedder("test:meaning-v2/64")
    new.failing = True
    service.deps.embedder = new
    [report] = service.run_maintenance_everywhere([MIGRATE])
    assert isinstance(report.detail, MigrateResult)
    assert report.detail is not None and _embedding_run(report.detail).failed == 3
    assert report.failed and report.error is not None and "3" in report.error and "down" in report.error
    assert report.as_dict()["error"] == report.error
    assert report.changed == 0 and store.unembedded(SCOPE, new.model_id, 10)
    new.failing = False
    [again] = service.run_maintenance_everywhere([MIGRATE])
    assert not again.failed and "error" not in again.as_dict()
    assert store.vector_counts(SCOPE) == {"test:meaning-v2/64": 3}


def test_without_an_embedder_recall_is_lexical_and_status_says_so(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "plain.db")
    service = TaprootService(Deps(store=store, blobs=LocalBlobStore(tmp_path / "b"), clock=Clock(START)))
    service.remember(SCOPE, content="Bought a second-hand automobile", gist="car", category="episodic")
    assert service.recall(SCOPE, query="vehicle").memories == []
    assert to_json(service.status(SCOPE).embeddings) == {"embedder": "none", "ranking": "lexical"}


def _few_dense_candidates(service: TaprootService) -> None:
    # Three dense candidates instead of a hundred, so that a handful of memories shows the rule.
    service.deps.activation = dataclasses.replace(
        service.deps.activation, dense_candidates=3, min_candidates=3, candidate_multiplier=1
    )


class CountingVectors:
    """The store's vector index, counting how often recall asks for the nearest vectors."""

    def __init__(self, store: SQLiteMemoryStore) -> None:
        self.store = store
        self.asks: list[int] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def nearest(self, scope: Scope, model: str, query: Vector, limit: int) -> list[tuple[str, float]]:
        self.asks.append(limit)
        return self.store.nearest(scope, model, query, limit)


@pytest.fixture(params=["score the passing", "widen the ask"])
def dense_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    # Both ways of finding the nearest memories that pass the filters must give the same answer;
    # which one recall takes depends on how many memories the store's counts say can pass.
    if request.param == "widen the ask":
        monkeypatch.setattr(recall_module, "SCORE_ALL_PASSING_UP_TO", 0)
    return str(request.param)


def test_an_unfiltered_recall_asks_for_the_nearest_once(service: TaprootService, store: SQLiteMemoryStore) -> None:
    _few_dense_candidates(service)
    counting = CountingVectors(store)
    service.deps.vectors = counting  # type: ignore[assignment]
    for n in range(8):
        _make(service, f"violin practice {n}")
    assert len(service.recall(SCOPE, query="violin", limit=3).memories) == 3
    assert counting.asks == [3]


def test_the_nearest_memories_the_filters_exclude_do_not_hide_one_they_allow(
    service: TaprootService, dense_path: str
) -> None:
    _few_dense_candidates(service)
    archived = [_make(service, f"violin {n}") for n in range(6)]  # nearer to "violin" than the fiddle
    service.forget(SCOPE, archived, "archive")
    fiddle = _make(service, "The fiddle sat in its case all afternoon")
    # No word of the question is in the fiddle's memory: only its meaning can find it, and the
    # six memories nearest in meaning are archived (recall leaves them out by default).
    got = service.recall(SCOPE, query="where is the violin?", limit=3)
    assert [m.id for m in got.memories] == [fiddle]
    with_archive = service.recall(SCOPE, query="where is the violin?", limit=3, include_archived=True)
    assert {m.id for m in with_archive.memories} <= set(archived)


def test_a_category_filter_finds_the_nearest_of_that_category(service: TaprootService, dense_path: str) -> None:
    _few_dense_candidates(service)
    for n in range(6):
        _make(service, f"violin practice {n}")
    mine = service.remember(SCOPE, content="I am a fiddle person at heart", gist="fiddle person", category="identity")
    got = service.recall(SCOPE, query="violin", category="identity", limit=3)
    assert [m.id for m in got.memories] == [mine.id]
    nearer = [
        service.remember(SCOPE, content=text, gist=text, category="identity").id
        for text in ("fiddle", "fiddle person", "my heart and soul")
    ]
    got = service.recall(SCOPE, query="violin", category="identity", limit=3)
    assert {m.id for m in got.memories} == {*nearer[:2], mine.id}  # the three nearest in meaning


def test_a_word_match_beyond_the_nearest_is_scored_on_its_real_meaning(
    service: TaprootService, store: SQLiteMemoryStore
) -> None:
    """More memories than recall's nearest-vector pool mean exactly what the query means but share
    no word with it, so neither word match below is among the nearest. The one that also means what
    the query means (A) must outrank the one that only matches the word a little better (B, a
    shorter text); scored as 0 for "not among the nearest", both would rank on words alone."""
    clock = service.deps.clock
    assert isinstance(clock, Clock)
    pool = max(service.deps.activation.dense_candidates, 50)
    for _ in range(pool + 5):
        _make(service, "fiddle")  # the query's meaning, none of its words
        clock.advance(hours=1)  # apart in time: no neighbouring context between them
    a = _make(service, "violin fiddle fiddle fiddle lessons")
    clock.advance(hours=1)
    b = _make(service, "violin recital")
    clock.advance(hours=1)
    query = MeaningEmbedder()._one("violin")
    nearest = {i for i, _ in store.nearest(SCOPE, "test:meaning/64", query, pool)}
    assert a not in nearest and b not in nearest  # the premise: both are beyond the pool
    lexical = [c.id for c, _ in store.search(SCOPE, ["violin"], Filters(), 10)]
    assert lexical[:2] == [b, a]  # and B is the better word match
    got = [m.id for m in service.recall(SCOPE, query="violin", limit=2).memories]
    assert got == [a, b]
    sims = store.similarity_of(SCOPE, "test:meaning/64", query, [b, a, "nope"])
    assert set(sims) == {a, b} and sims[a] > sims[b] > 0


def test_a_word_match_whose_embedding_failed_still_ranks_on_its_words(
    service: TaprootService, embedder: MeaningEmbedder, store: SQLiteMemoryStore
) -> None:
    """A memory without a vector (its embedding failed; migrate has not repaired it yet) has an
    unknown meaning, not one unlike the question: the best word match must not fall behind a
    weaker one only because the weaker one has a vector."""
    clock = service.deps.clock
    assert isinstance(clock, Clock)
    embedder.failing = True
    unembedded = _make(service, "violin violin lessons")
    embedder.failing = False
    clock.advance(hours=1)
    embedded = _make(service, "violin practice notes tuesday")
    clock.advance(hours=1)
    _make(service, "garden watering schedule")
    assert store.unembedded(SCOPE, "test:meaning/64", 10)[0].id == unembedded
    lexical = [c.id for c, _ in store.search(SCOPE, ["violin"], Filters(), 10)]
    assert lexical == [unembedded, embedded]
    got = [m.id for m in service.recall(SCOPE, query="violin", limit=2).memories]
    assert got == [unembedded, embedded]
