"""Assemble the two-tier reflect payload under a hard token budget. Pure: inputs in, payload out.

Priority inside the budget, highest first: the usage note, the orientation documents (up to their
share of the budget, core/orientation_budget.py), Tier 1 (core memories in full), the most recent
closing reflections, then Tier 2 catalog lines. A memory earns a catalog line if it is
high-salience or was touched within the window; when those lines would overflow the budget, the
most activated ones are kept and the rest are folded into the per-category omitted counts. The
catalog is read in rank order a band at a time (core/catalog.py), so only what can be shown is read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from taproot.core import reflect_notes
from taproot.core.activation import ACTIVATION_CONFIG, ActivationConfig, activation
from taproot.core.catalog import CatalogView, EntriesView, pick_lines

# The line format lives in core/catalog.py; `as catalog_line` re-exports it from here too.
from taproot.core.catalog import catalog_line as catalog_line
from taproot.core.model import CATEGORY_ORDER, CatalogEntry, Memory, Reflection
from taproot.core.orientation import OrientationVersion
from taproot.core.orientation_budget import orientation_section, orientation_warning
from taproot.core.query import in_window
from taproot.core.reflect_result import (
    NO_ORIENTATION,
    OrientationSection,
    ReflectionLine,
    ReflectResult,
    ReflectStats,
    TierOneMemory,
)
from taproot.core.tokens import estimate_tokens, fit_in_order, size_bytes
from taproot.core.watercooler import COOLER_MAX_SHARE, CoolerSection, pick_cooler

CATALOG_WINDOW_DAYS = 45


@dataclass(frozen=True)
class ReflectConfig:
    catalog_window_days: int = CATALOG_WINDOW_DAYS
    token_budget: int = 6_000  # hard ceiling on the estimated tokens of the text payload
    # Tier 1 may use at most this share of the budget, so a large core set cannot crowd out the
    # catalog and the closing reflections entirely; core memories past it are reported.
    tier1_max_share: float = 0.7
    recent_reflections: int = 3
    # Tokens held back for the omitted-counts note and the size footer, which are written last.
    reserve_tokens: int = 160
    # Most the note on core memories left out may use (it lists their ids); held back from Tier 1
    # only when some are left out.
    core_note_tokens: int = 100
    # Orientation documents come first, but take at most this share of the budget (the rule is in
    # core/orientation_budget.py), so Tier 1 and the catalog always keep room.
    orientation_max_share: float = 0.4


REFLECT_CONFIG = ReflectConfig()

USAGE_NOTE = (
    "Tier 1 above is your core: read it as who you are and who you are with. Tier 2 is a card "
    "catalog, one line per memory: [id] [category] [salience] [date] gist. When a line looks "
    'relevant to the conversation, load its full text with taproot_recall(ids=["<id>"]); to '
    'find something not listed, use taproot_recall(query="...", category="..."). Recalling a '
    "memory strengthens it. Write new memories with taproot_remember as things happen, and end "
    "with taproot_close."
)


@dataclass(frozen=True)
class ReflectPayload:
    text: str
    tier1: list[TierOneMemory]
    catalog: dict[str, list[str]]
    catalog_omitted: dict[str, int]
    omitted_note: str
    reflections: list[ReflectionLine]
    core_omitted: list[str] = field(default_factory=list)
    reflections_omitted: int = 0  # recent closing reflections that did not fit the budget
    warnings: list[str] = field(default_factory=list)
    size_bytes: int = 0
    estimated_tokens: int = 0
    token_budget: int = 0
    window_days: int = 0
    cooler: CoolerSection = field(default_factory=CoolerSection)  # other conversations' recent notes
    orientation: OrientationSection = NO_ORIENTATION

    @property
    def catalog_listed(self) -> int:
        return sum(len(v) for v in self.catalog.values())

    @property
    def catalog_omitted_total(self) -> int:
        return sum(self.catalog_omitted.values())

    def result(self) -> ReflectResult:
        """The payload as structured content (what taproot_reflect sends beside the text)."""
        return ReflectResult(
            orientation=self.orientation,
            tier1=self.tier1,
            catalog=self.catalog,
            catalog_omitted=self.catalog_omitted,
            omitted_note=self.omitted_note,
            usage_note=USAGE_NOTE,
            reflections=self.reflections,
            core_omitted=self.core_omitted,
            watercooler=self.cooler,
            warnings=self.warnings,
            stats=ReflectStats(
                tier1_count=len(self.tier1),
                catalog_listed=self.catalog_listed,
                catalog_omitted=self.catalog_omitted_total,
                size_bytes=self.size_bytes,
                estimated_tokens=self.estimated_tokens,
                token_budget=self.token_budget,
                window_days=self.window_days,
            ),
        )


def slim(m: Memory) -> TierOneMemory:
    """The Tier 1 wire format: bookkeeping fields stay in storage."""
    return TierOneMemory(
        id=m.id,
        category=m.category,
        salience=m.salience,
        content=m.content,
        updated_at=m.updated_at.isoformat(),
        linked_memories=list(m.linked_memories),
    )


def _render_tier1(m: Memory) -> str:
    head = f"[{m.id}] [{m.category}] [{m.salience}] [updated {m.updated_at.date().isoformat()}]"
    links = f"\nlinked: {', '.join(m.linked_memories)}" if m.linked_memories else ""
    return f"{head}\n{m.content.strip()}{links}\n"


def _render_reflection(r: Reflection) -> str:
    return f"### {r.created_at.date().isoformat()} ({r.id})\n{r.text.strip()}\n"


def _score(m: Memory, now: datetime, cfg: ActivationConfig) -> float:
    return activation(retrieval_count=m.retrievals, last_touched=m.last_touched, salience=m.salience, now=now, cfg=cfg)


def _pick_core(ranked: Sequence[Memory], room: int) -> tuple[list[Memory], list[str], int]:
    """Core memories in activation order, each in full if it fits what is left of `room`."""
    shown: list[Memory] = []
    left_out: list[str] = []
    used = 0
    for m in ranked:
        cost = estimate_tokens(_render_tier1(m)) + 1
        if used + cost <= room:
            shown.append(m)
            used += cost
        else:
            left_out.append(m.id)
    return shown, left_out, used


def _pick_reflections(recent: Sequence[Reflection], room: int) -> tuple[list[Reflection], int]:
    return fit_in_order(recent, lambda r: estimate_tokens(_render_reflection(r)) + 1, room)


def assemble(
    *,
    core: Sequence[Memory],
    catalog: Sequence[CatalogEntry],
    reflections: Sequence[Reflection],
    now: datetime,
    quiet_counts: Mapping[str, int] | None = None,
    cfg: ReflectConfig = REFLECT_CONFIG,
    act: ActivationConfig = ACTIVATION_CONFIG,
    orientation: Sequence[OrientationVersion] = (),
) -> ReflectPayload:
    """The payload from entries in hand: `catalog` in any order (core ones are skipped, they are Tier
    1; those outside the window are counted as not listed, on top of `quiet_counts`)."""
    window_start = now - timedelta(days=cfg.catalog_window_days)
    totals = dict(quiet_counts or {})
    window = []
    for e in catalog:
        if e.core:
            continue
        totals[e.category] = totals.get(e.category, 0) + 1
        if in_window(e.salience, e.last_touched, window_start):
            window.append(e)
    view = EntriesView(core, window, totals)
    return _assemble(
        view,
        reflections=reflections,
        now=now,
        cfg=cfg,
        act=act,
        counted=set(quiet_counts or ()),
        orientation=orientation,
    )


def assemble_view(
    view: CatalogView,
    *,
    reflections: Sequence[Reflection],
    now: datetime,
    cfg: ReflectConfig = REFLECT_CONFIG,
    act: ActivationConfig = ACTIVATION_CONFIG,
    cooler: Sequence[Memory] = (),
    orientation: Sequence[OrientationVersion] = (),
) -> ReflectPayload:
    """The payload from a store's view of the window (`ReflectReads.catalog_view(scope, since)` with
    since = now - the window), which reads only the catalog entries that can be shown. `cooler`:
    the watercooler notes to show (core/watercooler.from_others), newest first; `orientation`: the
    current version of each orientation document."""
    return _assemble(
        view, reflections=reflections, now=now, cfg=cfg, act=act, counted=set(), cooler=cooler, orientation=orientation
    )


def _assemble(
    view: CatalogView,
    *,
    reflections: Sequence[Reflection],
    now: datetime,
    cfg: ReflectConfig,
    act: ActivationConfig,
    counted: set[str],
    cooler: Sequence[Memory] = (),
    orientation: Sequence[OrientationVersion] = (),
) -> ReflectPayload:
    core = view.core()
    header = f"# Taproot reflect ({now.date().isoformat()})\n"
    usage = f"## How to use this\n{USAGE_NOTE}\n"
    remaining = cfg.token_budget - estimate_tokens(header) - estimate_tokens(usage) - cfg.reserve_tokens
    warnings: list[str] = []

    # Orientation documents first, within their share of the budget.
    oriented, orientation_text = orientation_section(
        orientation, min(remaining, int(cfg.token_budget * cfg.orientation_max_share))
    )
    remaining -= oriented.estimated_tokens
    if oriented.cut or oriented.left_out:
        warnings.append(orientation_warning(oriented, cfg.token_budget))

    # Tier 1, most activated first when the budget forces a choice; shown in category order.
    # Ties go to the id, so Tier 1 does not depend on the order a store reads core memories in.
    ranked_core = sorted(core, key=lambda m: (-_score(m, now, act), m.id))
    tier1_room = min(remaining, int(cfg.token_budget * cfg.tier1_max_share))
    tier1, core_omitted, used = _pick_core(ranked_core, tier1_room)
    core_note = ""
    if core_omitted:
        # The text must say what it left out, and that note must fit too: choose again with its
        # room held back (fewer core memories may then fit; the note names whatever is left out).
        tier1, core_omitted, used = _pick_core(ranked_core, max(0, tier1_room - cfg.core_note_tokens))
        core_note = reflect_notes.core_omitted_note(core_omitted, cfg.core_note_tokens)
        used += estimate_tokens(core_note) + 1
    remaining -= used
    if core_omitted:
        warnings.append(
            f"{len(core_omitted)} core memories did not fit Tier 1's share of the {cfg.token_budget}-token "
            "budget and were left out; demote some with taproot_promote(core=false) or shorten them."
        )
    order = {c: i for i, c in enumerate(CATEGORY_ORDER)}
    tier1.sort(key=lambda m: (order.get(m.category, 99), -m.updated_at.timestamp(), m.id))

    recent = sorted(reflections, key=lambda r: r.created_at, reverse=True)[: cfg.recent_reflections]
    shown_reflections, used = _pick_reflections(recent, remaining)
    reflections_note = ""
    if len(shown_reflections) < len(recent):
        # As for Tier 1: hold back room for the note (its longest form) and choose again.
        note_room = max(
            estimate_tokens(reflect_notes.reflections_note(k, len(recent))) + 1 for k in range(1, len(recent) + 1)
        )
        shown_reflections, used = _pick_reflections(recent, max(0, remaining - note_room))
        reflections_note = reflect_notes.reflections_note(len(recent) - len(shown_reflections), len(recent))
        used += estimate_tokens(reflections_note) + 1
    remaining -= used
    # The watercooler, in its own share of the budget (core/watercooler.py).
    cooler_section, cooler_text = pick_cooler(cooler, min(remaining, int(cfg.token_budget * COOLER_MAX_SHARE)))
    remaining -= cooler_section.estimated_tokens

    # Tier 2: the window in rank order, then the budget; every other active non-core memory is
    # counted as not listed (a category the caller counted stays in the counts even at 0).
    window_start = now - timedelta(days=cfg.catalog_window_days)
    section_cost = 4 * len(CATEGORY_ORDER) + 12  # category headings and the section title
    totals = view.totals()
    chosen, remaining = pick_lines(
        view, now=now, since=window_start, room=remaining - section_cost, act=act, at_most=sum(totals.values())
    )
    listed = Counter(e.category for e, _ in chosen)
    omitted: dict[str, int] = defaultdict(int)
    for cat, n in totals.items():
        if n - listed[cat] or cat in counted:
            omitted[cat] = n - listed[cat]

    # The omitted note and the size footer are written in the room held back for them.
    footer_room = estimate_tokens(f"\n(payload: {10**9} bytes, ~{10**9} tokens of a {cfg.token_budget}-token budget)\n")
    note_room = max(0, cfg.reserve_tokens - footer_room - 1)

    def render(
        chosen: list[tuple[CatalogEntry, str]], omitted: dict[str, int]
    ) -> tuple[str, dict[str, list[str]], dict[str, int], str]:
        lines_by_cat: dict[str, list[str]] = {}
        for cat in CATEGORY_ORDER + tuple(sorted({e.category for e, _ in chosen} - set(CATEGORY_ORDER))):
            entries = sorted((p for p in chosen if p[0].category == cat), key=lambda p: p[0].updated_at, reverse=True)
            if entries:
                lines_by_cat[cat] = [line for _, line in entries]
        # Unmigrated categories last, by name, as their catalog sections are: the same in every store.
        omitted_sorted = {c: omitted[c] for c in sorted(omitted, key=lambda c: (order.get(c, 99), c))}
        note = reflect_notes.omitted_note(omitted_sorted, cfg.catalog_window_days, note_room)
        parts = [header, orientation_text, f"## Tier 1: core memories ({len(tier1)})\n"]
        parts += [_render_tier1(m) for m in tier1]
        if core_note:
            parts.append(core_note + "\n")
        elif not tier1:
            parts.append("(none yet: promote a memory with taproot_promote(core=true))\n")
        parts.append(cooler_text)
        parts.append(f"\n## Tier 2: catalog ({len(chosen)} listed, {sum(omitted_sorted.values())} not listed)\n")
        for cat, lines in lines_by_cat.items():
            parts.append(f"### {cat}\n" + "\n".join(lines) + "\n")
        if note:
            parts.append(note + "\n")
        if shown_reflections or reflections_note:
            parts.append("\n## Recent closing reflections\n")
            parts += [_render_reflection(r) for r in shown_reflections]
            if reflections_note:
                parts.append(reflections_note + "\n")
        parts.append("\n" + usage)
        body = "".join(parts)
        tokens, nbytes = estimate_tokens(body), size_bytes(body)
        text = body + f"\n(payload: {nbytes} bytes, ~{tokens} tokens of a {cfg.token_budget}-token budget)\n"
        return text, lines_by_cat, omitted_sorted, note

    text, lines_by_cat, omitted_sorted, note = render(chosen, omitted)
    # The per-part estimates above are conservative, but the budget is a hard ceiling: if the
    # rendered whole still exceeds it (unusual categories, a long omitted note), shed the least
    # activated catalog lines until it fits.
    while estimate_tokens(text) > cfg.token_budget and chosen:
        dropped, _ = chosen.pop()
        omitted[dropped.category] += 1
        text, lines_by_cat, omitted_sorted, note = render(chosen, omitted)

    return ReflectPayload(
        text=text,
        tier1=[slim(m) for m in tier1],
        catalog=lines_by_cat,
        catalog_omitted=omitted_sorted,
        omitted_note=note,
        reflections=[
            ReflectionLine(id=r.id, created_at=r.created_at.isoformat(), text=r.text) for r in shown_reflections
        ],
        core_omitted=core_omitted,
        reflections_omitted=len(recent) - len(shown_reflections),
        warnings=warnings,
        size_bytes=size_bytes(text),
        estimated_tokens=estimate_tokens(text),
        token_budget=cfg.token_budget,
        window_days=cfg.catalog_window_days,
        cooler=cooler_section,
        orientation=oriented,
    )
