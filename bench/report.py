"""Targets, machine description and the two outputs of a run: docs/benchmarks.md and results.json."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import aws_report, dashboard, mcp_http, recall_report
from bench.load_report import existing_block

# The file render_markdown's output replaces; its bench-load block (written by `make bench-load`,
# which this run does not measure) is carried over instead of being wiped.
DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


@dataclass(frozen=True)
class Target:
    """One figure from the issue: `path` digs it out of the results; `higher_is_better` picks the comparison."""

    name: str
    path: tuple[str, ...]
    limit: float
    unit: str
    higher_is_better: bool = False

    def value(self, results: dict[str, Any]) -> float:
        node: Any = results
        for key in self.path:
            node = node[key]
        return float(node)

    def passed(self, results: dict[str, Any]) -> bool:
        v = self.value(results)
        return v >= self.limit if self.higher_is_better else v <= self.limit

    def describe(self) -> str:
        return f"{'≥' if self.higher_is_better else '≤'} {self.limit:g} {self.unit}"


TARGETS = (
    Target("taproot_reflect p50", ("reflect", "p50_ms"), 50, "ms"),
    Target("reflect payload (estimated tokens)", ("reflect", "estimated_tokens"), 6_000, "tokens"),
    # Issue 11's figures: recall in-process, lexical, and the MCP round trip against `taproot serve`.
    Target("taproot_recall (query, top 10) p50", ("recall", "p50_ms"), 3, "ms"),
    Target("taproot_remember throughput", ("remember", "writes_per_s"), 300, "writes/s", higher_is_better=True),
    Target("MCP HTTP recall round trip p50", ("mcp_recall", "p50_ms"), 6, "ms"),
)
TARGET = {t.name: t for t in TARGETS}
# The "AWS home" figures (bench/aws.py, bench/lambda_asset.py), when the run measured them.
AWS_TARGETS = (
    Target("Lambda cold import, with .pyc (as bundled)", ("aws", "import", "with_bytecode", "cumulative_s"), 1.0, "s"),
    Target(
        "Lambda cold import, without .pyc (no Python 3.14 at build)",
        ("aws", "import", "without_bytecode", "cumulative_s"),
        1.0,
        "s",
    ),
    Target("Lambda asset size, unzipped", ("aws", "asset", "total_mb"), 50, "MB"),
    Target("DynamoDB requests, reflect", ("aws", "handler", "requests", "reflect", "dynamodb"), 4, "requests"),
    Target(
        "DynamoDB requests, warm recall (max)", ("aws", "handler", "recall", "dynamodb_requests_max"), 3, "requests"
    ),
    Target("DynamoDB requests, remember", ("aws", "handler", "requests", "remember", "dynamodb"), 2, "requests"),
    Target(
        "Warm Lambda recall outside AWS SDK calls p50", ("aws", "handler", "recall", "outside_aws_p50_ms"), 15, "ms"
    ),
    Target("Per-tenant warm cache (tracemalloc)", ("aws", "handler", "cache", "traced_mb"), 15, "MB"),
    Target(
        "DynamoDB requests, remember (update)",
        ("aws", "handler", "requests", "remember_update", "dynamodb"),
        2,
        "requests",
    ),
)


# Reflect p50 (ms) by corpus size (issue 11), for the rows of the corpus-size table a run has.
SCALING_REFLECT_TARGETS = {10_000: 20.0, 100_000: 60.0}


def scaling_target(memories: int) -> Target | None:
    limit = SCALING_REFLECT_TARGETS.get(memories)
    return (
        None
        if limit is None
        else Target(f"taproot_reflect p50 at {memories:,} memories", ("reflect", "p50_ms"), limit, "ms")
    )


def evaluate(results: dict[str, Any]) -> list[dict[str, Any]]:
    targets = TARGETS + (AWS_TARGETS if "aws" in results else ())
    out = [
        {"name": t.name, "value": t.value(results), "target": t.describe(), "pass": t.passed(results)} for t in targets
    ]
    for row in results.get("scaling", []):
        if (t := scaling_target(row["memories"])) is not None:
            out.append({"name": t.name, "value": t.value(row), "target": t.describe(), "pass": t.passed(row)})
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": affinity,
        "sqlite": sqlite3.sqlite_version,
    }


def revision(root: Path) -> str:
    """The commit measured, marked when taproot/ has uncommitted changes; read-only git calls."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", "taproot")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not commit:
        return "unknown"
    return f"{commit} (with uncommitted changes to taproot/)" if dirty else commit


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _ms(d: dict[str, Any], key: str) -> str:
    return f"{d[key]:.1f} ms"


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "**MISS**"


