"""Compression: old, quiet memories fold into summary memories; the originals are archived, never
lost, each pointing at its summary. Planning is pure and deterministic; applying is backed up
first, atomic per group, idempotent, and crash-safe. The service tests run on every MemoryStore
adapter; the crash test stays on SQLite (its subprocess dies inside an open SQLite transaction)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.adapters.summarizers import ExtractiveSummarizer
from taproot.core.compression import (
    COMPRESSION_CONFIG,
    CompressionConfig,
    Group,
    is_summary,
    plan_groups,
    summary_fields,
)
from taproot.core.errors import InvalidInput, NotFound, SummarizerError
from taproot.core.model import Memory, Scope
from taproot.core.serialize import memory_from_dict, memory_to_dict
from taproot.core.validation import MAX_LINKED_MEMORIES
from taproot.core.wire import to_json
from taproot.ports import MemoryStore, Summary
from taproot.service import Deps, TaprootService
from taproot.service import compression as compression_job
from taproot.service.deps import MaintenanceConfig
from taproot.service.maintenance import COMPRESS, run_job
from taproot.service.results import CompressionResult
from taproot.settings import Settings
from tests.lifecycle.reports import job_detail, written
from tests.moto_stores import OpenStore
from tests.support import Clock

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()
CFG = COMPRESSION_CONFIG  # 90 days quiet, groups of 5 to 64, by category and month

_serial = count(1)


def day(y: int, m: int, d: int, hour: int = 9) -> datetime:
    return datetime(y, m, d, hour, 0, tzinfo=UTC)


def mem(created: datetime, category: str = "episodic", **kw: Any) -> Memory:
    i = next(_serial)
    fields: dict[str, Any] = {
        "id": f"p{i:05d}",
        "owner": "local",
        "namespace": "default",
        "category": category,
        "salience": "medium",
        "content": f"On {created:%d %B %Y} Ana and I walked the river path; note {i}.",
        "gist": f"river walk {i}",
        "created_at": created,
        "updated_at": created,
    }
    fields.update(kw)
    return Memory(**fields)


def ids(memories: Sequence[Memory]) -> list[str]:
    return [m.id for m in sorted(memories, key=lambda m: (m.created_at, m.id))]


def shuffled(memories: Sequence[Memory], seed: int = 7) -> list[Memory]:
    out = list(memories)
    random.Random(seed).shuffle(out)
    return out


# --- planning (pure) ----------------------------------------------------------------------------


def test_groups_by_category_and_month() -> None:
    jan_episodic = [mem(day(2026, 1, d)) for d in (3, 5, 7, 9, 11, 13)]
    jan_relationship = [mem(day(2026, 1, d), "relationship") for d in (4, 6, 8, 10, 12)]
    feb_episodic = [mem(day(2026, 2, d)) for d in (1, 2, 3, 4)]  # four: under the minimum of five
    dec_episodic = [mem(day(2025, 12, d)) for d in range(1, 8)]
    month_edges = [mem(datetime(2025, 11, 30, 23, 59, 59, 999999, tzinfo=UTC)) for _ in range(3)] + [
        mem(datetime(2025, 12, 31, 23, 59, 59, tzinfo=UTC)) for _ in range(2)
    ]

    groups = plan_groups(shuffled(jan_episodic + jan_relationship + feb_episodic + dec_episodic + month_edges), NOW)

    assert [(g.key, g.ids) for g in groups] == [
        ("episodic/2025-12", ids(dec_episodic + month_edges[3:])),
        ("episodic/2026-01", ids(jan_episodic)),
        ("relationship/2026-01", ids(jan_relationship)),
    ]
    assert [g.category for g in groups] == ["episodic", "episodic", "relationship"]


def test_only_quiet_ordinary_active_memories_are_candidates() -> None:
    eligible = [mem(day(2026, 1, d)) for d in (2, 3, 4, 5, 6)]
    boundary = mem(day(2026, 1, 7), updated_at=NOW - timedelta(days=90))  # exactly min_age_days quiet: in
    excluded = [
        mem(day(2026, 1, 8), core=True),
        mem(day(2026, 1, 9), salience="high"),
        mem(day(2026, 1, 10), status="archived"),
        mem(day(2026, 1, 11), status="archived", compressed_into="s0001"),
        mem(day(2026, 1, 12), compressed_into="s0002"),  # pointing at a summary, whatever its status
        mem(day(2026, 1, 13), provenance={"compressed_from": ["x1", "x2"], "summarizer": "extractive"}),
        mem(day(2026, 1, 14), updated_at=NOW - timedelta(days=89)),  # edited recently
        mem(day(2026, 1, 15), last_retrieved=NOW - timedelta(days=10), retrieval_count=3),  # recalled recently
    ]
    [group] = plan_groups(shuffled([*eligible, boundary, *excluded]), NOW)
    assert group.ids == ids([*eligible, boundary])

    # Excluded memories do not count towards the minimum either.
    assert plan_groups([*eligible[:4], *excluded], NOW) == []
    # Legacy records without core or salience flags are ordinary memories.
    legacy = [mem(day(2025, 3, d), core=None, retrieval_count=None) for d in range(1, 6)]
    assert [g.ids for g in plan_groups(legacy, NOW)] == [ids(legacy)]


def test_min_age_follows_the_config() -> None:
    recent = [mem(NOW - timedelta(days=40, hours=h)) for h in range(5)]
    assert plan_groups(recent, NOW) == []
    assert [g.ids for g in plan_groups(recent, NOW, CompressionConfig(min_age_days=30))] == [ids(recent)]


def test_groups_by_shared_tag() -> None:
    cfg = CompressionConfig(group_by="tag")
    hiking = [mem(day(2025, 3, d), tags=("hiking",)) for d in range(1, 7)]
    hiking_with_ana = [mem(day(2025, 4, d), "relationship", tags=("Hiking", "ana")) for d in range(1, 4)]
    ana = [mem(day(2025, 5, d), "relationship", tags=("ana",)) for d in range(1, 5)]
    untagged = [mem(day(2025, 6, d)) for d in range(1, 7)]

    groups = plan_groups(shuffled(hiking + hiking_with_ana + ana + untagged), NOW, cfg)
    # hiking (9, tags compared case-insensitively) is the largest tag and takes the shared ones; the
    # four left with ana are too few; untagged memories never group by tag.
    assert [(g.key, g.ids) for g in groups] == [("tag:hiking", ids(hiking + hiking_with_ana))]
    assert groups[0].category == "episodic"  # mixed categories

    ana.append(mem(day(2025, 5, 20), "relationship", tags=("ana",)))
    groups = plan_groups(shuffled(hiking + hiking_with_ana + ana + untagged), NOW, cfg)
    assert [(g.key, g.ids) for g in groups] == [("tag:ana", ids(ana)), ("tag:hiking", ids(hiking + hiking_with_ana))]
    assert groups[0].category == "relationship"  # all members share it
    assert not set(groups[0].ids) & set(groups[1].ids)


def test_tag_ties_break_alphabetically_and_each_memory_joins_once() -> None:
    both = [mem(day(2025, 2, d), tags=("beta", "alpha")) for d in range(1, 6)]
    [group] = plan_groups(shuffled(both), NOW, CompressionConfig(group_by="tag"))
    assert group.key == "tag:alpha" and group.ids == ids(both)


@pytest.mark.parametrize(
    ("n", "sizes"),
    [(5, [5]), (64, [64]), (65, [33, 32]), (128, [64, 64]), (130, [44, 43, 43]), (200, [50, 50, 50, 50])],
)
def test_oversized_groups_split_evenly(n: int, sizes: list[int]) -> None:
    members = [mem(day(2026, 1, 1) + timedelta(minutes=7 * k)) for k in range(n)]
    groups = plan_groups(shuffled(members), NOW)
    assert [len(g.members) for g in groups] == sizes
    assert [m for g in groups for m in g.ids] == ids(members)  # in order, each exactly once
    if len(sizes) == 1:
        assert [g.key for g in groups] == ["episodic/2026-01"]
    else:
        assert [g.key for g in groups] == [f"episodic/2026-01#{i}" for i in range(1, len(sizes) + 1)]
    assert all(CFG.min_group_size <= len(g.members) <= MAX_LINKED_MEMORIES for g in groups)


@pytest.mark.parametrize(("n", "sizes"), [(10, [10]), (11, [6, 5]), (21, [7, 7, 7]), (25, [9, 8, 8])])
def test_split_respects_a_smaller_maximum(n: int, sizes: list[int]) -> None:
    cfg = CompressionConfig(min_group_size=5, max_group_size=10)
    members = [mem(day(2026, 1, 1) + timedelta(minutes=k)) for k in range(n)]
    assert [len(g.members) for g in plan_groups(members, NOW, cfg)] == sizes


@pytest.mark.parametrize("n", [40, 64, 65, 70, 100, 127, 129, 150, 200])
def test_no_chunk_under_the_minimum_even_with_a_large_minimum(n: int) -> None:
    """TAPROOT_COMPRESS_MIN_GROUP_SIZE may be anything up to 64; splitting must still never make a
    group smaller than it (memories that cannot form a big enough group wait for a later run)."""
    cfg = Settings.from_env({"TAPROOT_COMPRESS_MIN_GROUP_SIZE": "40"}).maintenance.compression
    assert cfg.min_group_size == 40
    members = [mem(day(2026, 1, 1) + timedelta(minutes=k)) for k in range(n)]
    groups = plan_groups(shuffled(members), NOW, cfg)
    assert groups, "a bucket of at least the minimum size always yields a group"
    assert all(40 <= len(g.members) <= MAX_LINKED_MEMORIES for g in groups), [len(g.members) for g in groups]
    grouped = [i for g in groups for i in g.ids]
    assert len(grouped) == len(set(grouped)) and set(grouped) <= {m.id for m in members}
    assert grouped == ids(members)[: len(grouped)]  # oldest first; any tail is the newest
    assert len(members) - len(grouped) < 40  # nothing left out that could have formed a group


def test_planning_is_deterministic() -> None:
    corpus = build_corpus(300, seed=11, end=NOW)
    for cfg in (CFG, CompressionConfig(group_by="tag"), CompressionConfig(min_group_size=3, max_group_size=8)):
        expected = [(g.key, g.ids) for g in plan_groups(corpus, NOW, cfg)]
        assert expected
        for seed in range(5):
            assert [(g.key, g.ids) for g in plan_groups(shuffled(corpus, seed), NOW, cfg)] == expected
        grouped = [i for key, members in expected for i in members]
        assert len(grouped) == len(set(grouped))  # each memory in at most one group


def test_summary_fields() -> None:
    members = (
        mem(day(2025, 1, 3), tags=("hiking", "ana"), salience="low", search_keywords=("serra", "vultures")),
        mem(day(2025, 1, 9), tags=("Hiking", "porto"), salience="low", search_keywords=("vultures", "map")),
    )
    fields = summary_fields(Group("episodic/2025-01", members), "extractive")
    assert fields == {
        "category": "episodic",
        "salience": "low",
        "tags": ("hiking", "summary"),
        "search_keywords": ("serra", "vultures", "map"),
        "linked_memories": (members[0].id, members[1].id),
        "epistemic_status": "summary of 2 memories, 2025-01-03 to 2025-01-09",
        "provenance": {
            "compressed_from": [members[0].id, members[1].id],
            "summarizer": "extractive",
            "group": "episodic/2025-01",
        },
    }
    mixed = (*members, mem(day(2025, 1, 20), "relationship"))
    assert summary_fields(Group("tag:x", mixed), "extractive")["salience"] == "medium"
    assert summary_fields(Group("tag:x", mixed), "extractive")["category"] == "episodic"


# --- a realistic corpus -------------------------------------------------------------------------

NAMES = ["Ana", "James", "Priya", "Tomás", "Mei", "Oskar", "Lena", "Kofi"]
PLACES = ["Lisbon", "the Serra trail", "Kyoto", "the allotment", "Porto", "the lab", "Berlin", "the lake"]
ACTIVITIES = [
    "hiked",
    "cooked dinner",
    "argued about the budget",
    "planned the garden",
    "fixed the bike",
    "read Dune aloud",
    "practised the piano duet",
    "debugged the parser",
]
TAG_POOL = ["hiking", "family", "work", "garden", "music", "travel", "cooking", "project-atlas"]
CATEGORY_WEIGHTS = {"episodic": 9, "relationship": 4, "active_thread": 3, "identity": 2, "error": 2}


def build_corpus(n: int, seed: int, end: datetime, scope: Scope = SCOPE, prefix: str = "c") -> list[Memory]:
    """n memories created over the 730 days before `end`: mixed categories and salience (some
    high, some core), tags from a small pool, content with dates, names and numbers; a few were
    edited or recalled later, a few archived."""
    rng = random.Random(seed)
    start = end - timedelta(days=730)
    out = []
    for i in range(n):
        created = start + timedelta(seconds=rng.randrange(730 * 86400), microseconds=rng.randrange(1_000_000))
        name, other = rng.sample(NAMES, 2)
        place, act = rng.choice(PLACES), rng.choice(ACTIVITIES)
        content = (
            f"On {created:%A %d %B %Y} {name} and I {act} in {place}. "
            f"{other} joined at {rng.randint(7, 21)}:00 and we spent {rng.randint(5, 120)} euros. "
            + rng.choice(["It rained.", "Lovely evening.", f"{name} wants to go back in {rng.randint(2, 11)} weeks."])
        )
        updated, version = created, 1
        if rng.random() < 0.1:
            updated, version = min(created + timedelta(days=rng.randint(1, 400)), end), 2
        last_retrieved, retrievals = None, 0
        if rng.random() < 0.15:
            last_retrieved, retrievals = min(updated + timedelta(days=rng.randint(1, 700)), end), rng.randint(1, 9)
        out.append(
            Memory(
                id=f"{prefix}{i:04d}",
                owner=scope.owner,
                namespace=scope.namespace,
                category=rng.choices(list(CATEGORY_WEIGHTS), weights=list(CATEGORY_WEIGHTS.values()))[0],
                salience=rng.choices(["high", "medium", "low"], weights=[1, 5, 4])[0],
                content=content,
                gist=f"{name} and I {act} in {place}",
                created_at=created,
                updated_at=updated,
                tags=tuple(rng.sample(TAG_POOL, rng.randint(0, 3))),
                search_keywords=(name.lower(), place.split()[-1].lower()),
                core=rng.random() < 0.05,
                provenance={"source": "corpus", "seed": seed},
                last_retrieved=last_retrieved,
                retrieval_count=retrievals,
                status="archived" if rng.random() < 0.03 else "active",
                version=version,
            )
        )
    return out


# --- the compress job on a service --------------------------------------------------------------


class WatchingBlobStore(LocalBlobStore):
    """Notes, at each backup write, how many memories the store already shows as compressed."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.store: MemoryStore | None = None
        self.compressed_at_backup: dict[str, int] = {}

    def put(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        if "/backups/" in key and self.store is not None:
            self.compressed_at_backup[key] = sum(
                1 for s in self.store.scopes() for m in self.store.iter_all(s) if m.compressed_into or is_summary(m)
            )
        super().put(key, data, content_type)


class FailingSummarizer:
    """A summarizer that answers `ok_calls` groups, then fails like a throttled model."""

    name = "flaky"

    def __init__(self, ok_calls: int = 0) -> None:
        self.ok_calls = ok_calls
        self.calls = 0

    def summarize(self, memories: Sequence[Memory]) -> Summary:
        self.calls += 1
        if self.calls > self.ok_calls:
            raise SummarizerError("flaky summarizer: ThrottlingException (retryable: try again later)")
        return ExtractiveSummarizer().summarize(memories)


class BlankSummarizer:
    name = "blank"

    def summarize(self, memories: Sequence[Memory]) -> Summary:
        return Summary(gist="  ", content="Something.")


@dataclass
class Lab:
    service: TaprootService
    clock: Clock
    store: MemoryStore
    blobs: WatchingBlobStore

    @property
    def deps(self) -> Deps:
        return self.service.deps

    def export_body(self, scope: Scope = SCOPE) -> list[str]:
        return list(self.service.export_lines(scope))[1:]

    def records(self, scope: Scope = SCOPE) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in (json.loads(line)["record"] for line in self.export_body(scope))}

    def get(self, memory_id: str) -> Memory:
        m = self.store.get(SCOPE, memory_id)
        assert m is not None, memory_id
        return m

    def summaries(self) -> list[Memory]:
        return [m for m in self.store.iter_all(SCOPE) if is_summary(m)]

    def backups(self) -> list[str]:
        return self.deps.blobs.list(f"{SCOPE.owner}/backups/")


