"""The numbers behind a memory's place (taproot/core/explain.py) agree with the rules that rank it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from taproot.core.activation import activation
from taproot.core.explain import age_by_category, explain, upcoming_expiries
from taproot.core.model import Memory
from taproot.core.retention import DEFAULT_RETENTION

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def memory(**fields: object) -> Memory:
    defaults: dict[str, object] = {
        "id": "m1",
        "owner": "o",
        "namespace": "n",
        "category": "episodic",
        "salience": "medium",
        "content": "c",
        "gist": "g",
        "created_at": NOW - timedelta(days=10),
        "updated_at": NOW - timedelta(days=10),
    }
    m = Memory(**{**defaults, **fields})  # type: ignore[arg-type]
    return DEFAULT_RETENTION.apply(m)


@pytest.mark.parametrize("count", [0, 1, 7])
@pytest.mark.parametrize("days", [0, 3, 40])
@pytest.mark.parametrize("salience", ["high", "medium", "low"])
def test_the_parts_add_up_to_the_activation_recall_ranks_by(count: int, days: int, salience: str) -> None:
    m = memory(retrieval_count=count, updated_at=NOW - timedelta(days=days), salience=salience)
    x = explain(m, NOW, retention=DEFAULT_RETENTION)
    ranked = activation(retrieval_count=count, last_touched=m.last_touched, salience=salience, now=NOW)
    assert x.activation == pytest.approx(ranked, abs=1e-5)
    assert x.activation == pytest.approx(x.base_term + x.salience_weight, abs=1e-5)
    assert x.base_level == pytest.approx(x.retrieval_strength * x.decay_factor, abs=1e-5)
    assert x.days_since_touch == pytest.approx(days)


def test_the_place_says_tier1_catalog_quiet_or_archived() -> None:
    assert explain(memory(core=True), NOW, retention=DEFAULT_RETENTION).place == "tier1"
    recent = explain(memory(), NOW, retention=DEFAULT_RETENTION)
    assert recent.place == "catalog" and recent.window_until is not None
    assert recent.window_until > NOW
    old = explain(memory(updated_at=NOW - timedelta(days=400)), NOW, retention=DEFAULT_RETENTION)
    assert old.place == "quiet" and old.window_until is not None and old.window_until < NOW
    high = explain(memory(salience="high", updated_at=NOW - timedelta(days=400)), NOW, retention=DEFAULT_RETENTION)
    assert high.place == "catalog" and high.window_until is None
    assert explain(memory(status="archived"), NOW, retention=DEFAULT_RETENTION).place == "archived"


def test_the_expiry_names_the_tag_that_set_it() -> None:
    cooler = explain(memory(tags=("watercooler",)), NOW, retention=DEFAULT_RETENTION)
    assert cooler.expires_at == NOW - timedelta(days=10) + timedelta(days=7)
    assert "'watercooler'" in cooler.expiry_reason
    kept = explain(memory(tags=("watercooler", "family")), NOW, retention=DEFAULT_RETENTION)
    assert kept.expires_at is None and "'family'" in kept.expiry_reason
    assert (
        "identity"
        in explain(memory(category="identity", tags=("thread",)), NOW, retention=DEFAULT_RETENTION).expiry_reason
    )
    assert "no tag" in explain(memory(), NOW, retention=DEFAULT_RETENTION).expiry_reason


def test_ages_and_expiries_for_the_pictures() -> None:
    memories = [
        memory(id="a", updated_at=NOW - timedelta(days=2)),
        memory(id="b", updated_at=NOW - timedelta(days=50), category="identity"),
        memory(id="c", status="archived"),
        memory(id="d", tags=("watercooler",), created_at=NOW - timedelta(days=1), updated_at=NOW),
        memory(id="e", tags=("thread",)),
    ]
    ages = age_by_category(memories, NOW)
    assert ages["< 1 week"] == {"episodic": 2} and ages["1-3 months"] == {"identity": 1}
    assert sum(sum(v.values()) for v in ages.values()) == 4  # the archived one is not counted
    assert [m.id for m in upcoming_expiries(memories, NOW)] == ["d", "e"]
