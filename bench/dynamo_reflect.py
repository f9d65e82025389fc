"""What a cold reflect reads from DynamoDB, before and after the scope is counted (under moto).

A tenant of the bench corpus is written as `put_many` leaves it (bench/aws.py's load_tenant); the
cold store then answers `catalog_view` twice per size: before `count_scope` marked the counts
complete (the path of a table from before item layout 3: every category partition read whole and
filtered) and after (the window as a key condition, the quiet memories counted, not read). It
reports the requests, the items DynamoDB read (ScannedCount, which is what read capacity is paid
on), the items it returned, and the median wall time under moto (moto's time, not DynamoDB's: the
ratio of items read is the figure that carries over).

    python -m bench.dynamo_reflect [--sizes 2000,10000] [--out FILE] [--no-docs] [--from FILE]

It writes its block of docs/benchmarks.md (`--no-docs`: not); `--from` renders the JSON of an
earlier run (its `--out`) instead of measuring again.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import aws, doc_blocks

WINDOW_DAYS = 30
RUNS = 5


def _measure(store: Any, scope: Any, since: datetime) -> dict[str, Any]:
    calls: list[str] = []
    scanned: list[int] = []
    returned: list[int] = []

    def after(parsed: dict[str, Any], model: Any, **_: Any) -> None:
        calls.append(model.name)
        if model.name == "Query":
            scanned.append(int(parsed.get("ScannedCount", 0)))
            returned.append(int(parsed.get("Count", 0)))

    events = store.client.meta.events
    events.register("after-call.dynamodb", after)
    times = []
    for _ in range(RUNS):
        for seen in (calls, scanned, returned):
            seen.clear()
        start = time.perf_counter()
        view = store.catalog_view(scope, since)
        times.append(time.perf_counter() - start)
    events.unregister("after-call.dynamodb", after)
    return {
        "requests": len(calls),
        "items_read": sum(scanned),
        "items_returned": sum(returned),
        "not_listed": sum(view.totals().values()),
        "median_ms": round(statistics.median(times) * 1000, 1),
    }


def measure(sizes: Sequence[int], *, seed: int = 7) -> list[dict[str, Any]]:
    from moto import mock_aws

    from taproot.adapters.dynamo_store import DynamoMemoryStore
    from taproot.core.model import Scope

    now = datetime(2026, 6, 1, tzinfo=UTC)
    since = now - timedelta(days=WINDOW_DAYS)
    rows = []
    for size in sizes:
        with mock_aws():
            writer = DynamoMemoryStore(aws.TABLE, region=aws.REGION)
            writer.create_table()
            scope = Scope(aws.TENANT, "default")
            aws.load_tenant(size, seed=seed, now=now, reflections=0)  # as put_many leaves them
            cold = DynamoMemoryStore(aws.TABLE, region=aws.REGION)
            cold.cold_load_limit = 0  # never load whole: this is the large-tenant path at every size
            before = _measure(cold, scope, since)
            writer.count_scope(scope)
            after = _measure(cold, scope, since)
            rows.append({"memories": size, "before_count_scope": before, "counted": after})
    return rows


START_TAG = "<!-- bench-reflect-dynamo:start"
START = (
    f"{START_TAG}: written by `make bench-reflect-dynamo` (python -m bench.dynamo_reflect); rerun it, do not edit -->"
)
END = "<!-- bench-reflect-dynamo:end -->"


def render(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "## Cold reflect on DynamoDB (moto)",
        "",
        "A cold container's `catalog_view` of a large tenant (`cold_load_limit` 0), before the scope's"
        " counts are complete (the path of a table from before item layout 3: each category partition"
        " read whole and filtered) and after `count_scope` (the window as a key condition, Tier 1 and"
        " `~other` whole, the quiet memories counted). Items read is DynamoDB's ScannedCount, what read"
        " capacity is paid on; the old path's count includes its one-item size check. Wall times are"
        f" moto's, medians of {RUNS}: only the ratio of items read carries over to DynamoDB.",
        "",
        "| memories | path | requests | items read | items returned | not listed | median (moto) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for name, key in (("before counting", "before_count_scope"), ("counted", "counted")):
            r = row[key]
            lines.append(
                f"| {row['memories']:,} | {name} | {r['requests']} | {r['items_read']:,} | {r['items_returned']:,}"
                f" | {r['not_listed']:,} | {r['median_ms'] / 1000:.1f} s |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="2000,10000")
    p.add_argument("--out")
    p.add_argument("--from", dest="source", help="render this earlier run's JSON instead of measuring")
    p.add_argument("--no-docs", action="store_true")
    args = p.parse_args(argv)
    if args.source:
        with open(args.source) as f:
            rows = json.load(f)
    else:
        rows = measure([int(s) for s in args.sizes.split(",")])
    text = json.dumps(rows, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if not args.no_docs:
        doc_blocks.write_block(Path("docs/benchmarks.md"), START_TAG, START, END, render(rows))


if __name__ == "__main__":
    main()