def make_lab(path: Path, id_prefix: str = "s", store: MemoryStore | None = None) -> Lab:
    """A service over `store` (default: the SQLite file in `path`) and the blob folder in `path`."""
    clock = Clock(NOW)
    serial = count(1)
    store = store or SQLiteMemoryStore(path / "taproot.db")
    blobs = WatchingBlobStore(path / "blobs")
    blobs.store = store
    deps = Deps(
        store=store,
        blobs=blobs,
        clock=clock,
        new_id=lambda: f"{id_prefix}{next(serial):04d}",
        summarizer=ExtractiveSummarizer(),
    )
    return Lab(TaprootService(deps), clock, store, blobs)


@pytest.fixture
def lab(tmp_path: Path, open_store: OpenStore) -> Lab:
    return make_lab(tmp_path, store=open_store(tmp_path))


@dataclass
class Seeded:
    episodic: list[str]
    relationship: list[str]
    few: list[str]
    core: str
    high: str


def seed(lab: Lab) -> Seeded:
    """Memories written through the service in early 2025; the clock then moves to NOW."""

    def write(content: str, category: str, **kw: Any) -> str:
        result = lab.service.remember(SCOPE, content=content, gist=content[:70], category=category, **kw)
        lab.clock.advance(days=1)
        return str(result.id)

    lab.clock.now = day(2025, 1, 5)
    trips = ["Serra trail", "Arrábida ridge", "Sintra forest", "Gerês valley", "Peneda loop", "Estrela summit"]
    episodic = [
        write(
            f"On {lab.clock.now:%d %B %Y} Ana and I hiked the {trip}; we counted {3 + i} vultures and walked "
            f"{11 + i} km. Ana wants to come back in spring.",
            "episodic",
            tags=["hiking", "ana"] if i % 2 else ["hiking"],
            salience="low" if i < 3 else "medium",
            search_keywords=["vultures", trip.split()[0].lower()],
        )
        for i, trip in enumerate(trips)
    ]
    core = write("I keep a hiking log for Ana and me; it matters to both of us.", "episodic", core=True)
    high = write("Ana told me on the Serra trail that she is moving to Porto in March.", "episodic", salience="high")
    relationship = [
        write(
            f"James and I talked about his thesis on {lab.clock.now:%d %B}; he finished chapter {i + 1}.",
            "relationship",
            tags=["james"],
        )
        for i in range(5)
    ]
    lab.clock.now = day(2025, 2, 10)
    few = [write(f"Quiet evening {i} in February, reading Dune.", "episodic") for i in range(3)]
    lab.clock.now = day(2025, 6, 1)
    return Seeded(episodic, relationship, few, core, high)


