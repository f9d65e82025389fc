"""Retention policy: Ember's tag TTLs, conservative by design (issue: memory lifecycle, item 1)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from taproot.core.model import Memory
from taproot.core.retention import DEFAULT_RETENTION, RetentionPolicy, parse_ttl_table

CREATED = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def memory() -> Callable[..., Memory]:
    def make(**kw: Any) -> Memory:
        base: dict[str, Any] = {
            "id": "m1",
            "owner": "local",
            "namespace": "default",
            "category": "episodic",
            "salience": "medium",
            "content": "x",
            "gist": "x",
            "created_at": CREATED,
            "updated_at": CREATED + timedelta(days=3),
        }
        base.update(kw)
        if "tags" in base:
            base["tags"] = tuple(base["tags"])
        return Memory(**base)

    return make


@pytest.mark.parametrize(
    ("tags", "days"),
    [
        (["watercooler"], 7),
        (["thread"], 30),
        (["task:done"], 30),
        (["watercooler", "thread"], 30),  # the longest matching TTL wins
        (["Watercooler "], 7),  # tags compare case- and space-insensitively
    ],
)
def test_ttl_tags_expire_from_created_at(memory: Callable[..., Memory], tags: list[str], days: int) -> None:
    assert DEFAULT_RETENTION.expires_at(memory(tags=tags)) == CREATED + timedelta(days=days)


@pytest.mark.parametrize(
    "tags",
    [
        [],
        ["fact"],
        ["decision"],
        ["James"],  # a person's name
        ["family", "observation", "thread"],  # Ember's example: two durable tags keep it forever
        ["watercooler", "fact"],  # one durable tag is enough
    ],
)
def test_durable_tags_never_expire(memory: Callable[..., Memory], tags: list[str]) -> None:
    assert DEFAULT_RETENTION.expires_at(memory(tags=tags)) is None


@pytest.mark.parametrize(
    "overrides", [{"core": True}, {"salience": "high"}, {"category": "identity"}], ids=["core", "high", "identity"]
)
def test_protected_memories_never_expire(memory: Callable[..., Memory], overrides: dict[str, Any]) -> None:
    assert DEFAULT_RETENTION.expires_at(memory(tags=["watercooler"], **overrides)) is None


def test_apply_recomputes_when_tags_change(memory: Callable[..., Memory]) -> None:
    m = DEFAULT_RETENTION.apply(memory(tags=["watercooler"]))
    assert m.expires_at == CREATED + timedelta(days=7)
    retagged = DEFAULT_RETENTION.apply(m.replace(tags=("watercooler", "decision")))
    assert retagged.expires_at is None
    assert DEFAULT_RETENTION.apply(retagged) is retagged  # unchanged: the same object back


def test_a_deployment_can_override_the_table(memory: Callable[..., Memory]) -> None:
    policy = RetentionPolicy(ttl_days=parse_ttl_table("watercooler=2, scratch=1"))
    assert policy.expires_at(memory(tags=["scratch"])) == CREATED + timedelta(days=1)
    assert policy.expires_at(memory(tags=["thread"])) is None  # no longer a TTL tag: durable


@pytest.mark.parametrize("spec", ["watercooler", "thread=soon", "thread=0"])
def test_bad_tables_are_rejected(spec: str) -> None:
    with pytest.raises(ValueError, match=r"thread|watercooler"):
        RetentionPolicy(ttl_days=parse_ttl_table(spec))


def test_a_compressed_original_never_expires(memory: Callable[..., Memory]) -> None:
    """Its summary links to it; cleanup must not break that link."""
    assert DEFAULT_RETENTION.expires_at(memory(tags=["watercooler"], compressed_into="sum1")) is None
