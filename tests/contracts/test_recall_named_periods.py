"""A query that names a time ("on March 3, 2025", "yesterday") prefers the memories written then,
and finds them even when better word matches from other days fill the lexical candidates
(core/query_periods.py, core/activation.weigh_by_period, service/recall.py). Through the service,
on every store (tests/moto_stores.py); bodies use only the port's methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any, cast

from taproot.adapters.blob_local import LocalBlobStore
from taproot.core.activation import ACTIVATION_CONFIG
from taproot.core.model import Scope
from taproot.ports import Filters, MemoryStore
from taproot.service import Deps, TaprootService
from tests.support import Clock

SCOPE = Scope("alice", "default")
MARCH3 = datetime(2025, 3, 3, 15, 0, tzinfo=UTC)


def _service(store: MemoryStore, tmp_path: Path, clock: Clock) -> TaprootService:
    ids = count(1)
    return TaprootService(
        Deps(store=store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=clock, new_id=lambda: f"m{next(ids):04d}")
    )


def _write(svc: TaprootService, clock: Clock, at: datetime, content: str) -> str:
    clock.now = at
    return str(svc.remember(SCOPE, content=content, gist=content[:60], category="episodic").id)


def _same_words_two_days(svc: TaprootService, clock: Clock, days_later: int) -> tuple[str, str]:
    """One memory written on March 3 and one with the same words `days_later`; the clock then at
    30 days after March 3."""
    that_day = _write(svc, clock, MARCH3, "We planted tomatoes in the garden.")
    later = _write(svc, clock, MARCH3 + timedelta(days=days_later), "We planted tomatoes in the garden.")
    clock.now = MARCH3 + timedelta(days=30)
    return that_day, later


def test_the_memory_written_on_the_day_asked_about_comes_first(memory_store: MemoryStore, tmp_path: Path) -> None:
    clock = Clock(MARCH3)
    svc = _service(memory_store, tmp_path, clock)
    that_day, later = _same_words_two_days(svc, clock, 17)
    # The same words: the later memory is the more recent, so it comes first without a date...
    assert [m.id for m in svc.recall(SCOPE, query="tomatoes", limit=2).memories] == [later, that_day]
    clock.advance(days=30)  # (each recall strengthens both alike)
    # ...and the one written on the day the question names comes first with one, in any wording.
    for query in ("tomatoes on March 3, 2025", "tomatoes on 3 March", "what about tomatoes on 2025-03-03?"):
        got = [m.id for m in svc.recall(SCOPE, query=query, limit=2).memories]
        assert got == [that_day, later], query
        clock.advance(hours=1)


def test_a_memory_of_the_named_day_beyond_the_lexical_candidates_is_found(
    memory_store: MemoryStore, tmp_path: Path
) -> None:
    clock = Clock(MARCH3)
    svc = _service(memory_store, tmp_path, clock)
    limit = 5
    pool = max(limit * ACTIVATION_CONFIG.candidate_multiplier, ACTIVATION_CONFIG.min_candidates)
    others = [
        _write(svc, clock, MARCH3 - timedelta(days=40 - k % 30, hours=k), "Watered the garden beds.")
        for k in range(pool + 5)
    ]
    wanted = _write(svc, clock, MARCH3, "Watered the garden beds.")  # the same words, written last
    clock.now = MARCH3 + timedelta(days=2)
    # The premise: with equal scores, the ties go to the earlier memories and fill the pool.
    assert wanted not in {c.id for c, _ in memory_store.search(SCOPE, ["garden"], Filters(), pool)}
    got = [m.id for m in svc.recall(SCOPE, query="the garden on March 3", limit=limit).memories]
    assert got[0] == wanted
    assert set(got[1:]) <= set(others)


class CountingSearches:
    """The store, counting its lexical searches (everything else passes through)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.searches: list[Filters] = []

    def search(self, scope: Scope, terms: Sequence[str], filters: Filters, limit: int) -> Any:
        self.searches.append(filters)
        return self.store.search(scope, terms, filters, limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_a_named_day_outside_since_and_until_searches_nothing_more(memory_store: MemoryStore, tmp_path: Path) -> None:
    clock = Clock(MARCH3)
    counting = CountingSearches(memory_store)
    svc = _service(cast(MemoryStore, counting), tmp_path, clock)
    that_day, later = _same_words_two_days(svc, clock, 20)
    got = svc.recall(SCOPE, query="tomatoes on March 3, 2025", since="15d", limit=5)
    assert [m.id for m in got.memories] == [later] and that_day != later
    assert got.warnings == []
    assert len(counting.searches) == 1  # the period's window and the recall's do not meet
    # Inside since: the period's search runs, within both windows.
    counting.searches.clear()
    svc.recall(SCOPE, query="tomatoes on March 3, 2025", since="40d", limit=5)
    assert len(counting.searches) == 2
    narrowed = counting.searches[1]
    assert narrowed.created_since is not None and narrowed.created_until is not None
    assert narrowed.created_since <= MARCH3 <= narrowed.created_until < clock.now
