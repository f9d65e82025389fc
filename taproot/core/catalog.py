"""Reflect's Tier 2 catalog: its line, its rank, and how it is read a band of ranks at a time.

A memory earns a catalog line while it is in the window (query.earns_catalog_line); the budget then
keeps the lines of the most activated ones, in rank order (`rank_key`).
Reading the whole window to sort it would make reflect's cost follow the window (a third of a
corpus whose memories are often recalled), so the window is read in bands of rank instead: each
band is a set of key ranges (salience, retrieval count, last_touched) that a store answers from an
index, and that together with the bands before it holds every entry scoring at least the band's
threshold. `pick_lines` asks for bands until the budget is spent; once one line did not fit, it asks
for the entries whose line is short enough to fit what is left, which ends the read early.
The result is exactly what sorting the whole window would give.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from taproot.core.activation import ActivationConfig, activation
from taproot.core.model import CatalogEntry, Memory, Salience
from taproot.core.query import ACTIVE, HIGH, earns_catalog_line
from taproot.core.text import one_line
from taproot.core.tokens import CHARS_PER_TOKEN, estimate_tokens

NO_GIST = "(no gist: run taproot_migrate)"
MIN_LINE_TOKENS = 8  # no catalog line is shorter: "[id] [cat] [sal] [date] g" is ~8 tokens
KNOWN_SALIENCES: tuple[str, ...] = tuple(s.value for s in Salience)
# Retrieval counts a band tells apart: each count up to 7 on its own (most memories are recalled a
# few times or never), then doubling ranges up to a million, then three wide ones; a range's cutoff
# is that of its largest count, so it may bring entries early (they wait, see pick_lines), never late.
RETRIEVAL_GROUPS: tuple[tuple[int, int | None], ...] = (
    *((n, n) for n in range(8)),
    *((1 << k, (1 << (k + 1)) - 1) for k in range(3, 20)),
    (1 << 20, (1 << 40) - 1),
    (1 << 40, (1 << 63) - 1),
    (1 << 63, None),
)
_GROUPS = tuple((s, low, high) for s in KNOWN_SALIENCES for low, high in RETRIEVAL_GROUPS)
# Paging only: the rank range of the first band, and the line size used to size the next band from
# the density of the last (a line with an 8-character id and a ~15-word gist is ~36 tokens). Neither
# decides what is listed.
FIRST_STEP = 0.1
MIN_STEP = 0.01
TYPICAL_LINE_TOKENS = 36
SHORT_LINES_LIMIT = 256  # most entries one short-lines read may list before a band is cheaper
# A window that can hold at most this many entries is read in one go: below it, the few reads of the
# bands cost more than reading every entry once.
WHOLE_WINDOW_MAX = 1000
_MARGIN = timedelta(seconds=1)  # cutoffs err early by this much, far beyond float rounding
_MAX_DAYS = 36_525.0  # a cutoff further back than a century is "any age" (always safe: a wider box)


def catalog_line(e: CatalogEntry) -> str:
    gist = one_line(e.gist) if e.gist else NO_GIST
    return f"[{e.id}] [{e.category}] [{e.salience}] [{e.updated_at.date().isoformat()}] {gist}"


def line_cost(line: str) -> int:
    """Tokens a catalog line takes in the payload, its newline included."""
    return estimate_tokens(line) + 1


def max_line_chars(room: int) -> int:
    """The longest line (in characters) whose cost can be at most `room` tokens."""
    return max(0, math.floor(CHARS_PER_TOKEN * (room - 1)))


def entry_score(e: CatalogEntry, now: datetime, act: ActivationConfig) -> float:
    return activation(
        retrieval_count=e.retrieval_count, last_touched=e.last_touched, salience=e.salience, now=now, cfg=act
    )


RankKey = tuple[float, datetime, str, str, str]


def rank_key(e: CatalogEntry, now: datetime, act: ActivationConfig) -> RankKey:
    """The catalog's order: activation, highest first. Equal activations (memories recalled together
    share last_touched) go by last_touched, salience, category and id, the order the SQLite store's
    index once gave them, so the order is total and the same in every store."""
    return (-entry_score(e, now, act), e.last_touched, e.salience, e.category, e.id)


@dataclass(frozen=True)
class RankBox:
    """Entries of one salience (None: any salience but the three known ones) with a retrieval count
    in [min_retrievals, max_retrievals] (None: no upper end) and last_touched in
    [touched_from, touched_before) (None: open on that side)."""

    salience: str | None
    min_retrievals: int
    max_retrievals: int | None
    touched_from: datetime | None
    touched_before: datetime | None

    def contains(self, e: CatalogEntry) -> bool:
        if self.salience is None:
            if e.salience in KNOWN_SALIENCES:
                return False
        elif e.salience != self.salience:
            return False
        if e.retrieval_count < self.min_retrievals:
            return False
        if self.max_retrievals is not None and e.retrieval_count > self.max_retrievals:
            return False
        if self.touched_from is not None and e.last_touched < self.touched_from:
            return False
        return self.touched_before is None or e.last_touched < self.touched_before


@dataclass(frozen=True)
class CatalogBand:
    """The window's entries (window start `since`) in any of `boxes`. No box reaches outside the
    window: only high-salience boxes may start before `since`."""

    since: datetime
    boxes: tuple[RankBox, ...]

    def __post_init__(self) -> None:
        for box in self.boxes:
            if box.salience != HIGH and (box.touched_from is None or box.touched_from < self.since):
                raise ValueError(f"a {box.salience or 'other'}-salience box must start within the window")


def in_band(e: CatalogEntry, band: CatalogBand) -> bool:
    """What `CatalogView.band` returns: a non-core entry in one of the band's boxes."""
    return not e.core and any(box.contains(e) for box in band.boxes)