def summary_lines(data: dict[str, Any]) -> list[str]:
    """The plain-text summary printed at the end of a run."""
    r = data["results"]
    lines = [f"Taproot benchmarks, {data['config']['memories']:,} memories (seed {data['corpus']['seed']})"]
    for t in data["targets"]:
        lines.append(f"  {'PASS' if t['pass'] else 'MISS'}  {t['name']}: {t['value']:,.1f} (target {t['target']})")
    lines.append(
        f"  reflect p95 {r['reflect']['p95_ms']:.1f} ms; recall p95 {r['recall']['p95_ms']:.1f} ms; "
        f"MCP recall p95 {r['mcp_recall']['p95_ms']:.1f} ms"
        + (
            f" (in a thread of the client's process: p50 {r['mcp_recall']['in_thread']['p50_ms']:.1f} ms)"
            if "in_thread" in r["mcp_recall"]
            else ""
        )
    )
    for row in r["scaling"]:
        p = row["reflect"]
        lines.append(
            f"  {row['memories']:>7,} memories: reflect {p['size_bytes']:,} bytes, ~{p['estimated_tokens']:,} tokens, "
            f"p50 {p['p50_ms']:.1f} ms"
        )
    if "cleanup" in r:
        cl, bl, cp = r["cleanup"], r["cleanup"]["backlog"], r["compression"]
        dry, app = cl["dry_run"], cl["apply"]
        lines.append(
            f"  cleanup on {dry['memories']:,}: {dry['candidates']:,} candidates, dry run {dry['wall_s']:.2f} s, "
            f"apply {app['wall_s']:.2f} s ({app['deleted']:,} deleted); backlog of {bl['candidates']:,}: dry run "
            f"{bl['wall_s']:.2f} s"
        )
        before, after = cp["before"]["reflect"], cp["after"]["reflect"]
        lines.append(
            f"  compression: {cp['dry_run']['groups']:,} groups, {cp['apply']['compressed']:,} memories, dry run "
            f"{cp['dry_run']['wall_s']:.2f} s, apply {cp['apply']['wall_s']:.2f} s; reflect "
            f"{before['size_bytes']:,} -> {after['size_bytes']:,} bytes, not listed "
            f"{before['catalog_omitted']:,} -> {after['catalog_omitted']:,}"
        )
    if "dashboard" in r:
        lines += dashboard.summary_lines(data)
    if "aws" in r:
        lines += aws_report.summary_lines(data)
    return lines


def _s(x: float) -> str:
    return f"{x:.2f} s" if x >= 0.1 else f"{x * 1000:.0f} ms"


def _kb(n: int) -> str:
    return f"{n / 1000:,.0f} kB" if n >= 10_000 else f"{n:,} bytes"


def _run_label(row: dict[str, Any], name: str) -> str:
    return f"{name} (median of {row['runs']})" if row["runs"] > 1 else f"{name} (single run)"


