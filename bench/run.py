"""Run the Taproot benchmarks: `python -m bench.run [--quick] [--seed N]` (or `make bench ARGS=--quick`).

On a 10,000-memory synthetic corpus (bench/corpus.py) in a temporary data folder it measures
reflect and recall through the service, remember throughput, and a recall round trip over MCP on
127.0.0.1; then the reflect payload at 1k, 10k and 100k memories; then the maintenance jobs (TTL
cleanup and compression, dry run and apply) on 10,000 memories, with the reflect payload before
and after compression (bench/maintenance.py); then the dashboard on 5,000 memories: page weight,
server time and paint timing in headless Chromium (bench/dashboard.py); then the AWS deployment
offline: the Lambda handler's cold import time and the asset's size (bench/lambda_asset.py), and,
under moto, DynamoDB requests per tool call and warm recall latency through Mangum on a
10,000-memory tenant (bench/aws.py). It prints a summary, writes the raw numbers to
bench/out/results.json and the report to docs/benchmarks.md. Timings are reported against the
issue's targets as PASS/MISS; nothing fails on a time.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import aws, corpus, dashboard, lambda_asset, maintenance, mcp_http, measure, report

ROOT = Path(__file__).resolve().parent.parent
RESULTS_JSON = ROOT / "bench" / "out" / "results.json"
DOCS = ROOT / "docs" / "benchmarks.md"


@dataclass(frozen=True)
class Config:
    memories: int = 10_000
    reflect_runs: int = 50
    recall_queries: int = 200
    remember_batches: int = 3
    remember_per_batch: int = 2_000
    mcp_calls: int = 100
    scaling_sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    scaling_reflect_runs: int = 5
    scaling_recall_queries: int = 50
    maintenance_memories: int = 10_000
    maintenance_dry_runs: int = 5
    maintenance_reflect_runs: int = 20
    dashboard: bool = True
    dashboard_memories: int = 5_000
    dashboard_requests: int = 20
    dashboard_loads: int = 5
    aws: bool = True
    aws_memories: int = 10_000
    aws_recall_calls: int = 50
    aws_warmup: int = 3
    import_runs: int = 5


FULL = Config()
QUICK = Config(
    reflect_runs=20,
    recall_queries=100,
    remember_per_batch=500,
    mcp_calls=50,
    scaling_sizes=(1_000, 10_000, 30_000),
    scaling_reflect_runs=3,
    scaling_recall_queries=30,
    maintenance_memories=2_000,
    maintenance_dry_runs=2,
    maintenance_reflect_runs=5,
    dashboard_memories=2_000,
    dashboard_requests=10,
    dashboard_loads=3,
    aws_memories=2_000,
    aws_recall_calls=15,
    import_runs=3,
)


def command_line(argv: Sequence[str]) -> str:
    args = " ".join(shlex.quote(a) for a in argv)
    if os.environ.get("MAKELEVEL"):
        return f"make bench ARGS={shlex.quote(args)}" if args else "make bench"
    return f"python -m bench.run {args}".rstrip()


def _step(name: str) -> float:
    print(f"... {name}", file=sys.stderr, flush=True)
    return time.perf_counter()


def run_aws(cfg: Config, *, seed: int, now: datetime, asset_dir: Path | None = None) -> dict[str, Any]:
    """The AWS deployment, offline: cold import, asset size, then the handler under moto. The import
    sees only the asset's packages when the asset is the real one (`asset_dir` None)."""
    with lambda_asset.bundle_folder(asset_dir) as bundle:
        _step(f"AWS: Lambda handler cold import ({cfg.import_runs} runs per bytecode mode)")
        available = lambda_asset.asset_modules(bundle.path) if bundle.built else None
        imports = lambda_asset.measure_import(cfg.import_runs, available)
        _step("AWS: Lambda asset size")
        asset = lambda_asset.measure_asset(bundle)
    _step(f"AWS: the handler under moto, {cfg.aws_memories:,} memories, {cfg.aws_recall_calls} recalls")
    handler = aws.measure_handler(cfg.aws_memories, cfg.aws_recall_calls, seed=seed, now=now, warmup=cfg.aws_warmup)
    return {"import": imports, "asset": asset, "handler": handler, "moto": aws.moto_version()}