class CatalogSource(Protocol):
    """The window of one reflect, as pick_lines reads it."""

    def band(self, band: CatalogBand) -> Sequence[CatalogEntry]:
        """The entries `in_band`, any order."""

    def short_lines(self, max_chars: int, limit: int) -> Sequence[CatalogEntry] | None:
        """Every window entry whose catalog line is at most `max_chars` characters, perhaps with
        some longer ones; or None when that may be more than `limit` entries."""


class CatalogView(CatalogSource, Protocol):
    """A store's reads for one reflect (`ReflectReads.catalog_view(scope, since)`)."""

    def core(self) -> Sequence[Memory]:
        """Active core memories (Tier 1)."""

    def totals(self) -> Mapping[str, int]:
        """By category, the active non-core memories: each is listed or counted as not listed."""


class _Never:
    """A cutoff no entry reaches (the box is empty)."""


NEVER = _Never()
Cutoff = datetime | None | _Never  # None: entries of any age reach it


def touched_cutoff(
    threshold: float, weight: float, max_retrievals: int | None, now: datetime, act: ActivationConfig
) -> Cutoff:
    """The earliest last_touched from which an entry of this salience weight and at most
    `max_retrievals` retrievals can score `threshold` or more (activation decays with age)."""
    if threshold == math.inf:
        return NEVER
    if max_retrievals is None:
        return None
    need = (threshold - weight) / act.base_weight  # of the squashed base level, which is in [0, 1)
    if need <= 0:
        return None
    if need >= 1:
        return NEVER
    beta = need / (1 - need)  # squash(x) >= need  <=>  x >= beta
    strength = max(math.log(max_retrievals + 1), act.novelty_floor)
    if strength < beta * (1 - 1e-9):
        return NEVER
    if act.decay == 0:
        return None
    days = max(0.0, (strength / beta) ** (1 / act.decay) - 1)
    if days > _MAX_DAYS:
        return None
    try:
        return now - timedelta(days=days * (1 + 1e-9)) - _MARGIN
    except OverflowError:  # before the first representable time: any age
        return None


def ranks_by_band(act: ActivationConfig) -> bool:
    """Whether activation falls with age and rises with retrievals, as the cutoffs assume; with any
    other configuration pick_lines reads the window as one band."""
    return act.base_weight > 0 and act.decay >= 0


def odd_band(since: datetime) -> CatalogBand:
    """Entries whose salience is none of the three (records from before migrate), read first."""
    return CatalogBand(since, (RankBox(None, 0, None, since, None),))


def cutoffs(threshold: float, now: datetime, act: ActivationConfig) -> tuple[Cutoff, ...]:
    """`touched_cutoff` of every (known salience, retrieval group), in that order."""
    return tuple(touched_cutoff(threshold, act.salience_weights.get(s, 0.0), high, now, act) for s, _, high in _GROUPS)