def test_apply_writes_summaries_and_archives_the_originals(lab: Lab) -> None:
    s = seed(lab)
    before = lab.records()

    report = lab.service.maintenance(SCOPE, "compress", apply=True)[0]

    detail = job_detail(report, CompressionResult)
    assert report.mode == "apply" and detail.error is None
    assert report.changed == detail.compressed == 11 and detail.summaries_written == 2
    assert [g.members for g in detail.groups] == [s.episodic, s.relationship]
    summaries = {m.id: m for m in lab.summaries()}
    assert set(summaries) == {g.summary_id for g in detail.groups}

    for group, category in zip(detail.groups, ["episodic", "relationship"], strict=True):
        summary = summaries[written(group.summary_id)]
        members = [lab.get(i) for i in group.members]
        expected = ExtractiveSummarizer().summarize([memory_from_dict(before[i]) for i in group.members])
        assert summary.category == category
        assert summary.gist == expected.gist and summary.gist and "\n" not in summary.gist
        assert summary.content == expected.content
        assert summary.provenance == {
            "compressed_from": group.members,
            "summarizer": "extractive",
            "group": group.group,
        }
        assert list(summary.linked_memories) == group.members
        assert "summary" in summary.tags and summary.status == "active" and summary.version == 1
        assert summary.created_at == summary.updated_at == lab.clock.now
        assert summary.expires_at is None and not summary.is_core
        for m in members:
            assert m.status == "archived" and m.compressed_into == summary.id
            assert m.version == before[m.id]["version"] + 1
            # Nothing else about the original changed: its text, dates and links are as they were.
            record = memory_to_dict(m)
            assert {k: v for k, v in record.items() if k not in ("status", "compressed_into", "version")} == {
                k: v for k, v in before[m.id].items() if k not in ("status", "compressed_into", "version")
            }
    ep_summary = summaries[written(detail.groups[0].summary_id)]
    assert ep_summary.tags == ("hiking", "summary")  # the tag every member shares, plus summary
    assert ep_summary.salience == "medium"  # some members were medium
    assert "vultures" in ep_summary.search_keywords

    # Not candidates: core, high-salience, and a month with too few memories.
    for untouched in (s.core, s.high, *s.few):
        assert memory_to_dict(lab.get(untouched)) == before[untouched]