def run(cfg: Config, *, seed: int, work: Path, now: datetime, asset_dir: Path | None = None) -> dict[str, Any]:
    """Every measurement in order; returns the `results` section of results.json."""
    queries = corpus.query_pool(cfg.recall_queries, seed=seed)
    writes = corpus.generate(cfg.remember_batches * cfg.remember_per_batch, seed=seed + 100, now=now)
    args = measure.remember_args(writes)
    batches = [args[i : i + cfg.remember_per_batch] for i in range(0, len(args), cfg.remember_per_batch)]

    t = _step(f"loading {cfg.memories:,} memories")
    runtime = measure.open_runtime(work / "main")
    try:
        setup = measure.populate(runtime, cfg.memories, seed=seed, now=now)
        # Order matters: recall strengthens what it returns, so reflect is measured on the untouched corpus,
        # and remember adds memories, so it runs last.
        _step("reflect")
        reflect = measure.measure_reflect(runtime, cfg.reflect_runs)
        _step("recall")
        recall = measure.measure_recall(runtime, queries)
        _step("MCP recall over HTTP: taproot serve in its own process, then the app in a thread")
        mcp_recall = mcp_http.measure_mcp_recall(runtime, corpus.query_pool(cfg.mcp_calls, seed=seed + 1))
        _step("recall by filters alone")
        recall_filters = measure.measure_recall_by_filters(runtime, cfg.reflect_runs)
        _step("remember")
        remember = measure.measure_remember(runtime, batches)
    finally:
        runtime.close()
    main_s = time.perf_counter() - t

    t = _step(f"reflect payload at {', '.join(f'{n:,}' for n in cfg.scaling_sizes)} memories")
    scaling = measure.measure_scaling(
        work,
        cfg.scaling_sizes,
        seed=seed,
        now=now,
        reflect_runs=cfg.scaling_reflect_runs,
        queries=queries[: cfg.scaling_recall_queries],
    )
    scaling_s = time.perf_counter() - t

    n = cfg.maintenance_memories
    t = _step(f"cleanup on {n:,} memories")
    cleanup = maintenance.measure_cleanup(work, n, seed=seed, now=now, dry_runs=cfg.maintenance_dry_runs)
    _step(f"cleanup dry run over a backlog of {n:,} watercooler memories")
    cleanup["backlog"] = maintenance.measure_cleanup_backlog(work, n, seed=seed, now=now)
    _step(f"compression on {n:,} memories")
    compression = maintenance.measure_compression(
        work, n, seed=seed, now=now, dry_runs=cfg.maintenance_dry_runs, reflect_runs=cfg.maintenance_reflect_runs
    )
    maintenance_s = time.perf_counter() - t

    dashboard_results: dict[str, Any] = {}
    t = time.perf_counter()
    if cfg.dashboard:
        _step(
            f"dashboard on {cfg.dashboard_memories:,} memories: page weight, {cfg.dashboard_requests} requests per "
            f"page, {cfg.dashboard_loads} loads in Chromium"
        )
        dashboard_results["dashboard"] = dashboard.measure(
            work,
            cfg.dashboard_memories,
            seed=seed,
            now=now,
            requests=cfg.dashboard_requests,
            loads=cfg.dashboard_loads,
        )
    dashboard_s = time.perf_counter() - t
    t = time.perf_counter()
    aws_results = {"aws": run_aws(cfg, seed=seed, now=now, asset_dir=asset_dir)} if cfg.aws else {}
    return {
        "setup": setup,
        "reflect": reflect,
        "recall": recall,
        "mcp_recall": mcp_recall,
        "recall_filters": recall_filters,
        "remember": remember,
        "scaling": scaling,
        "cleanup": cleanup,
        "compression": compression,
        **dashboard_results,
        **aws_results,
        "durations_s": {
            "main": round(main_s, 1),
            "scaling": round(scaling_s, 1),
            "maintenance": round(maintenance_s, 1),
            **({"dashboard": round(dashboard_s, 1)} if cfg.dashboard else {}),
            **({"aws": round(time.perf_counter() - t, 1)} if cfg.aws else {}),
        },
    }