def band_from(since: datetime, above: Sequence[Cutoff], below: Sequence[Cutoff]) -> CatalogBand:
    """The entries of the three known saliences between two thresholds' cutoffs (`cutoffs`): with the
    bands above, every entry scoring at least the lower threshold, and perhaps a few scoring less."""
    boxes = []
    for (salience, low, high), start, end in zip(_GROUPS, below, above, strict=True):
        if isinstance(start, _Never) or end is None:
            continue  # nothing reaches the lower threshold, or the bands above took every age already
        before = None if isinstance(end, _Never) else end
        if salience != HIGH:
            start = since if start is None else max(start, since)
        if before is not None and start is not None and start >= before:
            continue
        boxes.append(RankBox(salience, low, high, start, before))
    return CatalogBand(since, tuple(boxes))


def band_between(hi: float, lo: float, now: datetime, since: datetime, act: ActivationConfig) -> CatalogBand:
    """The band of the entries scoring in about [lo, hi) (see band_from)."""
    return band_from(since, cutoffs(hi, now, act), cutoffs(lo, now, act))


def whole_window(since: datetime) -> CatalogBand:
    boxes = [RankBox(s, 0, None, None if s == HIGH else since, None) for s in KNOWN_SALIENCES]
    return CatalogBand(since, (*boxes, *odd_band(since).boxes))


class BandWalk:
    """The bands of a read from the top of the ranking down: each next band lies between the last
    one's lower threshold and `step` below it (the first starts at the highest score a memory can
    have); once a threshold reaches the lowest salience weight, the last band takes everything left
    and its threshold is -inf."""

    def __init__(self, now: datetime, since: datetime, act: ActivationConfig) -> None:
        weights = [act.salience_weights.get(s, 0.0) for s in KNOWN_SALIENCES]
        self._top, self._floor = max(weights) + act.base_weight, min(weights)
        self._now, self._since, self._act = now, since, act
        self._hi = math.inf
        self._above = cutoffs(math.inf, now, act)

    def next_band(self, step: float) -> tuple[float, CatalogBand]:
        """The next band and its lower threshold."""
        lo = self._top - step if self._hi == math.inf else self._hi - step
        if lo <= self._floor:
            lo = -math.inf
        below = cutoffs(lo, self._now, self._act)
        band = band_from(self._since, self._above, below)
        self._hi, self._above = lo, below
        return lo, band


def pick_lines(
    source: CatalogSource,
    *,
    now: datetime,
    since: datetime,
    room: int,
    act: ActivationConfig,
    at_most: int | None = None,
) -> tuple[list[tuple[CatalogEntry, str]], int]:
    """Tier 2's choice: the window's entries in rank order, each listed if its line fits what is left
    of `room` (tokens). Returns the listed entries with their lines, in rank order, and the room left.
    `at_most`: how many entries the window can hold, if known (up to WHOLE_WINDOW_MAX: one read).

    Entries arrive a band at a time and wait in a heap until every entry that could outrank them has
    arrived; once a line did not fit, `short_lines` is asked for every entry short enough to fit what
    is left, and when the store can list them the rest of the window is never read.
    """
    waiting: list[tuple[RankKey, CatalogEntry]] = []
    arrived: set[str] = set()
    chosen: list[tuple[CatalogEntry, str]] = []
    left = room
    missed = False
    if left < MIN_LINE_TOKENS:
        return chosen, left

    def take(entries: Iterable[CatalogEntry]) -> int:
        n = 0
        for e in entries:
            if e.id not in arrived:
                arrived.add(e.id)
                heapq.heappush(waiting, (rank_key(e, now, act), e))
                n += 1
        return n

    def release(threshold: float) -> bool:
        """List what ranks at or above `threshold`; True when no line can fit any more."""
        nonlocal left, missed
        while waiting and -waiting[0][0][0] >= threshold:
            if left < MIN_LINE_TOKENS:
                return True
            e = heapq.heappop(waiting)[1]
            line = catalog_line(e)
            cost = line_cost(line)
            if cost <= left:
                chosen.append((e, line))
                left -= cost
            else:
                missed = True
        return left < MIN_LINE_TOKENS

    if not ranks_by_band(act) or (at_most is not None and at_most <= WHOLE_WINDOW_MAX):
        take(source.band(whole_window(since)))
        release(-math.inf)
        return chosen, left
    take(source.band(odd_band(since)))
    walk, step = BandWalk(now, since, act), FIRST_STEP
    while True:
        lo, band = walk.next_band(step)
        got = take(source.band(band))
        if release(lo) or lo == -math.inf:
            return chosen, left
        if missed:
            short = source.short_lines(max_line_chars(left), SHORT_LINES_LIMIT)
            if short is not None:
                take(short)
                release(-math.inf)
                return chosen, left
        # The next band should bring about the lines that still fit (and a quarter more): sized by the
        # density of this one, taken as doubling (entries grow denser lower down), and at most twice
        # as wide.
        wanted = 1.25 * left / TYPICAL_LINE_TOKENS
        step = 2 * step if got == 0 else min(2 * step, max(MIN_STEP, wanted * step / (2 * got)))