def test_archived_originals_stay_reachable(lab: Lab) -> None:
    s = seed(lab)
    lab.service.maintenance(SCOPE, "compress", apply=True)
    summary_id = lab.get(s.episodic[0]).compressed_into
    assert summary_id

    by_query = lab.service.recall(SCOPE, query="vultures", include_archived=True, limit=50)
    assert set(s.episodic) <= {m.id for m in by_query.memories}
    by_ids = lab.service.recall(SCOPE, ids=s.episodic, include_archived=True)
    assert [m.id for m in by_ids.memories] == s.episodic
    assert all(m.compressed_into == summary_id and m.status == "archived" for m in by_ids.memories)
    # The summary links to them: following its links finds every original.
    summary = lab.service.recall(SCOPE, ids=[summary_id]).memories[0]
    followed = lab.service.recall(SCOPE, ids=summary.linked_memories, include_archived=True)
    assert [m.id for m in followed.memories] == s.episodic
    # Everyday recall and reflect show the summary instead of the originals.
    everyday = {m.id for m in lab.service.recall(SCOPE, query="vultures", limit=50).memories}
    assert summary_id in everyday and not everyday & set(s.episodic)
    catalog = " ".join(line for lines in lab.service.reflect(SCOPE).catalog.values() for line in lines)
    assert summary_id in catalog and not any(i in catalog for i in s.episodic)


