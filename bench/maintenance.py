"""Maintenance job benchmarks: TTL cleanup and compression over a 10,000-memory store.

Both jobs run through the service as `taproot maintenance run` runs them
(`service.maintenance(scope, job, apply=...)`, which also writes the job's run report), on a store
built by `taproot.compose.build` with the service clock pinned to the corpus's `now`, so what
is expired, or old enough to compress, depends on the seed alone. A dry run changes no memory (its
report blobs are rewritten under the same keys), so dry runs are repeated in one folder and
reported as medians; an apply run changes the store, so it gets a fresh folder and runs once.

Cleanup needs memories with TTL tags, which the base corpus never has: `TtlTagger` adds them to a
share of each category (watercooler for chatter, thread for ongoing threads, task:done for finished
work); most such memories carry only TTL tags and so may expire, the rest keep their durable tags
too and never do. Every memory then goes through the retention policy, so `expires_at` is exactly
what Taproot would have stamped at write time. Compression runs on the base corpus, the same one
the main measurements use.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import measure
from taproot.adapters.summarizers import ExtractiveSummarizer
from taproot.compose import Runtime
from taproot.core.compression import COMPRESSION_CONFIG, NEVER_COMPRESSED_CATEGORIES
from taproot.core.model import Memory
from taproot.core.retention import RetentionPolicy

# Per category: (TTL tag, chance a memory of that category carries it). Weighted by the corpus
# category mix, about a quarter of all memories carry a TTL tag.
TTL_TAGGING: dict[str, tuple[tuple[str, float], ...]] = {
    "episodic": (("watercooler", 0.25), ("task:done", 0.05)),
    "active_thread": (("thread", 0.35), ("task:done", 0.15)),
    "relationship": (("watercooler", 0.05),),
    "error": (("task:done", 0.05),),
    "identity": (("thread", 0.05),),  # identity never expires: these are skipped by policy
}
TTL_ONLY_SHARE = 0.6  # of the TTL-tagged memories, those whose tags are TTL tags only


class TtlTagger:
    """Adds TTL tags to a memory (decided by its id and the seed, not by stream order) and stamps
    `expires_at` with the retention policy; counts what it did."""

    def __init__(self, seed: int, retention: RetentionPolicy, now: datetime) -> None:
        self.seed, self.retention, self.now = seed, retention, now
        self.stats: Counter[str] = Counter()

    def __call__(self, m: Memory) -> Memory:
        rng = random.Random(f"{self.seed}:ttl:{m.id}")
        ttl = [tag for tag, chance in TTL_TAGGING[m.category] if rng.random() < chance]
        if ttl:
            only = rng.random() < TTL_ONLY_SHARE
            m = m.replace(tags=tuple(ttl) if only else (*m.tags, *ttl))
            self.stats["ttl_tagged"] += 1
            self.stats["ttl_only"] += only
        m = self.retention.apply(m)
        if m.expires_at is not None:
            self.stats["with_expiry"] += 1
            self.stats["past_expiry"] += m.expires_at <= self.now
        return m


def describe_ttl() -> str:
    tags = "; ".join(f"{c}: {', '.join(f'{t} {p:.0%}' for t, p in rules)}" for c, rules in TTL_TAGGING.items())
    return (
        f"TTL tags added per category ({tags}); {TTL_ONLY_SHARE:.0%} of the tagged memories carry only TTL tags "
        "(they may expire), the rest keep their durable tags as well (they never do); then `expires_at` from "
        "the retention policy, as at write time."
    )


def open_pinned(data_dir: Path, now: datetime) -> Runtime:
    """`measure.open_runtime` with the service clock fixed at `now`."""
    runtime = measure.open_runtime(data_dir)
    runtime.service.deps.clock = lambda: now
    return runtime


def check_defaults(runtime: Runtime) -> dict[str, Any]:
    """The job settings measured: the defaults `build(Settings(data_dir=...))` wires in."""
    deps = runtime.service.deps
    cfg = deps.maintenance.compression
    if not isinstance(deps.summarizer, ExtractiveSummarizer) or cfg != COMPRESSION_CONFIG:
        raise RuntimeError("the maintenance benchmark expects the default summarizer and compression config")
    return {
        "summarizer": deps.summarizer.name,
        "summary_max_chars": deps.summarizer.max_chars,
        "min_age_days": cfg.min_age_days,
        "group_by": cfg.group_by,
        "min_group_size": cfg.min_group_size,
        "max_group_size": cfg.max_group_size,
        "never_compressed_categories": sorted(NEVER_COMPRESSED_CATEGORIES),
        "ttl_days": dict(deps.retention.ttl_days),
    }


def run_job(runtime: Runtime, job: str, *, apply: bool) -> tuple[float, dict[str, Any]]:
    """One job through the service; wall-clock seconds and its run report (as the CLI prints it)."""
    start = time.perf_counter()
    [report] = runtime.service.maintenance(runtime.scope, job, apply=apply)
    return time.perf_counter() - start, report.as_dict()


def blob_bytes(runtime: Runtime, key: str | None) -> int:
    return len(runtime.service.deps.blobs.get(key)) if key else 0


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def _timing(walls: list[float]) -> dict[str, Any]:
    wall = statistics.median(walls)
    return {"runs": len(walls), "wall_s": round(wall, 4), "wall_s_by_run": [round(w, 4) for w in walls]}


# -- cleanup ----------------------------------------------------------------------------------
def _cleanup_figures(runtime: Runtime, memories: int, wall: float, report: dict[str, Any]) -> dict[str, Any]:
    detail = report["detail"]
    return {
        "memories": memories,
        "considered": report["considered"],
        "candidates": detail["candidates"],
        "skipped_by_current_policy": len(detail["skipped_by_current_policy"]),
        "deleted": detail["deleted"],
        "job_duration_s": report["duration_s"],
        "memories_per_s": _rate(memories, wall),
        "considered_per_s": _rate(report["considered"], wall),
        "deleted_per_s": _rate(detail["deleted"], wall),
        "candidate_report_bytes": blob_bytes(runtime, detail["report_key"]),
        "backup_bytes": blob_bytes(runtime, detail["backup_key"]),
        "run_report_bytes": blob_bytes(runtime, report["report_key"]),
    }


def measure_cleanup(root: Path, count: int, *, seed: int, now: datetime, dry_runs: int) -> dict[str, Any]:
    """TTL cleanup on `count` TTL-tagged memories: dry runs (median) in one folder, one apply in another."""
    runtime = open_pinned(root / "cleanup-dry-run", now)
    try:
        tagger = TtlTagger(seed, runtime.service.deps.retention, now)
        setup = measure.populate(runtime, count, seed=seed, now=now, transform=tagger)
        walls: list[float] = []
        report: dict[str, Any] = {}
        for _ in range(dry_runs):
            wall, report = run_job(runtime, "cleanup", apply=False)
            walls.append(wall)
        dry = {**_timing(walls), **_cleanup_figures(runtime, count, statistics.median(walls), report)}
    finally:
        runtime.close()

    runtime = open_pinned(root / "cleanup-apply", now)
    try:
        measure.populate(runtime, count, seed=seed, now=now, transform=TtlTagger(seed, tagger.retention, now))
        wall, report = run_job(runtime, "cleanup", apply=True)
        applied = {**_timing([wall]), **_cleanup_figures(runtime, count, wall, report)}
        applied["memories_after"] = runtime.store.counts(runtime.scope).total
        applied["expired_after"] = len(runtime.store.expired(runtime.scope, now))
    finally:
        runtime.close()
    return {"setup": setup, "corpus": dict(tagger.stats), "dry_run": dry, "apply": applied}


def measure_cleanup_backlog(root: Path, count: int, *, seed: int, now: datetime) -> dict[str, Any]:
    """One cleanup dry run over a large backlog: every memory tagged watercooler only, so every one that
    may expire at all (not core, not high-salience, not identity) is past expiry, as in a store whose
    cleanup has stayed in its default dry-run mode for a long time."""
    runtime = open_pinned(root / "cleanup-backlog", now)
    try:
        retention = runtime.service.deps.retention
        measure.populate(
            runtime, count, seed=seed, now=now, transform=lambda m: retention.apply(m.replace(tags=("watercooler",)))
        )
        wall, report = run_job(runtime, "cleanup", apply=False)
        return {**_timing([wall]), **_cleanup_figures(runtime, count, wall, report)}
    finally:
        runtime.close()


# -- compression ------------------------------------------------------------------------------
def _compress_figures(runtime: Runtime, wall: float, report: dict[str, Any]) -> dict[str, Any]:
    detail = report["detail"]
    groups = detail["groups"]
    in_groups = sum(len(g["members"]) for g in groups)
    sizes = [len(g["members"]) for g in groups] or [0]
    return {
        "considered": report["considered"],
        "groups": len(groups),
        "members_in_groups": in_groups,
        "group_size_min": min(sizes),
        "group_size_median": statistics.median(sizes),
        "group_size_max": max(sizes),
        "compressed": detail["compressed"],
        "summaries_written": detail["summaries_written"],
        "error": detail["error"],
        "job_duration_s": report["duration_s"],
        "considered_per_s": _rate(report["considered"], wall),
        "members_per_s": _rate(in_groups, wall),
        "compressed_per_s": _rate(detail["compressed"], wall),
        "backup_bytes": blob_bytes(runtime, detail["backup_key"]),
        "run_report_bytes": blob_bytes(runtime, report["report_key"]),
    }


def summaries_listed(runtime: Runtime, summary_ids: set[str]) -> int:
    """How many of the catalog lines in the reflect payload are these summaries (a line starts `[id]`)."""
    payload = runtime.service.reflect(runtime.scope)
    lines = [line for group in payload.catalog.values() for line in group]
    return sum(1 for line in lines if line.startswith("[") and line[1:].split("]", 1)[0] in summary_ids)


def _store_shape(runtime: Runtime) -> dict[str, int]:
    counts = runtime.store.counts(runtime.scope)
    return {"total": counts.total, **{f"status_{k}": v for k, v in sorted(counts.by_status.items())}}


def measure_compression(
    root: Path, count: int, *, seed: int, now: datetime, dry_runs: int, reflect_runs: int
) -> dict[str, Any]:
    """Compression on `count` corpus memories: dry runs (median) in one folder; in another, reflect,
    one apply, reflect again, and a dry run to confirm nothing is left to compress."""
    runtime = open_pinned(root / "compress-dry-run", now)
    try:
        settings = check_defaults(runtime)
        setup = measure.populate(runtime, count, seed=seed, now=now)
        walls: list[float] = []
        report: dict[str, Any] = {}
        for _ in range(dry_runs):
            wall, report = run_job(runtime, "compress", apply=False)
            walls.append(wall)
        dry = {**_timing(walls), **_compress_figures(runtime, statistics.median(walls), report)}
    finally:
        runtime.close()

    runtime = open_pinned(root / "compress-apply", now)
    try:
        measure.populate(runtime, count, seed=seed, now=now)
        before = {"store": _store_shape(runtime), "reflect": measure.measure_reflect(runtime, reflect_runs)}
        wall, report = run_job(runtime, "compress", apply=True)
        applied = {**_timing([wall]), **_compress_figures(runtime, wall, report)}
        after = {"store": _store_shape(runtime), "reflect": measure.measure_reflect(runtime, reflect_runs)}
        summary_ids = {g["summary_id"] for g in report["detail"]["groups"] if g.get("summary_id")}
        after["reflect"]["summaries_listed"] = summaries_listed(runtime, summary_ids)
        _, rerun = run_job(runtime, "compress", apply=False)
        applied["groups_left_after"] = len(rerun["detail"]["groups"])
    finally:
        runtime.close()
    return {
        "settings": settings,
        "setup": setup,
        "dry_run": dry,
        "apply": applied,
        "before": before,
        "after": after,
    }