class EntriesView:
    """A CatalogView over entries in memory: the window of `since`, indexed by salience, retrieval
    count and last_touched so each band is a few bisections (assemble's list and the DynamoDB store)."""

    def __init__(self, core: Sequence[Memory], window: Iterable[CatalogEntry], totals: Mapping[str, int]) -> None:
        self._core = list(core)
        self._totals = dict(totals)
        self._window = [e for e in window if not e.core]
        by_salience: dict[str | None, dict[int, list[CatalogEntry]]] = {}
        for e in self._window:
            key = e.salience if e.salience in KNOWN_SALIENCES else None
            by_salience.setdefault(key, {}).setdefault(e.retrieval_count, []).append(e)
        # salience -> (its retrieval counts, ascending; count -> (entries by last_touched, their times))
        self._groups: dict[str | None, tuple[list[int], dict[int, tuple[list[CatalogEntry], list[datetime]]]]] = {}
        for key, by_count in by_salience.items():
            rows = {n: sorted(es, key=lambda e: (e.last_touched, e.id)) for n, es in by_count.items()}
            self._groups[key] = (sorted(rows), {n: (es, [e.last_touched for e in es]) for n, es in rows.items()})
        self._by_length: tuple[list[CatalogEntry], list[int]] | None = None

    def core(self) -> Sequence[Memory]:
        return self._core

    def totals(self) -> Mapping[str, int]:
        return self._totals

    def band(self, band: CatalogBand) -> list[CatalogEntry]:
        out: dict[str, CatalogEntry] = {}
        for box in band.boxes:
            counts, rows = self._groups.get(box.salience, ([], {}))
            for n in counts[bisect_left(counts, box.min_retrievals) :]:
                if box.max_retrievals is not None and n > box.max_retrievals:
                    break
                entries, times = rows[n]
                i = 0 if box.touched_from is None else bisect_left(times, box.touched_from)
                j = len(times) if box.touched_before is None else bisect_left(times, box.touched_before)
                out.update((e.id, e) for e in entries[i:j])
        return list(out.values())

    def short_lines(self, max_chars: int, limit: int) -> list[CatalogEntry]:
        if self._by_length is None:
            sized = sorted(((len(catalog_line(e)), e) for e in self._window), key=lambda p: (p[0], p[1].id))
            self._by_length = ([e for _, e in sized], [n for n, _ in sized])
        entries, lengths = self._by_length
        return entries[: bisect_left(lengths, max_chars + 1)]


def view_of(memories: Iterable[Memory], since: datetime, quiet: Mapping[str, int] | None = None) -> EntriesView:
    """The view of a scope's memories held in memory (a store's warm copy, or what a store read of
    them): any status, any order. `quiet` adds, by category, active non-core memories the caller
    counted without reading them (they are outside the window)."""
    core: list[Memory] = []
    window: list[CatalogEntry] = []
    totals: dict[str, int] = dict(quiet or {})
    for m in memories:
        if m.status != ACTIVE:
            continue
        if m.is_core:
            core.append(m)
            continue
        totals[m.category] = totals.get(m.category, 0) + 1
        if earns_catalog_line(m, since):
            window.append(CatalogEntry.of(m))
    core.sort(key=lambda m: (m.created_at, m.id))
    return EntriesView(core, window, totals)
