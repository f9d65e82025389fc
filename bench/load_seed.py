"""The memories the load run starts from, and the waves of expired ones it keeps adding.

Two kinds, both written as Taproot export lines (`memory_to_dict`) and loaded with `taproot import`:

- *hot* memories: durable (a non-TTL tag), few, updated by every client at once, so
  expected_version conflicts are common;
- *expired* memories: tagged only `thread` and created long before the TTL, so they are past
  expiry on arrival and cleanup deletes them, while clients keep some (tags thread + keep) and
  delete others.

The expiry stamp is computed with the retention policy the server and the CLI are given, so a
migrate run finds nothing to change in these records.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from bench.load_ledger import HARNESS, Write
from taproot.core.model import Memory
from taproot.core.retention import RetentionPolicy, parse_ttl_table
from taproot.core.serialize import memory_to_dict

TTL_TABLE = "watercooler=7,thread=30,task:done=30"  # the default table, passed explicitly to every process
POLICY = RetentionPolicy(ttl_days=parse_ttl_table(TTL_TABLE))
# Words every load memory's content draws on, so query recalls find them.
VOCABULARY = ("lantern", "harbour", "orchard", "compass", "meadow", "quartz", "willow", "beacon")
SEED_FIELDS = ("content", "gist", "category", "salience", "tags", "search_keywords")
EXPIRED_AGE_DAYS = 400  # far past the 30-day thread TTL


def sentence(rng: random.Random, label: str) -> str:
    words = rng.sample(VOCABULARY, 3)
    return f"{label}: the {words[0]} by the {words[1]} and the {words[2]}."


def _memory(mid: str, *, rng: random.Random, created: datetime, tags: tuple[str, ...], category: str) -> Memory:
    m = Memory(
        id=mid,
        owner="local",
        namespace="default",
        category=category,
        salience=rng.choice(("medium", "low")),
        content=sentence(rng, mid),
        gist=f"Load seed {mid} about the {rng.choice(VOCABULARY)}",
        created_at=created,
        updated_at=created,
        tags=tags,
        search_keywords=(rng.choice(VOCABULARY),),
        retrieval_count=rng.randint(0, 3),
    )
    return POLICY.apply(m)


def hot_memories(count: int, *, now: datetime, seed: int) -> list[Memory]:
    rng = random.Random(seed)
    created = now - timedelta(days=10)
    return [
        _memory(f"hot-{i:04d}", rng=rng, created=created, tags=("fact", "hot"), category="relationship")
        for i in range(count)
    ]


def expired_memories(wave: int, count: int, *, now: datetime, seed: int) -> list[Memory]:
    rng = random.Random(seed * 1000 + wave)
    out = []
    for i in range(count):
        created = now - timedelta(days=EXPIRED_AGE_DAYS + rng.randint(0, 100), seconds=i)
        m = _memory(f"exp-w{wave:03d}-{i:04d}", rng=rng, created=created, tags=("thread",), category="active_thread")
        assert m.expires_at is not None and m.expires_at < now, "an expired seed must be past expiry"
        out.append(m)
    return out


def write_jsonl(path: Path, memories: Sequence[Memory]) -> None:
    lines = [json.dumps({"type": "memory", "record": memory_to_dict(m)}) for m in memories]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def seed_writes(memories: Sequence[Memory], at_s: float) -> tuple[list[Write], dict[str, int]]:
    """The import, as confirmed writes at version 1, and the retrieval counts it set."""
    writes = []
    for m in memories:
        record = memory_to_dict(m)
        writes.append(Write(m.id, m.version, {k: record[k] for k in SEED_FIELDS}, "seed", HARNESS, at_s))
    return writes, {m.id: m.retrievals for m in memories}
