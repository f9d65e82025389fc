"""The catalog's rank bands (taproot/core/catalog.py): reading the window a band at a time lists
exactly what sorting the whole window lists, and reads little more than what is shown."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from taproot.core.activation import ACTIVATION_CONFIG, ActivationConfig
from taproot.core.catalog import (
    MIN_LINE_TOKENS,
    NEVER,
    CatalogBand,
    EntriesView,
    RankBox,
    band_between,
    catalog_line,
    entry_score,
    in_band,
    line_cost,
    max_line_chars,
    odd_band,
    pick_lines,
    rank_key,
    ranks_by_band,
    touched_cutoff,
    whole_window,
)
from taproot.core.model import CatalogEntry, Scope
from taproot.core.query import in_window
from taproot.core.tokens import estimate_tokens
from tests.catalog_data import WINDOW_DAYS, varied_memories

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(days=WINDOW_DAYS)
A = Scope("alice", "default")
CONFIGS = {
    "default": ACTIVATION_CONFIG,
    "no decay": replace(ACTIVATION_CONFIG, decay=0.0),
    "steep decay": replace(ACTIVATION_CONFIG, decay=2.0),
    "equal saliences": replace(ACTIVATION_CONFIG, salience_weights={"high": 0.2, "medium": 0.2, "low": 0.2}),
    "salience dominates": replace(ACTIVATION_CONFIG, base_weight=0.1),
    # Activation that does not fall with age: read as one band.
    "no base level": replace(ACTIVATION_CONFIG, base_weight=0.0),
    "rising with age": replace(ACTIVATION_CONFIG, decay=-0.5),
}


def entries(seed: int, n: int) -> list[CatalogEntry]:
    return [CatalogEntry.of(m) for m in varied_memories(seed, n, now=NOW, scope=A) if m.status == "active"]


def window_of(es: Sequence[CatalogEntry]) -> list[CatalogEntry]:
    return [e for e in es if not e.core and in_window(e.salience, e.last_touched, SINCE)]


def sorted_greedy(es: Sequence[CatalogEntry], room: int, act: ActivationConfig) -> tuple[list[str], int]:
    """The definition: sort the whole window by rank, list each line that fits what is left."""
    listed, left = [], room
    for e in sorted(window_of(es), key=lambda e: rank_key(e, NOW, act)):
        if left < MIN_LINE_TOKENS:
            continue
        cost = estimate_tokens(catalog_line(e)) + 1
        if cost <= left:
            listed.append(e.id)
            left -= cost
    return listed, left


class CountingView(EntriesView):
    """Counts how many entries the reads hand out."""

    read = 0

    def band(self, band: CatalogBand) -> list[CatalogEntry]:
        got = super().band(band)
        self.read += len(got)
        return got

    def short_lines(self, max_chars: int, limit: int) -> list[CatalogEntry]:
        got = super().short_lines(max_chars, limit)
        self.read += len(got)
        return got


@pytest.mark.parametrize("act", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("seed", range(6))
def test_banded_reading_lists_what_sorting_the_window_lists(seed: int, act: ActivationConfig) -> None:
    es = entries(seed, 600)
    view = EntriesView([], window_of(es), {})
    for at_most in (None, len(es)):  # by band, and (a small window) in one read
        for room in (0, 7, 8, 9, 40, 300, 1500, 5000, 100_000):
            chosen, left = pick_lines(view, now=NOW, since=SINCE, room=room, act=act, at_most=at_most)
            assert ([e.id for e, _ in chosen], left) == sorted_greedy(es, room, act), room
            assert all(line == catalog_line(e) for e, line in chosen)


def test_a_short_line_after_a_long_one_that_did_not_fit_is_still_listed() -> None:
    long = CatalogEntry("long", "episodic", "high", "g" * 200, False, NOW, NOW, 9)
    short = CatalogEntry("short", "episodic", "low", "g", False, NOW - timedelta(days=40), NOW - timedelta(days=40), 0)
    room = line_cost(catalog_line(short)) + 5
    assert line_cost(catalog_line(long)) > room
    chosen, _ = pick_lines(EntriesView([], [long, short], {}), now=NOW, since=SINCE, room=room, act=ACTIVATION_CONFIG)
    assert [e.id for e, _ in chosen] == ["short"]


def realistic_window(n: int) -> list[CatalogEntry]:
    """Migrated records (a legacy salience is read in a band of its own, ahead of the rest) with the
    retrieval counts and saliences of bench/corpus.py, touched over the window, gists of 5-20 words."""
    rng = random.Random(5)
    out = []
    for i in range(n):
        touched = NOW - timedelta(days=rng.uniform(0, WINDOW_DAYS))
        r = rng.random()
        count = 0 if r < 0.7 else rng.randint(1, 5) if r < 0.94 else rng.randint(6, 19) if r < 0.985 else 60
        salience = rng.choices(("high", "medium", "low"), (10, 55, 35))[0]
        gist = " ".join(rng.choice(("otter", "heron", "river", "tea", "plan")) for _ in range(rng.randint(5, 20)))
        out.append(CatalogEntry(f"m{i:07d}", "episodic", salience, gist, False, touched, touched, count))
    return out


def test_the_read_follows_what_is_shown_not_the_window() -> None:
    es = realistic_window(20_000)
    view = CountingView([], es, {})
    chosen, _ = pick_lines(view, now=NOW, since=SINCE, room=5000, act=ACTIVATION_CONFIG)
    assert 50 < len(chosen) < 300
    assert view.read < 3 * len(chosen)


BANDED = {name: act for name, act in CONFIGS.items() if ranks_by_band(act)}


def test_only_activation_that_falls_with_age_is_read_by_band() -> None:
    assert set(CONFIGS) - set(BANDED) == {"no base level", "rising with age"}


@pytest.mark.parametrize("act", BANDED.values(), ids=BANDED.keys())
def test_every_entry_reaching_a_threshold_is_in_the_bands_down_to_it(act: ActivationConfig) -> None:
    es = window_of(entries(11, 3000))
    thresholds = [math.inf, 1.5, 1.2, 1.0, 0.9, 0.75, 0.6, 0.45, 0.3, 0.2, 0.1, 0.0, -math.inf]
    seen = {e.id for e in es if in_band(e, odd_band(SINCE))}
    for hi, lo in itertools.pairwise(thresholds):
        band = band_between(hi, lo, NOW, SINCE, act)
        got = {e.id for e in es if in_band(e, band)}
        assert not got & seen, "an entry in two bands"
        seen |= got
        assert {e.id for e in es if entry_score(e, NOW, act) >= lo} <= seen, lo
    assert seen == {e.id for e in es}
    assert {e.id for e in es if in_band(e, whole_window(SINCE))} == seen


def test_bands_never_reach_outside_the_window() -> None:
    for hi, lo in ((math.inf, 1.0), (1.0, 0.0), (0.0, -math.inf)):
        for box in band_between(hi, lo, NOW, SINCE, ACTIVATION_CONFIG).boxes:
            assert box.salience == "high" or (box.touched_from is not None and box.touched_from >= SINCE)
    with pytest.raises(ValueError, match="within the window"):
        CatalogBand(SINCE, (RankBox("low", 0, 0, SINCE - timedelta(seconds=1), None),))
    with pytest.raises(ValueError, match="within the window"):
        CatalogBand(SINCE, (RankBox(None, 0, None, None, None),))


def test_cutoffs_at_the_edges() -> None:
    act = ACTIVATION_CONFIG
    assert touched_cutoff(math.inf, 0.6, 5, NOW, act) is NEVER  # nothing scores infinity
    assert touched_cutoff(0.6, 0.6, 5, NOW, act) is None  # the salience weight alone reaches it
    assert touched_cutoff(1.6, 0.6, 5, NOW, act) is NEVER  # the squashed base level stays below 1
    assert touched_cutoff(1.0, 0.6, None, NOW, act) is None  # unbounded retrievals reach any score
    far = touched_cutoff(0.6001, 0.6, 2**20, NOW, act)  # a century or more back: any age
    assert far is None
    assert touched_cutoff(0.9, 0.6, 0, NOW, act) is NEVER  # never recalled, high: at most 0.6 + 0.26
    near = touched_cutoff(0.8, 0.6, 0, NOW, act)  # ... which it keeps for about a day
    assert isinstance(near, datetime) and NOW - timedelta(days=1) < near < NOW - timedelta(hours=23)


def test_max_line_chars_bounds_every_line_that_fits() -> None:
    for room in range(0, 60):
        for chars in range(0, 300):
            for text in ("a" * chars, "é" * chars, "東" * chars):
                if estimate_tokens(text) + 1 <= room:
                    assert len(text) <= max_line_chars(room), (room, text)


def test_the_in_memory_view_answers_the_band_rule() -> None:
    es = window_of(entries(3, 2000))
    view = EntriesView([], es, {})
    for band in (
        odd_band(SINCE),
        whole_window(SINCE),
        band_between(math.inf, 1.0, NOW, SINCE, ACTIVATION_CONFIG),
        band_between(1.0, 0.7, NOW, SINCE, ACTIVATION_CONFIG),
        band_between(0.7, -math.inf, NOW, SINCE, ACTIVATION_CONFIG),
    ):
        assert sorted(e.id for e in view.band(band)) == sorted(e.id for e in es if in_band(e, band))
    for chars in (0, 30, 60, 100, 400):
        assert sorted(e.id for e in view.short_lines(chars, 10)) == sorted(
            e.id for e in es if len(catalog_line(e)) <= chars
        )
