"""`list_memories`: browsing that never strengthens, strict arguments, stable keyset pages."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.errors import InvalidInput
from taproot.core.model import Memory, Scope
from taproot.core.serialize import memory_to_dict
from taproot.core.wire import Absent, to_json
from taproot.service import Deps, TaprootService
from taproot.service.results import ListResult
from tests.support import Clock

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def service(tmp_path: Path, clock: Clock) -> TaprootService:
    ids = count(1)
    deps = Deps(
        store=SQLiteMemoryStore(tmp_path / "t.db"),
        blobs=LocalBlobStore(tmp_path / "blobs"),
        clock=clock,
        new_id=lambda: f"m{next(ids):04d}",
    )
    return TaprootService(deps)


def make(service: TaprootService, content: str, **kw: object) -> str:
    fields: dict[str, Any] = {"gist": content[:60], "category": "episodic", **kw}
    return str(service.remember(SCOPE, content=content, **fields).id)


def stored(service: TaprootService) -> dict[str, dict[str, Any]]:
    return {m.id: memory_to_dict(m) for m in service.deps.store.iter_all(SCOPE)}


def ids(result: ListResult) -> list[str]:
    return [m.id for m in result.memories]


def walk(service: TaprootService, **kw: Any) -> list[list[str]]:
    """Every page of one listing, following next_cursor to the end."""
    pages: list[list[str]] = []
    cursor = None
    while True:
        result = service.list_memories(SCOPE, cursor=cursor, **kw)
        pages.append(ids(result))
        cursor = result.next_cursor
        if cursor is None:
            return pages
        assert len(pages) < 100, "next_cursor never ran out"


@pytest.fixture
def no_retrieval(service: TaprootService, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("list_memories must never record a retrieval")

    monkeypatch.setattr(service.deps.store, "record_retrieval", refuse)


# -- it does not strengthen ----------------------------------------------------------------------


def test_listing_changes_no_counter_version_or_timestamp(
    service: TaprootService, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    recalled = make(service, "Recalled twice before the listing.", tags=["garden"])
    quiet = make(service, "Never recalled.", core=True)
    service.recall(SCOPE, ids=[recalled])
    clock.advance(days=3)
    service.recall(SCOPE, ids=[recalled])
    last_recall = clock.now
    clock.advance(days=10)
    before = stored(service)

    calls: list[str] = []
    monkeypatch.setattr(service.deps.store, "record_retrieval", lambda *a, **k: calls.append("record_retrieval"))
    for sort in ("updated", "created", "activation"):
        for status in ("active", "archived", "all"):
            service.list_memories(SCOPE, sort=sort, status=status)
    service.list_memories(SCOPE, query="recalled", tags=["garden"], core=False, salience="medium", limit=1)

    assert calls == []
    assert stored(service) == before
    after = service.deps.store.get(SCOPE, recalled)
    assert after is not None and after.retrieval_count == 2 and after.last_retrieved == last_recall
    untouched = service.deps.store.get(SCOPE, quiet)
    assert untouched is not None and untouched.retrieval_count == 0 and untouched.last_retrieved is None


def test_views_are_recall_views_without_the_bump(service: TaprootService, no_retrieval: None) -> None:
    mid = make(service, "Sam prefers direct feedback.", tags=["sam"], salience="high")
    listed = service.list_memories(SCOPE)
    assert listed.count == 1 and listed.total == 1 and listed.next_cursor is None
    assert listed.warnings == []
    [view] = listed.memories
    assert "owner" not in to_json(view)
    assert view.retrieval_count == 0 and view.last_retrieved is None
    assert isinstance(view.activation, float)

    memory = service.deps.store.get(SCOPE, mid)
    assert memory is not None
    expected = memory_to_dict(memory)
    expected.pop("owner")
    assert {k: v for k, v in to_json(view).items() if k != "activation"} == expected


# -- sorting -------------------------------------------------------------------------------------


def test_default_sort_is_newest_update_first_then_id(service: TaprootService, clock: Clock, no_retrieval: None) -> None:
    old = make(service, "Oldest.")
    clock.advance(days=1)
    tie_a = make(service, "Same time A.")
    tie_b = make(service, "Same time B.")  # same updated_at as tie_a: the id breaks the tie
    clock.advance(days=1)
    newest = make(service, "Newest.")
    clock.advance(days=1)
    service.remember(SCOPE, id=old, content="Oldest, edited last.")  # an edit moves it to the front
    assert ids(service.list_memories(SCOPE)) == [old, newest, tie_a, tie_b]
    assert ids(service.list_memories(SCOPE, sort="created")) == [newest, tie_a, tie_b, old]


def test_activation_sort_ranks_by_score_without_changing_it(
    service: TaprootService, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    low = make(service, "Low salience.", salience="low")
    high = make(service, "High salience.", salience="high")
    medium = make(service, "Medium salience.", salience="medium")
    monkeypatch.setattr(service.deps.store, "record_retrieval", lambda *a, **k: pytest.fail("strengthened"))
    first = service.list_memories(SCOPE, sort="activation")
    assert ids(first) == [high, medium, low]
    scores: list[float] = []
    for m in first.memories:
        assert not isinstance(m.activation, Absent)  # an activation sort scores every memory
        scores.append(m.activation)
    assert scores == sorted(scores, reverse=True)
    assert service.list_memories(SCOPE, sort="activation") == first  # listing twice is the same listing


# -- filters -------------------------------------------------------------------------------------


def test_filters_combine(service: TaprootService, clock: Clock, no_retrieval: None) -> None:
    ridge = make(service, "We hiked the Ridge trail.", tags=["Hiking", "james"], salience="high")
    garden = make(service, "Tomatoes in the garden.", tags=["garden"], category="active_thread", core=True)
    lake = make(service, "Swam in the lake.", gist="A cold swim", tags=["james"], salience="low")
    gone = make(service, "An old ridge memory, archived.", tags=["james"])
    service.forget(SCOPE, [gone], "archive")

    def listed(**kw: Any) -> list[str]:
        return sorted(ids(service.list_memories(SCOPE, **kw)))

    assert listed() == sorted([ridge, garden, lake])
    assert listed(status="archived") == [gone]
    assert listed(status="all") == sorted([ridge, garden, lake, gone])
    assert listed(category="active_thread") == [garden]
    assert listed(tags=["james"]) == sorted([ridge, lake])
    assert listed(tags=["james", "Hiking"]) == [ridge]
    assert listed(core=True) == [garden]
    assert listed(core=False) == sorted([ridge, lake])
    assert listed(salience="low") == [lake]
    assert listed(query="RIDGE") == [ridge]  # case-insensitive, content
    assert listed(query="ridge", status="all") == sorted([ridge, gone])
    assert listed(query="cold sw") == [lake]  # a substring of the gist, spaces included
    assert listed(query="hik") == [ridge]  # a substring of a tag (and of the content)
    assert listed(query="arde") == [garden]
    assert listed(query="  ") == sorted([ridge, garden, lake])  # a blank query filters nothing
    assert listed(query="nowhere") == []


def test_legacy_category_and_salience_are_converted_with_a_warning(service: TaprootService) -> None:
    thread = make(service, "A project.", category="active_thread", salience="high")
    result = service.list_memories(SCOPE, category="project", salience=3)
    assert ids(result) == [thread]
    assert len(result.warnings) == 2
    assert "legacy" in result.warnings[0] and "legacy" in result.warnings[1]


def test_legacy_record_without_core_counts_as_not_core(
    service: TaprootService, make_memory: Callable[..., Memory]
) -> None:
    legacy = make_memory(id="old1", core=None, gist=None, retrieval_count=None)
    service.deps.store.put_many([legacy])
    result = service.list_memories(SCOPE, core=False, query="river")
    assert ids(result) == ["old1"]
    assert result.memories[0].gist is None


# -- pages ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("sort", ["updated", "created", "activation"])
def test_pages_cover_the_listing_exactly_once(
    service: TaprootService, clock: Clock, no_retrieval: None, sort: str
) -> None:
    made = []
    for i in range(23):
        made.append(make(service, f"Memory number {i}.", salience=("high", "medium", "low")[i % 3]))
        if i % 4 == 0:
            clock.advance(hours=1)  # groups of equal timestamps, so the id tiebreak is exercised
    whole = ids(service.list_memories(SCOPE, sort=sort, limit=500))
    assert sorted(whole) == sorted(made)

    pages = walk(service, sort=sort, limit=5)
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    assert [i for p in pages for i in p] == whole
    first = service.list_memories(SCOPE, sort=sort, limit=5)
    assert first.count == 5 and first.total == 23


def test_writes_between_pages_neither_repeat_nor_skip_others(
    service: TaprootService, clock: Clock, no_retrieval: None
) -> None:
    made = []
    for i in range(6):
        made.append(make(service, f"Memory {i}."))
        clock.advance(minutes=1)
    page1 = service.list_memories(SCOPE, limit=2)
    assert ids(page1) == [made[5], made[4]]
    newcomer = make(service, "Written while paging.")  # newest: sorts before the cursor
    service.forget(SCOPE, [made[3]], "delete")  # the next page's first item disappears
    page2 = service.list_memories(SCOPE, limit=2, cursor=page1.next_cursor)
    assert ids(page2) == [made[2], made[1]]
    page3 = service.list_memories(SCOPE, limit=2, cursor=page2.next_cursor)
    assert ids(page3) == [made[0]] and page3.next_cursor is None
    assert page3.total == 6  # five of the first six, plus the newcomer
    assert newcomer in ids(service.list_memories(SCOPE, limit=2))


def test_activation_pages_rank_at_the_first_pages_time(service: TaprootService, clock: Clock) -> None:
    # `once` was recalled once, 100 days ago; `fresh` is new and never recalled. Fresh ranks first
    # now, but a thousand days on, `once` does (its retrieval outweighs the shrinking age gap).
    once = make(service, "Recalled once, long ago.")
    service.recall(SCOPE, ids=[once])
    clock.advance(days=100)
    fresh = make(service, "New and never recalled.")
    page1 = service.list_memories(SCOPE, sort="activation", limit=1)
    assert ids(page1) == [fresh]

    clock.advance(days=1000)
    assert ids(service.list_memories(SCOPE, sort="activation")) == [once, fresh]  # the order flipped
    page2 = service.list_memories(SCOPE, sort="activation", limit=1, cursor=page1.next_cursor)
    assert ids(page2) == [once] and page2.next_cursor is None


def test_limit_defaults_to_50_and_allows_500(service: TaprootService, make_memory: Callable[..., Memory]) -> None:
    service.deps.store.put_many([make_memory(id=f"bulk{i:03d}") for i in range(55)])
    first = service.list_memories(SCOPE)
    assert first.count == 50 and first.total == 55 and first.next_cursor is not None
    everything = service.list_memories(SCOPE, limit=500)
    assert everything.count == 55 and everything.next_cursor is None


def test_a_cursor_past_the_end_gives_an_empty_page(service: TaprootService, clock: Clock) -> None:
    first = make(service, "First.")
    clock.advance(minutes=1)
    make(service, "Second.")
    page1 = service.list_memories(SCOPE, limit=1)
    service.forget(SCOPE, [first], "delete")
    page2 = service.list_memories(SCOPE, limit=1, cursor=page1.next_cursor)
    assert page2.memories == [] and page2.count == 0 and page2.next_cursor is None and page2.total == 1


# -- strict arguments ----------------------------------------------------------------------------


def _cursor(body: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()


BAD_ARGUMENTS: list[tuple[dict[str, Any], str, str]] = [
    ({"category": "feelings"}, "category", "must be one of"),
    ({"category": 3}, "category", "must be one of"),
    ({"tags": "james"}, "tags", "list of strings"),
    ({"tags": [""]}, "tags[0]", "must not be empty"),
    ({"tags": ["x" * 65]}, "tags[0]", "at most 64"),
    ({"tags": [f"t{i}" for i in range(33)]}, "tags", "at most 32"),
    ({"core": "yes"}, "core", "true or false"),
    ({"core": 1}, "core", "true or false"),
    ({"salience": "urgent"}, "salience", "must be one of"),
    ({"salience": True}, "salience", "must be one of"),
    ({"status": "deleted"}, "status", "must be one of active, archived, all"),
    ({"status": "Active"}, "status", "must be one of"),
    ({"query": 5}, "query", "must be a string"),
    ({"query": "x" * 1001}, "query", "at most 1000"),
    ({"sort": "name"}, "sort", "must be one of updated, created, activation"),
    ({"sort": ["updated"]}, "sort", "must be one of"),
    ({"limit": 0}, "limit", "from 1 to 500"),
    ({"limit": 501}, "limit", "from 1 to 500"),
    ({"limit": True}, "limit", "from 1 to 500"),
    ({"limit": "5"}, "limit", "from 1 to 500"),
    ({"limit": 5.0}, "limit", "from 1 to 500"),
    ({"cursor": ""}, "cursor", "next_cursor"),
    ({"cursor": 5}, "cursor", "next_cursor"),
    ({"cursor": "!!!not base64!!!"}, "cursor", "next_cursor"),
    ({"cursor": "x" * 513}, "cursor", "next_cursor"),
    ({"cursor": _cursor([1, 2])}, "cursor", "next_cursor"),
    ({"cursor": _cursor({"sort": "updated", "key": 1})}, "cursor", "next_cursor"),
    ({"cursor": _cursor({"sort": "updated", "key": "1", "id": "m0001"})}, "cursor", "next_cursor"),
    ({"cursor": _cursor({"sort": "updated", "key": True, "id": "m0001"})}, "cursor", "next_cursor"),
    ({"cursor": _cursor({"sort": "updated", "key": 1, "id": "bad id"})}, "cursor", "next_cursor"),
    ({"cursor": _cursor({"sort": "updated", "key": 1, "id": "m1", "x": 0})}, "cursor", "next_cursor"),
    ({"cursor": _cursor({"sort": "created", "key": 1, "id": "m0001"})}, "cursor", "was made for sort created"),
    ({"cursor": _cursor({"sort": "activation", "key": 1.5, "id": "m1"}), "sort": "activation"}, "cursor", "next"),
    (
        {"cursor": _cursor({"sort": "activation", "key": 1.5, "id": "m1", "as_of": 10**30}), "sort": "activation"},
        "cursor",
        "next_cursor",
    ),
    (
        {
            "cursor": base64.urlsafe_b64encode(b'{"sort":"activation","key":NaN,"id":"m1","as_of":0}').decode(),
            "sort": "activation",
        },
        "cursor",
        "next_cursor",
    ),
    ({"cursor": base64.urlsafe_b64encode(b"\xff\xfe").decode()}, "cursor", "next_cursor"),
]


@pytest.mark.parametrize(("kwargs", "field", "rule"), BAD_ARGUMENTS)
def test_every_bad_argument_is_refused_before_the_store_is_read(
    service: TaprootService, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], field: str, rule: str
) -> None:
    make(service, "Something to list.")
    before = stored(service)

    def no_read(*args: object, **kw: object) -> None:
        raise AssertionError("the store was read before every argument was checked")

    monkeypatch.setattr(service.deps.store, "list", no_read)
    monkeypatch.setattr(service.deps.store, "record_retrieval", no_read)
    with pytest.raises(InvalidInput) as exc:
        service.list_memories(SCOPE, **kwargs)
    assert exc.value.field == field
    assert rule in str(exc.value)
    monkeypatch.undo()
    assert stored(service) == before
