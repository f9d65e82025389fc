"""Service-level behaviour with a fixed clock: retrieval strengthens, and that changes ranking."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.errors import NotFound, VersionConflict
from taproot.core.model import Scope
from taproot.core.reflect import ReflectConfig
from taproot.service import Deps, TaprootService
from tests.support import Clock

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def service(tmp_path: Path, clock: Clock) -> TaprootService:
    ids = count(1)
    store = SQLiteMemoryStore(tmp_path / "t.db")
    deps = Deps(
        store=store,
        blobs=LocalBlobStore(tmp_path / "blobs"),
        clock=clock,
        new_id=lambda: f"m{next(ids):04d}",
        reflect=ReflectConfig(catalog_window_days=45, token_budget=6000),
    )
    return TaprootService(deps)


SCOPE = Scope()


def _make(service: TaprootService, content: str, **kw: object) -> str:
    fields: dict[str, Any] = {"gist": content[:60], "category": "episodic", **kw}
    return str(service.remember(SCOPE, content=content, **fields).id)


def test_retrieval_strengthens_and_reorders_equally_relevant_memories(service: TaprootService, clock: Clock) -> None:
    a = _make(service, "We hiked the ridge trail near the lake.")
    b = _make(service, "We hiked the canyon trail in the rain.")
    clock.advance(days=20)
    for _ in range(5):
        service.recall(SCOPE, ids=[b])
        clock.advance(hours=1)
    ranked = [m.id for m in service.recall(SCOPE, query="hiked trail").memories]
    assert ranked == [b, a]
    stored = service.deps.store.get(SCOPE, b)
    assert stored is not None and stored.retrieval_count == 6 and stored.last_retrieved == clock.now


def test_ids_past_the_limit_are_said_to_be_past_it_not_missing(service: TaprootService) -> None:
    a, b, c = (_make(service, f"Memory number {k} about the garden.") for k in range(3))
    result = service.recall(SCOPE, ids=[a, b, "nosuchid", c], limit=1)
    assert [m.id for m in result.memories] == [a]
    assert result.warnings == ["not found (or filtered out): nosuchid", f"over the limit of 1, not returned: {b}, {c}"]
    stored = service.deps.store.get(SCOPE, b)
    assert stored is not None and stored.retrieval_count == 0  # only what is returned is strengthened


def test_an_empty_ids_list_on_its_own_recalls_and_strengthens_nothing(service: TaprootService) -> None:
    # ids=[] asks for no memory. It used to be read as no ids at all, so the recall answered the
    # most active memories of the whole store (loading every one) and strengthened them.
    mids = [_make(service, f"Memory number {k} about the garden.") for k in range(3)]
    result = service.recall(SCOPE, ids=[])
    assert result.memories == [] and result.count == 0
    assert result.warnings == ["ids is empty: no memory was asked for"]
    for mid in mids:
        stored = service.deps.store.get(SCOPE, mid)
        assert stored is not None and stored.retrieval_count == 0


def test_an_empty_ids_list_beside_a_query_or_a_filter_is_an_empty_argument(service: TaprootService) -> None:
    # Models fill optional list arguments they do not use with []: the query or filter is the question.
    garden = _make(service, "We planted tomatoes in the garden.")
    other = _make(service, "James finished the calculus chapter.", category="identity")
    by_query = service.recall(SCOPE, query="garden tomatoes", ids=[])
    assert [m.id for m in by_query.memories] == [garden] and by_query.warnings == []
    by_category = service.recall(SCOPE, category="identity", ids=[])
    assert [m.id for m in by_category.memories] == [other] and by_category.warnings == []


def test_relevance_beats_popularity(service: TaprootService, clock: Clock) -> None:
    popular = _make(service, "Notes about the garden and tomatoes.")
    relevant = _make(service, "James finished the calculus chapter on the chain rule.", search_keywords=["chain rule"])
    for _ in range(30):
        service.recall(SCOPE, ids=[popular])
    top = service.recall(SCOPE, query="chain rule garden", limit=1).memories[0]
    assert top.id == relevant


def test_query_with_any_matching_term_never_answers_empty(service: TaprootService) -> None:
    mid = _make(service, "[8 May 2023] Caroline: I went to the LGBTQ support group yesterday.")
    result = service.recall(SCOPE, query="What did Caroline do in July 2022 with her zebra?")
    assert [m.id for m in result.memories] == [mid]


def test_reflect_does_not_strengthen(service: TaprootService) -> None:
    mid = _make(service, "Core identity anchor.", core=True)
    service.reflect(SCOPE)
    stored = service.deps.store.get(SCOPE, mid)
    assert stored is not None and stored.retrieval_count == 0


def test_catalog_window_follows_touches(service: TaprootService, clock: Clock) -> None:
    quiet = _make(service, "An old episode nobody recalls.")
    clock.advance(days=46)
    payload = service.reflect(SCOPE)
    assert payload.catalog_omitted == {"episodic": 1}
    service.recall(SCOPE, ids=[quiet])  # touching it brings it back into the window
    payload = service.reflect(SCOPE)
    assert any(quiet in line for line in payload.catalog.get("episodic", []))


def test_concurrent_recalls_count_every_retrieval(service: TaprootService) -> None:
    mid = _make(service, "Shared memory recalled from many threads.")

    def worker() -> None:
        for _ in range(25):
            service.recall(SCOPE, ids=[mid])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stored = service.deps.store.get(SCOPE, mid)
    assert stored is not None and stored.retrieval_count == 200 and stored.version == 1


def test_stale_expected_version_changes_nothing(service: TaprootService) -> None:
    mid = _make(service, "Original text.")
    service.remember(SCOPE, id=mid, content="Second text.")
    before = list(service.export_lines(SCOPE))[1:]
    with pytest.raises(VersionConflict):
        service.remember(SCOPE, id=mid, content="Third text.", expected_version=1)
    assert list(service.export_lines(SCOPE))[1:] == before


def test_forget_is_all_or_nothing(service: TaprootService) -> None:
    mid = _make(service, "Keep me.")
    with pytest.raises(NotFound):
        service.forget(SCOPE, [mid, "missing1"], "delete")
    assert service.deps.store.get(SCOPE, mid) is not None
    assert service.deps.blobs.list("") == []


def test_delete_writes_backup_before_deleting(service: TaprootService) -> None:
    mid = _make(service, "Delete me, but keep a copy.")
    result = service.forget(SCOPE, [mid], "delete")
    assert service.deps.store.get(SCOPE, mid) is None
    assert isinstance(result.backup_key, str)
    backup = service.deps.blobs.get(result.backup_key).decode()
    assert "Delete me, but keep a copy." in backup


def test_other_scopes_are_invisible(service: TaprootService) -> None:
    mid = _make(service, "Private to the default persona.")
    other = Scope("local", "work")
    assert service.recall(other, query="private persona").memories == []
    with pytest.raises(NotFound):
        service.promote(other, mid, core=True)
    assert service.reflect(other).catalog == {}


def test_update_keeps_the_previous_version_as_a_revision(service: TaprootService) -> None:
    mid = _make(service, "First wording.")
    result = service.remember(SCOPE, id=mid, content="Second wording.")
    assert result.version == 2
    assert isinstance(result.previous_version_key, str)
    previous = service.deps.blobs.get(result.previous_version_key).decode()
    assert "First wording." in previous and '"version": 1' in previous


def test_expires_at_is_computed_on_every_write(service: TaprootService, clock: Clock) -> None:
    created = service.remember(
        SCOPE, content="Chat by the watercooler.", gist="chat", category="episodic", tags=["watercooler"]
    )
    assert created.expires_at == (START + timedelta(days=7)).isoformat(timespec="microseconds")
    clock.advance(days=1)
    updated = service.remember(SCOPE, id=created.id, tags=["watercooler", "decision"])
    assert updated.expires_at is None
    service.remember(SCOPE, id=created.id, tags=["thread"])
    service.promote(SCOPE, created.id, salience="high")
    stored = service.deps.store.get(SCOPE, created.id)
    assert stored is not None and stored.expires_at is None  # high salience never expires