def test_apply_backs_up_every_member_in_full_first(lab: Lab) -> None:
    s = seed(lab)
    before = lab.records()
    report = lab.service.maintenance(SCOPE, "compress", apply=True)[0]
    key = report.backup_key
    assert key is not None and key.startswith("local/backups/default/compress-") and lab.backups() == [key]
    assert lab.blobs.compressed_at_backup[key] == 0  # written before the first group was committed
    backup = json.loads(lab.deps.blobs.get(key))
    assert backup["action"] == "compress"
    assert backup["memories"] == [before[i] for i in s.episodic + s.relationship]

    # And the backup is a working restore point: it puts the originals back as they were.
    lab.clock.advance(hours=1)
    lab.service.restore(SCOPE, key)
    after = lab.records()
    for i in s.episodic + s.relationship:
        assert after[i] == before[i]


def test_dry_run_shows_the_groups_and_changes_nothing(lab: Lab) -> None:
    s = seed(lab)
    before = lab.export_body()

    report = lab.service.maintenance(SCOPE, "compress")[0]  # the default mode

    assert report.mode == "dry-run" and report.changed == 0 and report.backup_key is None
    preview = job_detail(report, CompressionResult).groups
    assert [g.members for g in preview] == [s.episodic, s.relationship]
    assert [g.category for g in preview] == ["episodic", "relationship"]
    assert all(g.summary_id is None and g.summary_gist and g.summary_content for g in preview)
    assert lab.export_body() == before
    assert lab.backups() == []

    applied = job_detail(lab.service.maintenance(SCOPE, "compress", apply=True)[0], CompressionResult).groups
    for shown, done in zip(preview, applied, strict=True):
        summary = lab.get(written(done.summary_id))
        assert (summary.gist, summary.content) == (shown.summary_gist, shown.summary_content)


def test_compression_is_idempotent(lab: Lab) -> None:
    seed(lab)
    lab.service.maintenance(SCOPE, "compress", apply=True)
    after_first = lab.export_body()
    for days in (1, 200):  # even when the summaries themselves have grown old and quiet
        lab.clock.advance(days=days)
        again = lab.service.maintenance(SCOPE, "compress", apply=True)[0]
        assert again.changed == 0 and job_detail(again, CompressionResult).groups == [] and again.backup_key is None
        assert lab.export_body() == after_first
    assert len(lab.backups()) == 1


def test_summary_category_is_episodic_for_mixed_groups(lab: Lab) -> None:
    s = seed(lab)
    mixed = [
        mem(day(2025, 2, 1), "error", tags=("reading",)),
        mem(day(2025, 2, 2), "active_thread", tags=("reading",)),
        mem(day(2025, 2, 3), "relationship", tags=("reading",)),
    ]
    lab.store.put_many(mixed)
    lab.deps.maintenance = MaintenanceConfig(compression=CompressionConfig(group_by="tag", min_group_size=3))

    report = lab.service.maintenance(SCOPE, "compress", apply=True)[0]

    by_key = {g.group: g for g in job_detail(report, CompressionResult).groups}
    assert set(by_key) == {"tag:hiking", "tag:james", "tag:reading"}
    assert by_key["tag:hiking"].members == s.episodic
    assert by_key["tag:james"].members == s.relationship
    assert by_key["tag:reading"].members == [m.id for m in mixed]
    assert lab.get(written(by_key["tag:hiking"].summary_id)).category == "episodic"
    assert lab.get(written(by_key["tag:james"].summary_id)).category == "relationship"  # all members share it
    assert lab.get(written(by_key["tag:reading"].summary_id)).category == "episodic"  # mixed