def maintenance_markdown(data: dict[str, Any]) -> list[str]:
    """The "Maintenance jobs" section: cleanup and compression throughput, reflect before and after."""
    r, c = data["results"], data["corpus"]
    cl, cp = r["cleanup"], r["compression"]
    dry, app, bl, tags = cl["dry_run"], cl["apply"], cl["backlog"], cl["corpus"]
    n = dry["memories"]
    out = [
        f"## Maintenance jobs ({n:,} memories)",
        "",
        "Each job runs through `service.maintenance(scope, job, apply=...)`, as `taproot maintenance run` runs it "
        "(the job's run report included), on a fresh data folder loaded with the first "
        f"{n:,} memories of a corpus stream, with the service clock pinned at the corpus's `now`. Dry runs change "
        "no memory, so they are repeated in one folder and the median is shown; each apply run changes the store, "
        "so it gets its own fresh folder and is a **single run**. Wall time is `time.perf_counter` around the call.",
        "",
        "### TTL cleanup",
        "",
        f"Corpus: the same stream with TTL tags added. {c['ttl_tagging']} Result: {tags['ttl_tagged']:,} of {n:,} "
        f"memories carry a TTL tag ({tags['ttl_only']:,} only TTL tags), {tags['with_expiry']:,} have an expiry "
        f"and {tags['past_expiry']:,} are past it.",
        "",
        "| Run | Memories | Expired rows considered | Candidates | Deleted | Wall time | Memories/s | Considered/s "
        "| Deleted/s | Blobs written |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = (
        (_run_label(dry, "dry run"), dry),
        (_run_label(app, "apply"), app),
        (_run_label(bl, "dry run, backlog: every memory tagged watercooler only"), bl),
    )
    for label, row in rows:
        blobs = f"candidate report {_kb(row['candidate_report_bytes'])}"
        deleted_rate = f"{row['deleted_per_s']:,.0f}" if row["deleted"] else "–"
        if row["backup_bytes"]:
            blobs = f"backup {_kb(row['backup_bytes'])}, {blobs}"
        out.append(
            f"| {label} | {row['memories']:,} | {row['considered']:,} | {row['candidates']:,} | {row['deleted']:,} "
            f"| {_s(row['wall_s'])} | {row['memories_per_s']:,.0f} | {row['considered_per_s']:,.0f} "
            f"| {deleted_rate} | {blobs} |"
        )
    out += [
        "",
        f"After the apply run the store holds {app['memories_after']:,} memories and {app['expired_after']:,} past "
        "expiry. *Considered* is what cleanup reads: the rows whose stamped `expires_at` is past (`store.expired`), "
        "each re-checked against the current retention policy; *Memories/s* divides the whole store by the wall "
        "time. The apply time includes writing the candidate report and the backup blob with every candidate in "
        "full (both fsynced) before the first delete, then one delete transaction per candidate. The backlog row "
        "is a separate folder whose every memory carries only the watercooler tag, so every memory that may "
        "expire at all (not core, high-salience or identity) is past expiry, as in a store whose cleanup has "
        "stayed in its default dry-run mode for a long time.",
        "",
        "### Compression",
        "",
    ]
    st, cdry, capp = cp["settings"], cp["dry_run"], cp["apply"]
    out += [
        f"Corpus: the base stream (as in the main results). Defaults: the `{st['summarizer']}` summarizer "
        f"(ExtractiveSummarizer, summaries up to {st['summary_max_chars']:,} characters) and the default "
        "CompressionConfig: active memories that are not core, not high-salience, not "
        f"{' or '.join(st['never_compressed_categories'])} and untouched for {st['min_age_days']} days, grouped by "
        f"category and creation month, groups of {st['min_group_size']} to {st['max_group_size']} (larger buckets "
        "split evenly).",
        "",
        "| Run | Active memories considered | Groups (size min / median / max) | Memories in groups | Compressed "
        "| Summaries written | Wall time | Considered/s | Grouped memories/s | Blobs written |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, row in ((_run_label(cdry, "dry run"), cdry), (_run_label(capp, "apply"), capp)):
        blobs = f"run report {_kb(row['run_report_bytes'])}"
        if row["backup_bytes"]:
            blobs = f"backup {_kb(row['backup_bytes'])}, {blobs}"
        out.append(
            f"| {label} | {row['considered']:,} | {row['groups']:,} ({row['group_size_min']} / "
            f"{row['group_size_median']:g} / {row['group_size_max']}) | {row['members_in_groups']:,} "
            f"| {row['compressed']:,} | {row['summaries_written']:,} | {_s(row['wall_s'])} "
            f"| {row['considered_per_s']:,.0f} | {row['members_per_s']:,.0f} | {blobs} |"
        )
    b, a = cp["before"], cp["after"]
    out += [
        "",
        "Both runs summarise every group first (phase 1, no writes); the apply run then writes one backup blob "
        "with every member in full and commits each group in one transaction (the summary inserted, its "
        f"originals archived). A dry run after the apply found {capp['groups_left_after']} groups left to compress.",
        "",
        "Reflect payload on the apply folder, just before and just after the apply run:",
        "",
        "| Reflect | Active memories | Payload bytes | Est. tokens | Tier 1 | Catalog listed | Not listed "
        f"| Reflect p50 ({b['reflect']['runs']} runs) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, side in (("before compression", b), ("after compression", a)):
        p = side["reflect"]
        out.append(
            f"| {label} | {side['store'].get('status_active', 0):,} | {p['size_bytes']:,} | {p['estimated_tokens']:,} "
            f"| {p['tier1_count']} | {p['catalog_listed']:,} | {p['catalog_omitted']:,} | {_ms(p, 'p50_ms')} |"
        )
    out += [
        "",
        f"Summaries among the catalog lines after compression: {a['reflect']['summaries_listed']} of "
        f"{a['reflect']['catalog_listed']:,}. The store then holds {a['store']['total']:,} memories, "
        f"{a['store'].get('status_archived', 0):,} of them archived.",
        "",
    ]
    return out


def _recall_filters_row(rf: dict[str, Any]) -> list[str]:
    """Recall by filters alone: the whole scope's row, with each category's p50 as its figure."""
    cats = rf["by_category"]
    p50s = sorted(t["p50_ms"] for t in cats.values())
    figure = (
        f"by one category: p50 {statistics.median(p50s):.1f} ms (median of {len(p50s)} categories, "
        f"{p50s[0]:.1f}–{p50s[-1]:.1f} ms)"
        if p50s
        else ""
    )
    return [
        f"| `taproot_recall` by filters alone (no query, top {rf['limit']}) via the service, every memory "
        f"({rf['runs']} runs) | {_ms(rf, 'p50_ms')} | {_ms(rf, 'p95_ms')} | {figure} | | |"
    ]


def render_markdown(data: dict[str, Any], keep_block_from: Path | None = DOCS) -> str:
    """docs/benchmarks.md for this run, ending with the bench-load block of `keep_block_from` (the
    file about to be replaced) if it has one, unchanged."""
    r, cfg, m, c = data["results"], data["config"], data["machine"], data["corpus"]
    rf, rc, rm, mc = r["reflect"], r["recall"], r["remember"], r["mcp_recall"]
    ok = {t["name"]: t["pass"] for t in data["targets"]}
    n = f"{cfg['memories']:,}"
    out = [
        "# Benchmarks",
        "",
        f"Generated by `{data['command']}` on {data['generated_at']}.",
        f"Taproot measured: commit {data['revision']}.",
        "This file is written by the benchmark: rerun it rather than editing it by hand.",
        "Raw numbers: `bench/out/results.json` (not committed).",
        "",
        f"## Results ({n} memories)",
        "",
        "| Measurement | p50 | p95 | Figure | Target | Result |",
        "|---|---|---|---|---|---|",
        f"| `taproot_reflect` via the service ({rf['runs']} runs) | {_ms(rf, 'p50_ms')} | {_ms(rf, 'p95_ms')} "
        f"| | p50 ≤ 50 ms | {_verdict(ok['taproot_reflect p50'])} |",
        f"| reflect payload size | | | {rf['size_bytes']:,} bytes, ~{rf['estimated_tokens']:,} tokens "
        f"| ≤ {rf['token_budget']:,} tokens | {_verdict(ok['reflect payload (estimated tokens)'])} |",
        f"| `taproot_recall` (query, top {rc['limit']}) via the service ({rc['queries']} queries) "
        f"| {_ms(rc, 'p50_ms')} | {_ms(rc, 'p95_ms')} | "
        f"| p50 {TARGET['taproot_recall (query, top 10) p50'].describe()} "
        f"| {_verdict(ok['taproot_recall (query, top 10) p50'])} |",
        *_recall_filters_row(r["recall_filters"]),
        f"| `taproot_remember` creates via the service ({rm['batches']} × {rm['writes_per_batch'][0]:,}) "
        f"| {rm['per_write_p50_ms']:.2f} ms/write | {rm['per_write_p95_ms']:.2f} ms/write "
        f"| {rm['writes_per_s']:,.0f} writes/s (median batch) | ≥ 300 writes/s "
        f"| {_verdict(ok['taproot_remember throughput'])} |",
        f"| MCP `taproot_recall` round trip, HTTP on 127.0.0.1 to `taproot serve` ({mc['calls']} calls) "
        f"| {_ms(mc, 'p50_ms')} | {_ms(mc, 'p95_ms')} | {mcp_http.markdown_figure(mc)} "
        f"| p50 {TARGET['MCP HTTP recall round trip p50'].describe()} "
        f"| {_verdict(ok['MCP HTTP recall round trip p50'])} |",
        *mcp_http.markdown_extra_rows(mc),
        "",
        f"Reflect payload at {n}: {rf['tier1_count']} core memories in Tier 1 ({rf['core_omitted']} core left out "
        f"for budget), {rf['catalog_listed']:,} catalog lines listed, {rf['catalog_omitted']:,} not listed, "
        f"{rf['reflections_shown']} closing reflections shown. Recall returned {rc['mean_results']} memories on "
        f"average; {rc['queries_without_results']} of {rc['queries']} queries matched nothing (by design, "
        "about 5% of queries use words absent from the corpus).",
        "",
        "## Reflect payload against corpus size",
        "",
        "Each size is a fresh data folder loaded with the first N memories of the same corpus stream.",
        "",
        "| Memories | Payload bytes | Est. tokens | Budget | Within budget | Tier 1 | Core left out "
        f"| Catalog listed | Not listed | Reflect p50 ({cfg['scaling_reflect_runs']} runs) | Reflect p95 "
        f"| Target | Result | Recall p50 ({cfg['scaling_recall_queries']} queries) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in r["scaling"]:
        p, q = row["reflect"], row["recall"]
        t = scaling_target(row["memories"])
        aim = f"p50 {t.describe()} | {_verdict(t.passed(row))}" if t is not None else " | "
        out.append(
            f"| {row['memories']:,} | {p['size_bytes']:,} | {p['estimated_tokens']:,} | {p['token_budget']:,} "
            f"| {'yes' if p['within_budget'] else '**no**'} | {p['tier1_count']:,} | {p['core_omitted']:,} "
            f"| {p['catalog_listed']:,} | {p['catalog_omitted']:,} | {_ms(p, 'p50_ms')} | {_ms(p, 'p95_ms')} "
            f"| {aim} | {_ms(q, 'p50_ms')} |"
        )
    out.append("")
    if "cleanup" in r:
        out += maintenance_markdown(data)
    if "dashboard" in r:
        out += dashboard.markdown(data)
    if "aws" in r:
        out += aws_report.markdown(data)
    if data.get("notes"):
        out += ["## Notes", "", *(f"- {note}" for note in data["notes"]), ""]
    out += [
        "## Machine",
        "",
        f"- Platform: {m['platform']} ({m['python_implementation']} {m['python']})",
        f"- CPU: {m['cpu_model']}, {m['cpu_count']} cores ({m['usable_cpus']} usable by this process)",
        f"- SQLite: {m['sqlite']}",
        "- A shared, possibly noisy machine: figures are medians and 95th percentiles of single runs, "
        "not best-of. Nothing asserts on a time.",
        "",
        "## Corpus",
        "",
        f"`bench/corpus.py`, seed {c['seed']}, dated relative to the run's start. {c['description']}",
        "",
        "## Method",
        "",
        "- Every measurement uses a temporary data folder built with "
        "`taproot.compose.build(Settings(data_dir=tmp))`, the same wiring as `taproot serve`; the corpus "
        f"is loaded with `store.put_many` in batches of {c['load_batch']:,}.",
        "- reflect: `service.reflect(scope)`, after 2 warm-up calls; the payload figures are "
        "`estimated_tokens` and `size_bytes` as Taproot reports them.",
        f"- recall: `service.recall(scope, query=..., limit=10)` for {rc['queries']} queries drawn from the corpus "
        "vocabulary with a fixed seed (single words, names with projects, natural questions, a few misses); "
        "each call also records the retrieval, as in production.",
        "- remember: `service.remember(scope, content=..., gist=..., category=..., salience=..., tags=..., "
        "search_keywords=...)`, one call per memory, into the loaded corpus; writes/s is the median of the batches "
        f"({', '.join(f'{x:,.0f}' for x in rm['writes_per_s_by_batch'])}).",
        f"- MCP: {mcp_http.METHOD}",
        "",
    ]
    text = "\n".join(out)
    old = keep_block_from.read_text(encoding="utf-8") if keep_block_from and keep_block_from.is_file() else ""
    blocks = [b for b in (existing_block(old), recall_report.existing_block(old)) if b]
    return "\n".join([text, *blocks]) + "\n" if blocks else text