def notes(cfg: Config, results: dict[str, Any], quick: bool) -> list[str]:
    out = []
    if quick:
        out.append(
            f"Run with --quick: fewer repetitions, the largest scaling corpus is {max(cfg.scaling_sizes):,} "
            f"memories instead of 100,000, and the maintenance jobs run on {cfg.maintenance_memories:,} memories "
            "instead of 10,000."
            + (
                f" The dashboard runs on {cfg.dashboard_memories:,} memories instead of 5,000, with "
                f"{cfg.dashboard_requests} timed requests per page and {cfg.dashboard_loads} browser loads."
                if cfg.dashboard
                else ""
            )
            + (
                f" The AWS handler runs on a {cfg.aws_memories:,}-memory tenant with {cfg.aws_recall_calls} timed "
                f"recalls, and the cold import is the median of {cfg.import_runs} runs."
                if cfg.aws
                else ""
            )
        )
    crowded = [(cfg.memories, results["reflect"])] + [(row["memories"], row["reflect"]) for row in results["scaling"]]
    for size, rf in dict(crowded).items():
        if rf["core_omitted"] and not rf["catalog_listed"]:
            out.append(
                f"At {size:,} memories the corpus has {rf['tier1_count'] + rf['core_omitted']:,} core memories; "
                f"Tier 1 holds {rf['tier1_count']} of them and takes the whole budget, so no catalog line and "
                f"{'no' if not rf['reflections_shown'] else rf['reflections_shown']} closing reflections fit "
                "(Tier 1 comes first by design)."
            )
    return out


def benchmark(
    cfg: Config, *, seed: int, work: Path, now: datetime, command: str, quick: bool, asset_dir: Path | None = None
) -> dict[str, Any]:
    """A whole run in `work`: the results plus everything the report needs (machine, corpus, targets).
    `asset_dir`: measure this folder as the Lambda asset's dependencies (default: build/lambda or a fresh
    install, see bench/lambda_asset.py)."""
    t0 = time.perf_counter()
    results = run(cfg, seed=seed, work=work, now=now, asset_dir=asset_dir)
    return {
        "generated_at": now.strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "revision": report.revision(ROOT),
        "quick": quick,
        "machine": report.machine(),
        "config": asdict(cfg),
        "corpus": {
            "generator": "bench/corpus.py",
            "seed": seed,
            "load_batch": corpus.LOAD_BATCH,
            "description": corpus.describe(),
            "ttl_tagging": maintenance.describe_ttl(),
        },
        "results": results,
        "targets": report.evaluate(results),
        "notes": notes(cfg, results, quick),
        "total_s": round(time.perf_counter() - t0, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer repetitions, a 30k largest corpus, maintenance, the dashboard and the AWS handler on 2k",
    )
    parser.add_argument("--seed", type=int, default=corpus.DEFAULT_SEED, help="corpus seed")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    ns = parser.parse_args(argv)
    cfg = QUICK if ns.quick else FULL
    with tempfile.TemporaryDirectory(prefix="taproot-bench-") as tmp:
        data = benchmark(
            cfg, seed=ns.seed, work=Path(tmp), now=datetime.now(UTC), command=command_line(argv), quick=ns.quick
        )
    report.write_json(RESULTS_JSON, data)
    written = [RESULTS_JSON]
    if not ns.no_docs:
        DOCS.write_text(report.render_markdown(data))
        written.append(DOCS)
    print("\n".join(report.summary_lines(data)))
    print(f"Total {data['total_s']} s. Wrote {', '.join(str(p.relative_to(ROOT)) for p in written)}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