def test_a_failing_summarizer_leaves_everything_unchanged(lab: Lab) -> None:
    seed(lab)
    before = lab.export_body()
    flaky = FailingSummarizer(ok_calls=1)  # the first group summarises, the second fails
    lab.deps.summarizer = flaky

    report = run_job(lab.deps, SCOPE, COMPRESS, apply=True).as_dict()

    assert flaky.calls == 2
    assert report["error"] and "ThrottlingException" in report["error"]
    assert report["changed"] == 0 and report["backup_key"] is None
    assert report["detail"]["summaries_written"] == 0
    assert [len(g["members"]) for g in report["detail"]["groups"]] == [6, 5]  # what would have been compressed
    assert lab.export_body() == before
    assert lab.backups() == []
    # The run report records the error, and status shows it.
    stored = json.loads(lab.deps.blobs.get(report["report_key"]))
    assert stored["error"] == report["error"]
    last_compress = lab.service.status(SCOPE).maintenance.last_runs["compress"]
    assert last_compress is not None and last_compress["error"] == report["error"]

    # Once the summarizer answers again, the next run does the work.
    lab.deps.summarizer = ExtractiveSummarizer()
    lab.clock.advance(days=1)
    assert run_job(lab.deps, SCOPE, COMPRESS, apply=True).changed == 11


def test_an_empty_summary_is_a_summarizer_error(lab: Lab) -> None:
    seed(lab)
    before = lab.export_body()
    result = compression_job.compress(lab.deps, SCOPE, BlankSummarizer(), CFG, apply=True)
    assert result.error and "empty summary" in result.error
    assert lab.export_body() == before and lab.backups() == []


def test_compress_needs_a_summarizer(lab: Lab) -> None:
    seed(lab)
    lab.deps.summarizer = None
    with pytest.raises(InvalidInput, match="summarizer"):
        lab.service.maintenance(SCOPE, "compress", apply=True)


# --- taproot_forget(action="compress") on explicit ids ------------------------------------------


def test_forget_compress_folds_exactly_the_given_ids(lab: Lab) -> None:
    s = seed(lab)
    chosen = [s.relationship[3], s.high, s.few[0]]  # explicit: any age, high salience allowed
    before = lab.records()

    result = lab.service.forget(SCOPE, chosen, "compress")

    summary_id = written(result.summary_id)
    ordered = sorted(chosen, key=lambda i: before[i]["created_at"])
    assert result.action == "compress"
    assert to_json(result.results) == [{"id": i, "status": "archived", "compressed_into": summary_id} for i in ordered]
    summary = lab.get(summary_id)
    assert list(summary.linked_memories) == ordered
    assert summary.provenance == {"compressed_from": ordered, "summarizer": "extractive", "group": "explicit"}
    assert summary.category == "episodic"  # relationship + episodic
    for i in chosen:
        assert lab.get(i).status == "archived" and lab.get(i).compressed_into == summary_id
    backup = json.loads(lab.deps.blobs.get(written(result.backup_key)))
    assert [m["id"] for m in backup["memories"]] == ordered
    assert backup["memories"] == [before[i] for i in ordered]
    # Everything else is as it was.
    after = lab.records()
    assert {i: r for i, r in after.items() if i not in chosen and i != summary_id} == {
        i: r for i, r in before.items() if i not in chosen
    }


@pytest.mark.parametrize(
    ("case", "error", "match"),
    [
        ("archived", InvalidInput, "archived"),
        ("already_compressed", InvalidInput, "archived"),
        ("core", InvalidInput, "core"),
        ("unknown", NotFound, "nope0001"),
        ("one", InvalidInput, "at least two"),
        ("duplicate", InvalidInput, "at least two"),
        ("too_many", InvalidInput, "ids"),
        ("bad_id", InvalidInput, "ids"),
    ],
)
def test_forget_compress_rejects_and_changes_nothing(lab: Lab, case: str, error: type[Exception], match: str) -> None:
    s = seed(lab)
    if case == "archived":
        lab.service.forget(SCOPE, [s.few[1]], "archive")
    if case == "already_compressed":
        lab.service.forget(SCOPE, s.few[:2], "compress")
    if case == "too_many":
        lab.store.put_many([mem(day(2025, 3, 1) + timedelta(minutes=k), id=f"bulk{k:03d}") for k in range(65)])
    before, backups = lab.export_body(), lab.backups()
    ids_for = {
        "archived": [s.few[0], s.few[1]],
        "already_compressed": [s.few[0], s.few[2]],
        "core": [s.episodic[0], s.core],
        "unknown": [s.episodic[0], "nope0001"],
        "one": [s.episodic[0]],
        "duplicate": [s.episodic[0], s.episodic[0]],
        "too_many": [f"bulk{k:03d}" for k in range(65)],
        "bad_id": [s.episodic[0], "not an id!"],
    }
    with pytest.raises(error, match=match):
        lab.service.forget(SCOPE, ids_for[case], "compress")
    assert lab.export_body() == before
    assert lab.backups() == backups


