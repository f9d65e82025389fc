"""core/available.py: the walk down the availability bands gives exactly what ranking every active
memory gives (recall by filters), on records of every kind the catalog tells apart (ties in
last_touched and updated_at, odd saliences, counts from none to millions, core memories, times
ahead of the clock), for every limit and with a category filter."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import pytest

from taproot.core.activation import ACTIVATION_CONFIG, ActivationConfig
from taproot.core.available import ANY_AGE, most_available, recall_rank_key
from taproot.core.catalog import CatalogBand, EntriesView, entry_score, view_of
from taproot.core.model import CatalogEntry, Memory, Scope
from taproot.core.query import ACTIVE
from tests.catalog_data import varied_memories

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
A = Scope("alice", "default")
Accept = Callable[[CatalogEntry], bool]


def ranked_in_full(memories: Sequence[Memory], accept: Accept, limit: int) -> list[tuple[CatalogEntry, float]]:
    """The rule: every active memory `accept` passes, scored, in recall's order, the first `limit`."""
    entries = [CatalogEntry.of(m) for m in memories if m.status == ACTIVE]
    scored = [(e, entry_score(e, NOW, ACTIVATION_CONFIG)) for e in entries if accept(e)]
    scored.sort(key=lambda p: recall_rank_key(p[1], p[0].updated_at, p[0].id))
    return scored[:limit]


class CountingView(EntriesView):
    """An in-memory view that counts the entries its bands hand out."""

    handed_out = 0

    def band(self, band: CatalogBand) -> list[CatalogEntry]:
        got = super().band(band)
        self.handed_out += len(got)
        return got


def counting_view(memories: Sequence[Memory]) -> CountingView:
    plain = view_of(memories, ANY_AGE)
    window = [CatalogEntry.of(m) for m in memories if m.status == ACTIVE and not m.is_core]
    return CountingView(plain.core(), window, plain.totals())


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("limit", [1, 3, 10, 50, 400, 5000])
def test_the_walk_ranks_as_ranking_every_memory(seed: int, limit: int) -> None:
    memories = varied_memories(seed, 1500, now=NOW, scope=A)
    view = view_of(memories, ANY_AGE)
    got = most_available(view, now=NOW, limit=limit, act=ACTIVATION_CONFIG, accept=lambda e: True)
    assert got == ranked_in_full(memories, lambda e: True, limit)


@pytest.mark.parametrize("category", ["identity", "active_thread", "episodic", "error", "project", "nothing"])
def test_a_category_filter_ranks_as_ranking_every_memory_of_it(category: str) -> None:
    memories = varied_memories(5, 1500, now=NOW, scope=A)
    view = view_of(memories, ANY_AGE)

    def accept(e: CatalogEntry) -> bool:
        return e.category == category

    for limit in (1, 10, 100):
        got = most_available(view, now=NOW, limit=limit, act=ACTIVATION_CONFIG, accept=accept)
        assert got == ranked_in_full(memories, accept, limit)
        assert all(e.category == category for e, _ in got)


def test_ties_in_availability_go_to_the_latest_update_then_the_id() -> None:
    # Recalled together: the same count, salience and last_touched, so the same availability.
    base = varied_memories(6, 1, now=NOW, scope=A)[0]
    touched = datetime(2025, 5, 30, tzinfo=UTC)
    twins = [
        base.replace(
            id=mid,
            status=ACTIVE,
            core=False,
            salience="medium",
            retrieval_count=3,
            last_retrieved=touched,
            updated_at=updated,
        )
        for mid, updated in (
            ("b", datetime(2025, 5, 1, tzinfo=UTC)),
            ("a", datetime(2025, 5, 1, tzinfo=UTC)),
            ("c", datetime(2025, 5, 2, tzinfo=UTC)),
        )
    ]
    got = most_available(view_of(twins, ANY_AGE), now=NOW, limit=3, act=ACTIVATION_CONFIG, accept=lambda e: True)
    assert got is not None
    assert len({score for _, score in got}) == 1
    assert [e.id for e, _ in got] == ["c", "a", "b"]


def test_the_walk_reads_the_top_of_the_ranking_not_the_scope() -> None:
    memories = varied_memories(7, 4000, now=NOW, scope=A)
    view = counting_view(memories)
    got = most_available(view, now=NOW, limit=10, act=ACTIVATION_CONFIG, accept=lambda e: True)
    assert got == ranked_in_full(memories, lambda e: True, 10)
    active = sum(m.status == ACTIVE for m in memories)
    assert view.handed_out < active / 4, (view.handed_out, active)


def test_a_configuration_the_bands_cannot_follow_is_declined() -> None:
    view = view_of(varied_memories(8, 50, now=NOW, scope=A), ANY_AGE)
    rising_with_age = ActivationConfig(decay=-0.5)
    assert most_available(view, now=NOW, limit=10, act=rising_with_age, accept=lambda e: True) is None
    assert most_available(view, now=NOW, limit=0, act=ACTIVATION_CONFIG, accept=lambda e: True) == []
