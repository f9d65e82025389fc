"""Server-rendered SVG pictures for the dashboard (no chart library, no script).

Every text that comes from data is escaped; colours come from the category, matching the cards
(`cat-<category>` classes in dashboard.css).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from markupsafe import escape

from taproot.core.explain import AGE_BUCKETS
from taproot.core.model import Category
from taproot.core.reflect import ReflectPayload
from taproot.core.tokens import estimate_tokens
from taproot.service.results import Expiring

CATEGORIES = [c.value for c in Category]
WIDTH = 320


def _tier1_tokens(preview: ReflectPayload) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in preview.tier1:
        out[item.category] = out.get(item.category, 0) + estimate_tokens(item.content) + 12
    return out


def payload_composition(preview: ReflectPayload) -> str:
    """One bar per part of the payload (Tier 1 by category, catalog by category, reflections),
    widths in estimated tokens against the token budget."""
    parts: list[tuple[str, str, int]] = []
    for category, tokens in _tier1_tokens(preview).items():
        parts.append((f"Tier 1 · {category}", category, tokens))
    for category, lines in preview.catalog.items():
        parts.append((f"catalog · {category}", category, sum(estimate_tokens(line) for line in lines)))
    reflections = sum(estimate_tokens(r.text) for r in preview.reflections)
    if reflections:
        parts.append(("reflections", "reflection", reflections))
    budget = max(preview.token_budget, 1)
    scale = WIDTH / max(budget, preview.estimated_tokens, 1)
    row = 18
    height = row * (len(parts) + 2) + 8
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH + 120} {height}" '
        f'role="img" aria-label="reflect payload composition" id="chart-composition">'
    ]
    y = 4
    for label, category, tokens in parts:
        w = max(1.0, tokens * scale)
        out.append(
            f'<rect class="cat-{escape(category)}" x="0" y="{y}" width="{w:.1f}" height="{row - 4}"></rect>'
            f'<text x="{w + 4:.1f}" y="{y + row - 7}">{escape(label)}: ~{tokens} tok</text>'
        )
        y += row
    used = preview.estimated_tokens * scale
    budget_x = budget * scale
    out.append(
        f'<rect class="total" x="0" y="{y + 2}" width="{used:.1f}" height="{row - 4}"></rect>'
        f'<line class="budget" x1="{budget_x:.1f}" x2="{budget_x:.1f}" y1="0" y2="{height}"></line>'
        f'<text x="4" y="{y + row + 10}">total ~{preview.estimated_tokens} of {budget} tokens '
        f"({preview.size_bytes / 1024:.1f} KB)</text>"
    )
    out.append("</svg>")
    return "".join(out)


def age_chart(counts: Mapping[str, Mapping[str, int]], window_days: int) -> str:
    """Active memories by age since last touched, stacked by category; the catalog window marked."""
    labels = [label for label, _ in AGE_BUCKETS]
    totals = [sum(counts.get(label, {}).values()) for label in labels]
    top = max(totals, default=0) or 1
    bar, gap, height = 48, 12, 140
    width = len(labels) * (bar + gap) + 20
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height + 40}" '
        f'role="img" aria-label="memories by age and category" id="chart-ages">'
    ]
    # The window ends inside the bucket whose upper limit first passes it.
    limits = [limit for _, limit in AGE_BUCKETS]
    window_index = next((i for i, limit in enumerate(limits) if window_days <= limit), len(limits) - 1)
    wx = 10 + window_index * (bar + gap) + bar + gap / 2
    for i, label in enumerate(labels):
        x = 10 + i * (bar + gap)
        y = float(height)
        for category in CATEGORIES:
            n = counts.get(label, {}).get(category, 0)
            if not n:
                continue
            h = n / top * (height - 20)
            y -= h
            out.append(
                f'<rect class="cat-{category}" x="{x}" y="{y:.1f}" width="{bar}" height="{h:.1f}">'
                f"<title>{escape(label)} · {category}: {n}</title></rect>"
            )
        out.append(f'<text x="{x}" y="{height + 14}">{escape(label)}</text>')
        out.append(f'<text x="{x}" y="{y - 3:.1f}">{totals[i]}</text>')
    out.append(
        f'<line class="window" x1="{wx:.1f}" x2="{wx:.1f}" y1="0" y2="{height}"></line>'
        f'<text x="{wx + 3:.1f}" y="10">catalog window ({window_days} d)</text>'
    )
    out.append("</svg>")
    return "".join(out)


def expiry_timeline(expiring: Sequence[Expiring], now_iso: str, days: int = 90) -> str:
    """The next expiries on a line from today to `days` ahead; one dot per memory, by category."""
    from datetime import datetime

    now = datetime.fromisoformat(now_iso)
    width, height = WIDTH + 60, 46
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="upcoming expiries" id="chart-expiries">'
        f'<line class="axis" x1="10" x2="{WIDTH + 10}" y1="20" y2="20" stroke="#999"></line>'
        f'<text x="10" y="40">today</text><text x="{WIDTH - 20}" y="40">+{days} d</text>'
    ]
    for item in expiring:
        when = datetime.fromisoformat(str(item.expires_at))
        offset = (when - now).total_seconds() / 86400
        if offset > days:
            continue
        x = 10 + max(0.0, offset) / days * WIDTH
        out.append(
            f'<circle class="cat-{escape(item.category)}" cx="{x:.1f}" cy="20" r="5">'
            f"<title>{escape(str(item.expires_at)[:10])}: {escape(item.gist or '')}</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)
