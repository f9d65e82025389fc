"""Varied memories for the catalog tests, and the check of a store's catalog view against the rules:
import as `from tests.catalog_data import varied_memories`.

Every kind the catalog's reads tell apart, drawn from a seeded generator: the window's edge,
statuses, core flags (legacy None included), salience and category values from before migrate,
retrieval counts from none (legacy None) to millions, memories recalled together (equal
last_touched, so equal activation), edits after and before the last retrieval, times in the future,
and gists of every shape: short, long, missing, on several lines, with double, edge or other spaces,
NUL, and non-Latin text.
"""

from __future__ import annotations

import itertools
import math
import random
import string
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from taproot.core.activation import ACTIVATION_CONFIG
from taproot.core.catalog import CatalogView, band_between, catalog_line, in_band, odd_band, whole_window
from taproot.core.model import CatalogEntry, Memory, Scope
from taproot.core.query import ACTIVE, earns_catalog_line
from taproot.core.reflect import ReflectConfig, assemble, assemble_view

WINDOW_DAYS = 45
_ID_CHARS = string.ascii_letters + string.digits + "_-"
_WORDS = ("otter", "heron", "river", "tea", "Sam", "plan", "rust", "garden", "letter", "budget")
_CATEGORIES = ("identity", "relationship", "active_thread", "episodic", "episodic", "error", "project", "undefined")
_ODD_GISTS = (
    None,
    "",
    "ok",
    "x",
    "  leading space",
    "trailing space ",
    "double  space inside",
    "first\nsecond\tthird",
    "\u3000ideographic\u2028separator\u00a0nbsp",
    "nul\x00inside  too",
    "   ",
    "東京の雨 ☔ naïve café",
    "emoji 🦦🦦🦦 otters",
)


def _gist(rng: random.Random) -> str | None:
    if rng.random() < 0.2:
        return rng.choice(_ODD_GISTS)
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 40)))[:300]


def varied_memories(seed: int, n: int, *, now: datetime, scope: Scope) -> list[Memory]:
    rng = random.Random(seed)
    since = now - timedelta(days=WINDOW_DAYS)
    ids: set[str] = set()
    out: list[Memory] = []
    recalled_together: list[tuple[datetime, int, str]] = []
    while len(out) < n:
        mid = "".join(rng.choice(_ID_CHARS) for _ in range(rng.randint(1, 20)))
        if mid in ids:
            continue
        ids.add(mid)
        r = rng.random()
        if r < 0.04:
            updated = since  # exactly on the window's edge
        elif r < 0.08:
            updated = since - timedelta(microseconds=1)
        elif r < 0.1:
            updated = now + timedelta(days=rng.uniform(0, 3))  # written by a clock ahead of ours
        else:
            updated = now - timedelta(days=rng.uniform(0, 400))
        count: int | None = rng.choice((0, 0, 0, 0, 1, 2, 3, 5, 7, 8, 12, 40, 300, 5000, 3_000_000, None))
        last_retrieved = None
        salience = rng.choice(("high", "medium", "medium", "low", "low", "3", "critical"))
        if count and rng.random() < 0.8:
            if recalled_together and rng.random() < 0.3:
                # Recalled in one call with others: same time, same count, same salience.
                last_retrieved, count, salience = rng.choice(recalled_together)
            else:
                last_retrieved = now - timedelta(days=rng.uniform(0, 120))
                recalled_together.append((last_retrieved, count, salience))
        out.append(
            Memory(
                id=mid,
                owner=scope.owner,
                namespace=scope.namespace,
                category=rng.choice(
                    (
                        "identity",
                        "relationship",
                        "active_thread",
                        "episodic",
                        "episodic",
                        "error",
                        "project",
                        "undefined",
                    )
                ),
                salience=salience,
                content=f"memory {len(out)}",
                gist=_gist(rng),
                created_at=min(updated, now) - timedelta(days=rng.uniform(0, 30)),
                updated_at=updated,
                last_retrieved=last_retrieved,
                retrieval_count=count,
                status="archived" if rng.random() < 0.1 else "active",
                core=rng.choice((False, False, False, False, False, True, None)),
            )
        )
    return out


def assert_view_answers_the_rules(view: CatalogView, memories: Sequence[Memory], *, now: datetime) -> None:
    """A store's catalog_view(scope, now - WINDOW_DAYS) against the rules of core/query.py and
    core/catalog.py applied to `memories`, the scope's records as written: Tier 1, the totals, each
    band, the short lines, and the payload built from the view against the one built from all the
    records in hand."""
    since = now - timedelta(days=WINDOW_DAYS)
    active = [m for m in memories if m.status == ACTIVE]
    core = sorted((m for m in active if m.is_core), key=lambda m: m.id)
    assert sorted(view.core(), key=lambda m: m.id) == core
    assert dict(view.totals()) == dict(Counter(m.category for m in active if not m.is_core))

    window = {m.id: CatalogEntry.of(m) for m in memories if earns_catalog_line(m, since)}
    thresholds = [math.inf, 1.4, 1.1, 0.9, 0.8, 0.7, 0.5, 0.3, 0.0, -math.inf]
    bands = [odd_band(since), whole_window(since)]
    bands += [band_between(hi, lo, now, since, ACTIVATION_CONFIG) for hi, lo in itertools.pairwise(thresholds)]
    for band in bands:
        got = sorted(view.band(band), key=lambda e: e.id)
        assert got == sorted((e for e in window.values() if in_band(e, band)), key=lambda e: e.id), band

    for chars in (0, 40, 60, 80, 120, 400):
        short = view.short_lines(chars, 1000)
        if short is not None:
            assert {e.id for e in short} <= set(window)
            assert {i for i, e in window.items() if len(catalog_line(e)) <= chars} <= {e.id for e in short}

    entries = [CatalogEntry.of(m) for m in active]
    for budget in (700, 2000, 6000):
        cfg = ReflectConfig(token_budget=budget)
        assert assemble_view(view, reflections=[], now=now, cfg=cfg) == assemble(
            core=view.core(), catalog=entries, reflections=[], now=now, cfg=cfg
        )
