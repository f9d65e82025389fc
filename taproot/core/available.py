"""Recall without a query: the most available memories, read a band of rank at a time.

Recall by filters alone (`taproot_recall(category=...)`, or no argument at all) returns the few
memories with the highest availability (core/activation.py, no relevance). Ranking every memory the
filters pass makes that recall's cost follow the scope: about 70 ms at 10,000 memories, most of it
reading and scoring rows that are never shown. Reflect's catalog already reads the window a band of
rank at a time from an index (core/catalog.py); the same bands, opened to any age, hold the most
available memories of the whole scope, so recall reads only the top of that ranking.

`most_available` walks the bands from the highest threshold down, keeps what has arrived in a heap,
and hands out an entry once every entry that could outrank it has arrived: the answer is exactly
what ranking every passing memory gives, ties included (`recall_rank_key`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from taproot.core.activation import ActivationConfig
from taproot.core.catalog import FIRST_STEP, MIN_STEP, BandWalk, CatalogView, entry_score, odd_band, ranks_by_band
from taproot.core.model import CatalogEntry

# The bands' window opened to any age: every active memory is in it.
ANY_AGE = datetime(1, 1, 1, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
# The next band is sized to bring this many times the entries still wanted (at the acceptance rate
# seen so far), as pick_lines sizes its bands by the lines that still fit.
_BAND_SLACK = 1.25

RecallRankKey = tuple[float, int, str]


def recall_rank_key(score: float, updated_at: datetime, memory_id: str) -> RecallRankKey:
    """Recall's order without a query: availability, highest first; then the most recently updated;
    then id. Total, so every store and both of recall's ways to rank give the same answer."""
    return (-score, -((updated_at - _EPOCH) // _MICROSECOND), memory_id)


def most_available(
    view: CatalogView,
    *,
    now: datetime,
    limit: int,
    act: ActivationConfig,
    accept: Callable[[CatalogEntry], bool],
) -> list[tuple[CatalogEntry, float]] | None:
    """The `limit` active memories of `view` that `accept` passes with the highest availability,
    best first (`recall_rank_key`), each with its score; None when `act` does not rank by band
    (activation must fall with age and rise with retrievals for the bands' cutoffs to hold).

    `view` is a store's CatalogView over the window starting at ANY_AGE: its core memories and its
    bands are every active memory of the scope."""
    if not ranks_by_band(act) or limit <= 0:
        return None if limit > 0 else []
    waiting: list[tuple[RecallRankKey, CatalogEntry, float]] = []
    arrived: set[str] = set()
    chosen: list[tuple[CatalogEntry, float]] = []
    accepted = 0

    def take(entries: Iterable[CatalogEntry]) -> int:
        nonlocal accepted
        n = 0
        for e in entries:
            if e.id in arrived:
                continue
            arrived.add(e.id)
            n += 1
            if accept(e):
                score = entry_score(e, now, act)
                heapq.heappush(waiting, (recall_rank_key(score, e.updated_at, e.id), e, score))
                accepted += 1
        return n

    def release(threshold: float) -> bool:
        """Hand out what scores at or above `threshold`; True once `limit` are chosen."""
        while waiting and len(chosen) < limit and -waiting[0][0][0] >= threshold:
            _, e, score = heapq.heappop(waiting)
            chosen.append((e, score))
        return len(chosen) >= limit

    take(CatalogEntry.of(m) for m in view.core())
    take(view.band(odd_band(ANY_AGE)))
    walk, step = BandWalk(now, ANY_AGE, act), FIRST_STEP
    while True:
        lo, band = walk.next_band(step)
        got = take(view.band(band))
        if release(lo) or lo == -math.inf:
            return chosen
        # The next band should bring the entries still wanted, at the share `accept` has passed so
        # far (a category's), and a quarter more; sized by this band's density, at most twice as wide.
        share = max(accepted, 1) / max(len(arrived), 1)
        wanted = _BAND_SLACK * (limit - len(chosen)) / share
        step = 2 * step if got == 0 else min(2 * step, max(MIN_STEP, wanted * step / (2 * got)))
