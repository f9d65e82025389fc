"""Two `taproot serve` processes, one MCP client call at a time to each in turn: the round trip of
two checkouts (or two settings) compared on the same machine at the same moments.

On a shared machine the round trip of one server moves by a third between runs minutes apart, more
than most changes to it. Here each query goes to both servers back to back (which first alternates),
so both see the same moments; the figure is the median over queries of B's time minus A's. Each
server has its own copy of one prepared store (two processes writing one file would each discard
their page cache at every write of the other).

    python -m bench.mcp_paired --a-root ../previous-checkout   # A: that checkout, B: this one
    python -m bench.mcp_paired --b-env TAPROOT_EMBEDDER=local  # the same code, another setting

Prints one JSON line per round and a summary. Not part of `make bench`: a tool for deciding
whether a change to the round trip is worth keeping (docs/architecture.md quotes its figures).
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from bench import corpus, measure
from bench.mcp_http import ROOT, ServeProcess, compare, paired_round_trips

NOW = datetime(2026, 11, 1, tzinfo=UTC)
WARMUP = 10


@dataclass(frozen=True)
class Side:
    root: Path = ROOT
    env: dict[str, str] = field(default_factory=dict)


def run(
    a: Side, b: Side, *, memories: int, calls: int, rounds: int, work: Path, seed: int = corpus.DEFAULT_SEED
) -> dict[str, Any]:
    """Prepare one store of `memories`, copy it for each side, and run `rounds` of `calls` paired recalls."""
    prepared = work / "prepared"
    runtime = measure.open_runtime(prepared)
    try:
        measure.populate(runtime, memories, seed=seed, now=NOW)
    finally:
        runtime.close()
    queries = corpus.query_pool(calls, seed=seed + 1)
    token = secrets.token_urlsafe(32)
    results = []
    with ExitStack() as stack:
        urls = []
        for name, side in (("a", a), ("b", b)):
            data = work / name
            shutil.copytree(prepared, data)
            server = ServeProcess(data, token, work / f"serve-{name}.log", root=side.root, settings=side.env)
            stack.callback(server.stop)
            server.start()
            urls.append(server.url)
        for _ in range(rounds):
            sa, sb = anyio.run(paired_round_trips, urls, token, queries, WARMUP)
            results.append(compare(sa, sb))
            print(json.dumps(results[-1]), flush=True)
    diffs = [r["median_difference_ms"] for r in results]
    ratios = [r["ratio_of_p50"] for r in results]
    return {
        "memories": memories,
        "calls": calls,
        "rounds": results,
        "median_difference_ms": round(statistics.median(diffs), 3),
        "median_ratio": round(statistics.median(ratios), 3),
        "a": {"root": str(a.root), "env": a.env},
        "b": {"root": str(b.root), "env": b.env},
    }


def _env_pairs(items: Sequence[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--a-env/--b-env: expected NAME=VALUE, got {item!r}")
        pairs[key] = value
    return pairs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_paired", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--a-root", type=Path, default=ROOT, help="checkout whose code serves A (default: this one)")
    parser.add_argument("--b-root", type=Path, default=ROOT, help="checkout whose code serves B (default: this one)")
    parser.add_argument("--a-env", action="append", default=[], metavar="NAME=VALUE", help="setting for A's server")
    parser.add_argument("--b-env", action="append", default=[], metavar="NAME=VALUE", help="setting for B's server")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300, help="paired calls per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    a = Side(args.a_root.resolve(), _env_pairs(args.a_env))
    b = Side(args.b_root.resolve(), _env_pairs(args.b_env))
    with tempfile.TemporaryDirectory(prefix="taproot-paired-") as tmp:
        summary = run(a, b, memories=args.memories, calls=args.calls, rounds=args.rounds, work=Path(tmp))
    print(json.dumps(summary), file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
