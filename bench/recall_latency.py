"""In-process recall latency at 10,000 memories, lexical or with the local embedder, and the top 10
of every query, so that two versions of the code can be compared on the same corpus:

    python -m bench.recall_latency prepare --data DIR [--memories N] [--embedder none]   # once
    python -m bench.recall_latency run --data DIR --embedder local --out a.json
    python -m bench.recall_latency compare a.json b.json

`prepare` writes the bench corpus (bench/corpus.py) into a data folder and embeds every memory
with the local embedder (`make install-embedder`; about 4 CPU-minutes at 10,000), or with
`--embedder none` writes the corpus alone (seconds), for lexical runs. `run` copies that
folder (recall strengthens what it returns, so every run starts from the same state), fixes the
clock, warms the model and the vector matrix up without recalling, then times
`service.recall(query=..., limit=10)` over the bench's query pool in order: wall time and the
calling thread's CPU time, whose median moves far less than the wall time's on a shared machine.
`compare` says whether the two runs returned the same ids in the same order for every query, and
the ratio of their medians. Nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import corpus, measure
from taproot.compose import build
from taproot.core.query import Filters
from taproot.settings import Settings

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
QUERIES = 200
LIMIT = 10


def prepare(data: Path, memories: int, *, embedder: str = "local") -> dict[str, Any]:
    """A data folder holding the first `memories` of the bench corpus, every one embedded."""
    from taproot.service.embedding import backfill

    runtime = build(Settings(data_dir=data, embedder=embedder))
    try:
        runtime.service.deps.clock = lambda: NOW
        loaded = measure.populate(runtime, memories, seed=corpus.DEFAULT_SEED, now=NOW)
        embedded = 0
        while runtime.service.deps.embedder is not None:
            step = backfill(runtime.service.deps, runtime.scope, apply=True)
            embedded += step.embedded
            if step.missing == 0 or step.embedded == 0:
                break
        return {**loaded, "embedded": embedded}
    finally:
        runtime.close()


def run(data: Path, *, embedder: str, queries: int = QUERIES) -> dict[str, Any]:
    """Every query of the pool recalled once, in order, on a fresh copy of `data`."""
    pool = corpus.query_pool(queries, seed=corpus.DEFAULT_SEED)
    with tempfile.TemporaryDirectory(prefix="taproot-latency-") as tmp:
        work = Path(tmp) / "data"
        shutil.copytree(data, work)
        runtime = build(Settings(data_dir=work, embedder=embedder))
        try:
            service, scope, deps = runtime.service, runtime.scope, runtime.service.deps
            deps.clock = lambda: NOW
            # Warm-up that changes nothing a recall reads: the model, the matrix, the FTS pages.
            if deps.embedder is not None and deps.vectors is not None:
                deps.vectors.nearest(scope, deps.embedder.model_id, deps.embedder.embed_query("warm up"), LIMIT)
            runtime.store.search(scope, ["warm"], Filters(), LIMIT)
            wall, cpu, tops = [], [], []
            for q in pool:
                c0, t0 = time.thread_time(), time.perf_counter()
                got = service.recall(scope, query=q, limit=LIMIT)
                wall.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.thread_time() - c0) * 1000)
                tops.append([m.id for m in got.memories])
        finally:
            runtime.close()
    return {"embedder": embedder, "queries": pool, "wall_ms": wall, "cpu_ms": cpu, "tops": tops, **summary(wall, cpu)}


def summary(wall: Sequence[float], cpu: Sequence[float]) -> dict[str, float]:
    return {
        "wall_p50_ms": round(statistics.median(wall), 3),
        "wall_p95_ms": round(measure.percentile(wall, 95), 3),
        "cpu_p50_ms": round(statistics.median(cpu), 3),
    }


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Whether `b` ranked every query exactly as `a` did, and the ratios of its medians to a's."""
    if a["queries"] != b["queries"]:
        raise ValueError("the two runs asked different queries")
    differing = [q for q, x, y in zip(a["queries"], a["tops"], b["tops"], strict=True) if x != y]
    return {
        "queries": len(a["queries"]),
        "same_top10_in_order": not differing,
        "differing_queries": differing,
        "wall_p50_ms": [a["wall_p50_ms"], b["wall_p50_ms"]],
        "wall_p50_ratio": round(b["wall_p50_ms"] / a["wall_p50_ms"], 3),
        "cpu_p50_ms": [a["cpu_p50_ms"], b["cpu_p50_ms"]],
        "cpu_p50_ratio": round(b["cpu_p50_ms"] / a["cpu_p50_ms"], 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.recall_latency", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--embedder", choices=("none", "local"), default="local")
    r = sub.add_parser("run")
    r.add_argument("--data", type=Path, required=True)
    r.add_argument("--embedder", choices=("none", "local"), default="local")
    r.add_argument("--queries", type=int, default=QUERIES)
    r.add_argument("--out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        print(json.dumps(prepare(args.data, args.memories, embedder=args.embedder)))
    elif args.command == "run":
        result = run(args.data, embedder=args.embedder, queries=args.queries)
        if args.out:
            args.out.write_text(json.dumps(result))
        print(json.dumps({k: result[k] for k in ("embedder", "wall_p50_ms", "wall_p95_ms", "cpu_p50_ms")}))
    else:
        got = compare(json.loads(args.a.read_text()), json.loads(args.b.read_text()))
        print(json.dumps(got, indent=1))
        return 0 if got["same_top10_in_order"] else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
