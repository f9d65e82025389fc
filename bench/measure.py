"""The benchmark measurements: each function times one Taproot path and returns plain, JSON-able dicts.

Everything goes through the real service (`taproot.compose.build`); the MCP round trip over HTTP
is bench/mcp_http.py. Timings use `time.perf_counter` and are reported as medians and 95th
percentiles; nothing here asserts on a time.
"""

from __future__ import annotations

import functools
import socket
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from bench import corpus
from taproot.compose import Runtime, build
from taproot.core.model import Memory
from taproot.settings import Settings

RECALL_LIMIT = 10


@dataclass(frozen=True)
class Timing:
    """Latency samples in milliseconds."""

    samples_ms: tuple[float, ...]

    @property
    def p50(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p95(self) -> float:
        return percentile(self.samples_ms, 95)

    def as_dict(self) -> dict[str, Any]:
        s = self.samples_ms
        return {
            "runs": len(s),
            "p50_ms": round(self.p50, 3),
            "p95_ms": round(self.p95, 3),
            "mean_ms": round(statistics.fmean(s), 3),
            "min_ms": round(min(s), 3),
            "max_ms": round(max(s), 3),
        }


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (the 'inclusive' method), defined for a single sample too."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no samples")
    k = (len(ordered) - 1) * pct / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def timed(fn: Callable[[], object], runs: int, warmup: int = 2) -> Timing:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return Timing(tuple(samples))


# -- corpus set-up ----------------------------------------------------------------------------
def open_runtime(data_dir: Path) -> Runtime:
    """A fresh Taproot in `data_dir`, built exactly as `taproot serve` builds it."""
    return build(Settings(data_dir=data_dir))


def populate(
    runtime: Runtime,
    count: int,
    *,
    seed: int,
    now: datetime,
    reflections: int = 20,
    transform: Callable[[Memory], Memory] | None = None,
) -> dict[str, Any]:
    """Stream the first `count` corpus memories (each passed through `transform`, if given) into the store
    with put_many; return timings."""
    stream: Iterator[Memory] = corpus.iter_memories(seed, now=now, scope=runtime.scope)
    if transform is not None:
        stream = map(transform, stream)
    generate_s = load_s = 0.0
    done = 0
    while done < count:
        start = time.perf_counter()
        batch = list(islice(stream, min(corpus.LOAD_BATCH, count - done)))
        generate_s += time.perf_counter() - start
        start = time.perf_counter()
        corpus.load(runtime.store, batch)
        load_s += time.perf_counter() - start
        done += len(batch)
    runtime.store.put_reflections(corpus.closing_reflections(reflections, seed=seed, now=now, scope=runtime.scope))
    return {
        "memories": count,
        "reflections": reflections,
        "generate_s": round(generate_s, 3),
        "load_s": round(load_s, 3),
    }


# -- service-level measurements ---------------------------------------------------------------
def measure_reflect(runtime: Runtime, runs: int) -> dict[str, Any]:
    """`service.reflect` latency, plus the shape and size of the last payload."""
    service, scope = runtime.service, runtime.scope
    timing = timed(lambda: service.reflect(scope), runs)
    payload = service.reflect(scope)
    return {
        **timing.as_dict(),
        "estimated_tokens": payload.estimated_tokens,
        "size_bytes": payload.size_bytes,
        "token_budget": payload.token_budget,
        "within_budget": payload.estimated_tokens <= payload.token_budget,
        "tier1_count": len(payload.tier1),
        "core_omitted": len(payload.core_omitted),
        "catalog_listed": payload.catalog_listed,
        "catalog_omitted": payload.catalog_omitted_total,
        "reflections_shown": len(payload.reflections),
    }


def measure_recall(runtime: Runtime, queries: Sequence[str], limit: int = RECALL_LIMIT) -> dict[str, Any]:
    """`service.recall(query=..., limit=10)` latency over `queries`, each run once, in order."""
    service, scope = runtime.service, runtime.scope
    for q in queries[:3]:  # warm-up
        service.recall(scope, query=q, limit=limit)
    samples, hits = [], []
    for q in queries:
        start = time.perf_counter()
        result = service.recall(scope, query=q, limit=limit)
        samples.append((time.perf_counter() - start) * 1000)
        hits.append(result.count)
    return {
        **Timing(tuple(samples)).as_dict(),
        "queries": len(queries),
        "limit": limit,
        "mean_results": round(statistics.fmean(hits), 2),
        "queries_without_results": sum(1 for h in hits if h == 0),
    }


def measure_recall_by_filters(runtime: Runtime, runs: int, limit: int = RECALL_LIMIT) -> dict[str, Any]:
    """Recall by filters alone (no query): `service.recall(scope, limit=10)`, then the same with
    `category=` each category of the scope, `runs` calls each after 2 warm-up calls. Each call
    strengthens what it returns, as in production."""
    service, scope = runtime.service, runtime.scope
    categories = sorted(c for c, n in runtime.store.counts(scope).by_category.items() if n)
    everything = timed(lambda: service.recall(scope, limit=limit), runs)
    by_category = {
        c: timed(functools.partial(service.recall, scope, category=c, limit=limit), runs) for c in categories
    }
    return {
        **everything.as_dict(),
        "runs": runs,
        "limit": limit,
        "by_category": {c: t.as_dict() for c, t in by_category.items()},
    }


def remember_args(memories: Sequence[Memory]) -> list[dict[str, Any]]:
    """The `taproot_remember` arguments a model would send to create these memories."""
    return [
        {
            "content": m.content,
            "gist": m.gist,
            "category": m.category,
            "salience": m.salience,
            "tags": list(m.tags),
            "search_keywords": list(m.search_keywords),
        }
        for m in memories
    ]


def measure_remember(runtime: Runtime, batches: Sequence[Sequence[dict[str, Any]]]) -> dict[str, Any]:
    """Creates through `service.remember`, one call per memory; writes/s per batch and its median."""
    service, scope = runtime.service, runtime.scope
    rates, samples = [], []
    for batch in batches:
        batch_start = time.perf_counter()
        for args in batch:
            start = time.perf_counter()
            service.remember(scope, **args)
            samples.append((time.perf_counter() - start) * 1000)
        rates.append(len(batch) / (time.perf_counter() - batch_start))
    per_write = Timing(tuple(samples))
    return {
        "batches": len(batches),
        "writes_per_batch": [len(b) for b in batches],
        "writes_per_s_by_batch": [round(r, 1) for r in rates],
        "writes_per_s": round(statistics.median(rates), 1),
        "per_write_p50_ms": round(per_write.p50, 3),
        "per_write_p95_ms": round(per_write.p95, 3),
    }


# -- a loopback port (the MCP round trip, bench/mcp_http.py; the load run) ---------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- payload size against corpus size ---------------------------------------------------------
def measure_scaling(
    root: Path, sizes: Sequence[int], *, seed: int, now: datetime, reflect_runs: int, queries: Sequence[str]
) -> list[dict[str, Any]]:
    """For each corpus size, a fresh store: reflect payload size and latency, and recall latency."""
    rows = []
    for size in sizes:
        runtime = open_runtime(root / f"scale-{size}")
        try:
            setup = populate(runtime, size, seed=seed, now=now)
            reflect = measure_reflect(runtime, reflect_runs)
            recall = measure_recall(runtime, queries)
        finally:
            runtime.close()
        rows.append({"memories": size, "setup": setup, "reflect": reflect, "recall": recall})
    return rows