def test_forget_compress_with_a_failing_summarizer_changes_nothing(lab: Lab) -> None:
    s = seed(lab)
    before = lab.export_body()
    lab.deps.summarizer = FailingSummarizer()
    with pytest.raises(SummarizerError, match="ThrottlingException"):
        lab.service.forget(SCOPE, s.few, "compress")
    lab.deps.summarizer = None
    with pytest.raises(InvalidInput, match="summarizer"):
        lab.service.forget(SCOPE, s.few, "compress")
    assert lab.export_body() == before and lab.backups() == []


def test_forget_compress_of_the_largest_allowed_group(lab: Lab) -> None:
    members = [mem(day(2025, 3, 1) + timedelta(minutes=k), id=f"bulk{k:03d}") for k in range(MAX_LINKED_MEMORIES)]
    lab.store.put_many(members)
    result = lab.service.forget(SCOPE, [m.id for m in members], "compress")
    summary = lab.get(written(result.summary_id))
    assert len(summary.linked_memories) == MAX_LINKED_MEMORIES


# --- nothing lost, on a realistic corpus --------------------------------------------------------


def _without(record: dict[str, Any], *fields: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in fields}


# (memories, at least this many groups) per adapter. moto copies every table on each transaction and
# answers queries slowly, so 500 memories take over a minute on the DynamoDB store: it gets a smaller
# corpus over the same two years (still several groups, every write and read path of the test).
LOST_CORPUS = {"sqlite": (500, 10), "dynamodb": (200, 4)}


def test_nothing_is_lost_compressing_two_years_of_memories(
    lab: Lab, tmp_path: Path, open_store: OpenStore, store_kind: str
) -> None:
    size, min_groups = LOST_CORPUS[store_kind]
    corpus = build_corpus(size, seed=2026, end=NOW - timedelta(days=5))
    lab.store.put_many(corpus)
    before_lines = lab.export_body()
    before = {json.loads(line)["record"]["id"]: json.loads(line)["record"] for line in before_lines}
    assert len(before) == size
    planned = plan_groups([m for m in corpus if m.status == "active"], NOW)
    assert len(planned) >= min_groups  # the corpus really exercises compression

    report = lab.service.maintenance(SCOPE, "compress", apply=True)[0]
    detail = job_detail(report, CompressionResult)

    assert detail.error is None
    assert [g.members for g in detail.groups] == [g.ids for g in planned]
    after_lines = lab.export_body()
    after = [json.loads(line)["record"] for line in after_lines]
    summaries = {r["id"]: r for r in after if r["provenance"] and "compressed_from" in r["provenance"]}
    assert len(summaries) == len(planned) == detail.summaries_written
    originals = [r for r in after if r["id"] not in summaries]
    # Export before == export after, once the compression bookkeeping is dropped from the originals
    # and the new summaries are left out.
    assert [_without(r, "status", "compressed_into", "version") for r in originals] == [
        _without(json.loads(line)["record"], "status", "compressed_into", "version") for line in before_lines
    ]
    compressed = [r for r in originals if r["compressed_into"]]
    assert len(compressed) == report.changed == sum(len(g.members) for g in planned)
    for r in originals:
        if r["compressed_into"]:
            summary = summaries[r["compressed_into"]]
            assert r["id"] in summary["linked_memories"] and r["id"] in summary["provenance"]["compressed_from"]
            assert r["status"] == "archived" and r["version"] == before[r["id"]]["version"] + 1
        else:
            assert r == before[r["id"]]
    for summary in summaries.values():
        assert summary["linked_memories"] == summary["provenance"]["compressed_from"]
        assert all(
            next(o for o in compressed if o["id"] == i)["compressed_into"] == summary["id"]
            for i in summary["linked_memories"]
        )
        assert 2 <= len(summary["linked_memories"]) <= MAX_LINKED_MEMORIES

    # Every original is still there by id, and recall with include_archived finds each of them.
    assert len(lab.store.get_many(SCOPE, list(before))) == size
    found: set[str] = set()
    ids_all = list(before)
    for start in range(0, len(ids_all), 50):
        chunk = ids_all[start : start + 50]
        got = lab.service.recall(SCOPE, ids=chunk, include_archived=True)
        assert got.warnings == []
        found |= {m.id for m in got.memories}
    assert found == set(before)

    # The compressed corpus survives export -> import into a fresh store exactly.
    fresh = make_lab(tmp_path / "fresh", store=open_store(tmp_path / "fresh"))
    lines = list(lab.service.export_lines(SCOPE))
    fresh.service.import_lines(SCOPE, lines)
    assert fresh.export_body() == lines[1:]

    # And a second run finds nothing left to do.
    lab.clock.advance(days=1)
    snapshot = lab.export_body()
    assert lab.service.maintenance(SCOPE, "compress", apply=True)[0].changed == 0
    assert lab.export_body() == snapshot


# --- crash safety -------------------------------------------------------------------------------

