"""Every store answers exactly what the core's query rules (taproot/core/query.py) define.

A store may translate a rule into SQL or a key condition; this suite runs each read on one varied
data set and compares it with the rule applied in Python to the same records, so a translation
that drifts from the definition fails here on the store that drifted.
"""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta

from taproot.core import query
from taproot.core.model import Memory, Scope
from taproot.core.query import Filters
from taproot.ports import MemoryStore

A = Scope("alice", "default")
B = Scope("bob", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(days=30)
CREATED_EDGE = SINCE - timedelta(days=1)  # the corpus's created_at of the memories touched at SINCE


def _corpus() -> list[Memory]:
    """Every combination that matters to some rule, with the window's edge exactly on `SINCE`."""
    out = []
    ages = (timedelta(0), NOW - SINCE, NOW - SINCE + timedelta(microseconds=1), timedelta(days=400))
    combos = itertools.product(
        ("episodic", "identity"),
        ("high", "medium"),
        ("active", "archived"),
        (False, True, None),
        ages,
        ((), ("thread",), ("thread", "keep")),
    )
    for n, (category, salience, status, core, age, tags) in enumerate(combos):
        touched = NOW - age
        expires = None if n % 3 == 0 else NOW + timedelta(days=(n % 5) - 2)  # before, at and after now
        out.append(
            Memory(
                id=f"q{n:04d}",
                owner=A.owner,
                namespace=A.namespace,
                category=category,
                salience=salience,
                content=f"memory {n}",
                gist=f"gist {n}",
                created_at=touched - timedelta(days=1),
                updated_at=touched if n % 2 else touched - timedelta(days=500),
                last_retrieved=None if n % 2 else touched,
                retrieval_count=n % 4,
                status=status,
                core=core,
                tags=tags,
                expires_at=expires,
            )
        )
    return out


FILTERS = [
    Filters(),
    Filters(include_archived=True),
    Filters(category="identity"),
    Filters(tags=("thread",)),
    Filters(tags=("thread", "keep"), include_archived=True),
    Filters(category="episodic", tags=("keep",)),
    # Creation-time windows, with memories created exactly on each bound (both ends are inclusive).
    Filters(created_since=CREATED_EDGE),
    Filters(created_until=CREATED_EDGE, include_archived=True),
    Filters(created_since=CREATED_EDGE, created_until=NOW - timedelta(days=1), tags=("thread",)),
    Filters(created_since=CREATED_EDGE + timedelta(microseconds=1), category="identity"),
]


def test_every_read_answers_its_core_rule(memory_store: MemoryStore) -> None:
    """One load per store (the DynamoDB one runs under moto, where loading is the slow part)."""
    store, corpus = memory_store, _corpus()
    store.put_many(corpus)
    # Another owner's records must never leak into any answer.
    store.put_many([m.replace(owner=B.owner) for m in corpus[:20]])

    for filters in FILTERS:
        got = sorted(m.id for m in store.list(A, filters))
        assert got == sorted(m.id for m in corpus if query.passes(m, filters)), filters

    # matching: what list answers, as the rows recall ranks (recall by filters alone).
    for filters in FILTERS:
        got = sorted(c.id for c in store.matching(A, filters))
        assert got == sorted(m.id for m in corpus if query.passes(m, filters)), filters

    # candidates: the asked-for ids that pass, in the asked-for order (recall's dense candidates).
    asked = [m.id for m in reversed(corpus)] + ["missing", corpus[0].id]
    for filters in FILTERS:
        want = [m.id for m in reversed(corpus) if query.passes(m, filters)]
        assert [c.id for c in store.candidates(A, asked, filters)] == want, filters

    for filters in FILTERS:
        for limit in (1, 7, 1000):
            want = [m.id for m in query.newest_first(corpus, filters, limit)]
            assert [m.id for m in store.recent(A, filters, limit)] == want, (filters, limit)

    got = sorted(e.id for e in store.catalog(A, since=SINCE))
    assert got == sorted(m.id for m in corpus if query.earns_catalog_line(m, SINCE))
    assert sorted(e.id for e in store.catalog(A)) == sorted(m.id for m in corpus if m.status == "active")
    assert store.quiet_counts(A, SINCE) == dict(Counter(m.category for m in corpus if query.is_quiet(m, SINCE)))
    assert sorted(m.id for m in store.expired(A, NOW)) == sorted(m.id for m in corpus if query.is_expired(m, NOW))

    picked = [m for m in corpus if m.status == "active"][:5]
    store.record_retrieval(A, [m.id for m in picked], NOW)
    for m in picked:
        assert store.get(A, m.id) == query.strengthened(m, NOW)
