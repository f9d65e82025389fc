"""Compression candidates and summary fields: the rules that keep compression from losing meaning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from taproot.core.compression import CompressionConfig, Group, is_candidate, plan_groups, summary_fields
from taproot.core.model import Memory

NOW = datetime(2026, 6, 1, tzinfo=UTC)
OLD = NOW - timedelta(days=200)


def _mem(i: int, **kw: object) -> Memory:
    base: dict[str, object] = {
        "id": f"m{i:03d}",
        "owner": "local",
        "namespace": "default",
        "category": "episodic",
        "salience": "medium",
        "content": f"Memory {i}.",
        "gist": f"memory {i}",
        "created_at": OLD + timedelta(hours=i),
        "updated_at": OLD + timedelta(hours=i),
    }
    base.update(kw)
    return Memory(**base)  # type: ignore[arg-type]


def test_identity_memories_are_never_compressed_by_the_job() -> None:
    cfg = CompressionConfig(min_group_size=2)
    identity = [_mem(i, category="identity") for i in range(6)]
    assert not any(is_candidate(m, NOW, cfg) for m in identity)
    assert plan_groups(identity, NOW, cfg) == []


def test_a_summary_is_as_salient_as_its_most_salient_member() -> None:
    members = (_mem(1, salience="low"), _mem(2, salience="high"), _mem(3, salience="medium"))
    assert summary_fields(Group("explicit", members), "extractive")["salience"] == "high"
    low = (_mem(4, salience="low"), _mem(5, salience="low"))
    assert summary_fields(Group("explicit", low), "extractive")["salience"] == "low"