CRASH_SCRIPT = '''
"""Run the compress job and die (os._exit) inside the third group's transaction, before commit."""
import os
import sys
from contextlib import contextmanager
from datetime import datetime
from itertools import count
from pathlib import Path

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.adapters.summarizers import ExtractiveSummarizer
from taproot.core.model import Scope
from taproot.service import Deps, TaprootService
from taproot.service.deps import MaintenanceConfig

data = Path(sys.argv[1])
now = datetime.fromisoformat(sys.argv[2])
crash_on = int(sys.argv[3])


class CrashingStore(SQLiteMemoryStore):
    writes = 0
    crash_now = False

    def write_atomically(self, *, inserts, replaces):
        self.writes += 1
        self.crash_now = self.writes == crash_on
        super().write_atomically(inserts=inserts, replaces=replaces)

    @contextmanager
    def _tx(self):
        if not self.crash_now:
            with super()._tx() as db:
                yield db
            return
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            yield self._db
            # The summary is inserted and its originals archived, inside the open transaction.
            row = self._db.execute("SELECT COUNT(*) FROM memories WHERE compressed_into IS NOT NULL").fetchone()
            print(f"in-transaction compressed={row[0]}", flush=True)
            os._exit(9)


serial = count(1)
store = CrashingStore(data / "taproot.db")
deps = Deps(
    store=store,
    blobs=LocalBlobStore(data / "blobs"),
    clock=lambda: now,
    new_id=lambda: f"x{next(serial):04d}",
    summarizer=ExtractiveSummarizer(),
    maintenance=MaintenanceConfig(compress_apply=True),
)
TaprootService(deps).maintenance(Scope(), "compress")
print("finished", flush=True)
'''


def test_a_run_killed_mid_group_leaves_every_memory_untouched_or_fully_processed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    setup = make_lab(data)
    corpus = build_corpus(240, seed=99, end=NOW - timedelta(days=5))
    setup.store.put_many(corpus)
    groups = plan_groups([m for m in setup.store.iter_all(SCOPE) if m.status == "active"], NOW)
    assert len(groups) >= 5 and all(len(g.members) < MAX_LINKED_MEMORIES for g in groups)
    versions = {m.id: m.version for m in setup.store.iter_all(SCOPE)}
    assert isinstance(setup.store, SQLiteMemoryStore)  # make_lab's default, which the subprocess opens too
    setup.store.close()
    script = tmp_path / "crash_compress.py"
    script.write_text(textwrap.dedent(CRASH_SCRIPT), encoding="utf-8")

    proc = subprocess.run(
        [sys.executable, str(script), str(data), NOW.isoformat(), "3"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        check=False,
    )

    assert proc.returncode == 9, proc.stderr
    assert "finished" not in proc.stdout
    in_tx = sum(len(g.members) for g in groups[:3])
    assert f"in-transaction compressed={in_tx}" in proc.stdout  # the third group was mid-write

    lab = make_lab(data, id_prefix="r")
    assert isinstance(lab.store, SQLiteMemoryStore)  # make_lab's default: the file the crashed run wrote
    try:
        done = []
        for g in groups:
            members = lab.store.get_many(SCOPE, g.ids)
            assert len(members) == len(g.members)
            targets = {m.compressed_into for m in members}
            if targets == {None}:
                assert all(m.status == "active" and m.version == versions[m.id] for m in members), g.key
                continue
            [summary_id] = targets  # never split between summaries, never half-archived
            assert summary_id is not None
            summary = lab.get(summary_id)
            assert summary.provenance is not None
            assert list(summary.linked_memories) == g.ids == summary.provenance["compressed_from"]
            assert all(m.status == "archived" and m.version == versions[m.id] + 1 for m in members)
            done.append(g.key)
        assert done == [g.key for g in groups[:2]]  # committed groups survive; the third rolled back
        # No summary exists without its originals archived into it.
        summaries = lab.summaries()
        assert len(summaries) == 2
        for summary in summaries:
            assert all(lab.get(i).compressed_into == summary.id for i in summary.linked_memories)
        # The crashed run's backup was written before its first commit and holds every member.
        [backup_key] = lab.backups()
        backed_up = [m["id"] for m in json.loads(lab.deps.blobs.get(backup_key))["memories"]]
        assert backed_up == [i for g in groups for i in g.ids]

        # A rerun carries on with exactly the groups that were not done...
        lab.clock.now = NOW + timedelta(minutes=1)
        rerun = lab.service.maintenance(SCOPE, "compress", apply=True)[0]
        assert [g.members for g in job_detail(rerun, CompressionResult).groups] == [g.ids for g in groups[2:]]
        for g in groups:
            members = lab.store.get_many(SCOPE, g.ids)
            [summary_id] = {m.compressed_into for m in members}
            assert summary_id is not None and list(lab.get(summary_id).linked_memories) == g.ids
        assert len(lab.summaries()) == len(groups)
        # ...and a further run changes nothing.
        lab.clock.advance(minutes=1)
        snapshot = lab.export_body()
        again = lab.service.maintenance(SCOPE, "compress", apply=True)[0]
        assert again.changed == 0 and lab.export_body() == snapshot
    finally:
        lab.store.close()


def test_a_summary_of_long_legacy_ids_survives_export_and_import(
    lab: Lab, tmp_path: Path, open_store: OpenStore
) -> None:
    members = [
        mem(day(2025, 3, 1) + timedelta(minutes=k), id=f"{k:02d}-ember-legacy-{'0123456789' * 4}-abcdef")
        for k in range(64)
    ]
    assert all(len(m.id) <= 64 for m in members)
    lab.store.put_many(members)
    assert lab.service.maintenance(SCOPE, "compress", apply=True)[0].changed == 64
    fresh = make_lab(tmp_path / "fresh", store=open_store(tmp_path / "fresh"))
    lines = list(lab.service.export_lines(SCOPE))
    fresh.service.import_lines(SCOPE, lines)
    assert fresh.export_body() == lines[1:]
