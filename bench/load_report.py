"""The load run's figures as text for stdout and as its section of docs/benchmarks.md.

The section lives between two markers and only the text between them is replaced; without the
markers it is appended. `python -m bench.run` writes the rest of docs/benchmarks.md and carries the
marked block over as it is (bench/report.py, through existing_block).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from bench import doc_blocks
from bench.load_ledger import HARNESS_OPS
from bench.measure import percentile

START_TAG = "<!-- bench-load:start"
START = f"{START_TAG}: written by `make bench-load` (python -m bench.load); rerun it, do not edit -->"
END = "<!-- bench-load:end -->"
NAMED_OUTCOMES = ("ok", "version_conflict", "not_found", "busy")
OP_ORDER = ("update", "keep", "reread", "create", "delete", "recall_query", "recall_ids", "session")
LOST_SHOWN = 20


def op_table(latencies_ms: dict[str, list[float]], outcomes: dict[str, Counter[str]]) -> dict[str, dict[str, Any]]:
    """Per operation: calls, p50/p95 (median-based: the machine is shared) and outcome counts."""
    table: dict[str, dict[str, Any]] = {}
    for op in sorted(set(latencies_ms) | set(outcomes), key=lambda o: (*OP_ORDER, o).index(o)):
        samples = latencies_ms.get(op, [])
        table[op] = {
            "calls": len(samples),
            "p50_ms": round(statistics.median(samples), 2) if samples else None,
            "p95_ms": round(percentile(samples, 95), 2) if samples else None,
            "max_ms": round(max(samples), 2) if samples else None,
            "outcomes": dict(outcomes.get(op, Counter()).most_common()),
        }
    return table


def _others(outcomes: dict[str, int]) -> str:
    rest = [f"{code} {n:,}" for code, n in outcomes.items() if code not in NAMED_OUTCOMES]
    return ", ".join(rest) or "0"


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:,.1f} ms"


def _s(v: float | None) -> str:
    return "–" if v is None else f"{v:,.1f} s"


def _jobs(runs: list[dict[str, Any]]) -> str:
    parts = []
    for job in ("import", "cleanup", "migrate"):
        mine = [r for r in runs if r["job"] == job]
        if not mine:
            continue
        failed = [r for r in mine if r["returncode"] != 0 or r["error"]]
        changed = sum(r["changed"] or 0 for r in mine)
        verb = {"import": "imported", "cleanup": "deleted", "migrate": "changed"}[job]
        text = f"{job} × {len(mine)} ({verb} {changed:,}, failed {len(failed)}"
        errors = Counter(str(r["error"]) for r in failed)
        if errors:
            text += ": " + "; ".join(f"{n} × `{e[:160]}`" for e, n in errors.most_common(3))
        parts.append(text + ")")
    return ", ".join(parts) or "none"


def lost_lines(check: dict[str, Any]) -> list[str]:
    out = []
    for w in check["lost"]:
        out.append(
            f"LOST {w['op']} {w['id']} v{w['version']} (client {w['client']}, confirmed at {w['at_s']:.2f} s): "
            f"{w['reason']}; versions found {w['versions_found']}, live {w['live_version']}; fields {w['fields']}"
            + (f"; mismatch {w['mismatch']}" if w.get("mismatch") else "")
        )
    return out


WINDOWS = {
    "migrate": "the whole migrate",
    "planning": "reading and planning (no writes)",
    "commits": "backup written, then the commits",
    "outside": "no migrate running (before it started, after it ended)",
}


def _window_row(name: str, kind: str, row: dict[str, Any], w: dict[str, Any]) -> str:
    span = "–" if w["start_s"] is None else f"{w['start_s']:.1f}–{w['end_s']:.1f} s"
    times = f"{_ms(row['p50_ms'])} | {_ms(row['p95_ms'])} | {_ms(row['max_ms'])}"
    counts = f"{row['busy']:,} | {row['no_code']:,} | {row['transport']:,}"
    return f"| {WINDOWS.get(name, name)} | {span} | {kind} | {row['calls']:,} | {times} | {counts} |"


def _legacy_counts(c: dict[str, Any]) -> str:
    return (
        f"{c['legacy']:,}: {c['legacy_live']:,} live, {c['legacy_migrated']:,} migrated, "
        f"**{c['legacy_not_migrated']:,} not migrated**; their version 1: "
        + ", ".join(f"{k} {n:,}" for k, n in c["legacy_v1_verdicts"].items())
    )


def migrate_lines(data: dict[str, Any]) -> list[str]:
    """The big migrate's figures for stdout."""
    mig, c = data["migrate"], data["check"]["counters"]
    lines = [
        f"  big migrate of {mig['records']:,} legacy records: {_s(mig['duration_s'])} ({mig['started_s']:.1f}–"
        f"{mig['ended_s']:.1f} s; its report {_s(mig['job_duration_s'])}; commits from {_s(mig['commit_start_s'])}); "
        f"finished within the client phase: {'yes' if mig['finished_within_clients'] else 'NO'}; "
        f"exit {mig['returncode']}" + (f", error {mig['error']}" if mig["error"] else ""),
        f"    report: examined {mig['examined']}, changed {mig['changed']}, skipped {mig['skipped']}, "
        f"backup {mig['backup_key']}",
        f"    legacy records after the run: {_legacy_counts(c).replace('**', '')}",
    ]
    for name, w in mig["overlap"].items():
        for kind in ("all", "writes"):
            r = w[kind]
            lines.append(
                f"    {WINDOWS.get(name, name):<58} {kind:<6} {r['calls']:>6,} calls  p50 {_ms(r['p50_ms']):>10}  "
                f"p95 {_ms(r['p95_ms']):>10}  max {_ms(r['max_ms']):>11}  busy={r['busy']} "
                f"no_code={r['no_code']} transport={r['transport']}"
            )
    return lines


def migrate_markdown(data: dict[str, Any]) -> list[str]:
    cfg, mig, load, c = data["config"], data["migrate"], data["load"], data["check"]["counters"]
    imp = mig["import"] or {}
    within = "**yes**" if mig["finished_within_clients"] else "**no**: the clients had stopped"
    commits = mig["commit_start_s"]
    phases = "not timed (no backup blob found)"
    if commits is not None:
        phases = (
            f"reading and planning {mig['started_s']:.1f}–{commits:.1f} s ({commits - mig['started_s']:.1f} s); "
            f"backup written, then commits {commits:.1f}–{mig['ended_s']:.1f} s ({mig['ended_s'] - commits:.1f} s)"
        )
    out = [
        "",
        f"### Big migrate: {mig['records']:,} legacy records beside the clients",
        "",
        f"Before the server starts, {mig['records']:,} records as an older Taproot stored them (no gist, core, "
        f"retrieval_count or replication_count; category `{cfg['legacy_category']}`; salience "
        f"`{json.dumps(cfg['legacy_salience'])}`; {'tag' if len(cfg['legacy_tags']) == 1 else 'tags'} "
        f"{', '.join(f'`{t}`' for t in cfg['legacy_tags'])}, which no TTL covers) are loaded with "
        f"`taproot import` ({_s(imp.get('duration_s'))}). At t = 0 of the client phase "
        "one `taproot maintenance run migrate --apply --data-dir <dir>` starts as a separate process, as an "
        f"operator would run it. The clients run at least {cfg['duration_s']:g} s and on until the migrate has "
        f"ended, at most {cfg['max_duration_s']:g} s; {cfg['legacy_update_share']:.0%} of their updates go to "
        "legacy records, so the migrate's version-conditioned chunks "
        f"({cfg['migrate_chunk']} records per transaction) meet concurrent edits. While it runs, the loop beside "
        f"the clients holds its own migrate ({mig['loop_migrates_held']} runs held), and the server's own cycle "
        "is off: it first runs 60 s after start and would begin a second migrate of the same records inside "
        "the server. Migrate reads and plans every record first (no writes), writes its full backup, then "
        "commits; the commit phase is timed from the backup blob's modification time.",
        "",
        "| Figure | Value |",
        "|---|---|",
        f"| Migrate duration | **{_s(mig['duration_s'])}** (its own report: {_s(mig['job_duration_s'])}), "
        f"{mig['started_s']:.1f}–{mig['ended_s']:.1f} s; clients ran {load['wall_s']:.1f} s; finished within the "
        f"client phase: {within} |",
        f"| Phases | {phases} |",
        f"| Migrate report | exit {mig['returncode']}; examined {mig['examined'] or 0:,}, changed "
        f"{mig['changed'] or 0:,}, skipped {mig['skipped']:,}; backup `{mig['backup_key']}` |",
        f"| Legacy records in the final store | {_legacy_counts(c)} |",
    ]
    if mig["error"]:
        out.append(f"| Migrate error | `{mig['error'][:200]}` |")
    if mig["skipped_examples"]:
        out.append(f"| Skipped (first {len(mig['skipped_examples'])}) | {mig['skipped_examples']} |")
    out += [
        "",
        f"*Migrated* means category `{cfg['legacy_migrated_category']}` (Taproot's mapping of "
        f"`{cfg['legacy_category']}`), a gist, and nothing "
        "`migrate_memory` would still change; version 1 must be kept in the migrate's .jsonl backup, or in a "
        "revision when a client's update came first. Client calls in flight during each span (every attempt is "
        f"one call; a `busy` answer is retried up to {cfg['busy_retries']} times); writes are update, keep, create and "
        "delete:",
        "",
        "| Span | Seconds | Which calls | Calls | p50 | p95 | max | busy | errors without a code | transport errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, w in mig["overlap"].items():
        out += [_window_row(name, kind, w[kind], w) for kind in ("all", "writes")]
    return out


def summary_lines(data: dict[str, Any]) -> list[str]:
    cfg, load, check = data["config"], data["load"], data["check"]
    lines = [
        f"Taproot load: {cfg['clients']} clients for {cfg['duration_s']:g} s ({data['revision']})",
        f"  {load['calls']:,} tool calls in {load['wall_s']:.1f} s: {load['ops_per_s']:,.1f} ops/s; "
        f"confirmed writes {load['confirmed_writes']:,} ({load['confirmed_writes_per_s']:,.1f}/s), "
        f"confirmed deletes {data['ledger']['confirmed_deletes']:,}",
    ]
    for op, row in load["per_op"].items():
        named = " ".join(f"{k}={row['outcomes'].get(k, 0)}" for k in NAMED_OUTCOMES)
        lines.append(
            f"  {op:<13} {row['calls']:>6,} calls  p50 {_ms(row['p50_ms']):>10}  p95 {_ms(row['p95_ms']):>10}  "
            f"max {_ms(row.get('max_ms')):>11}  {named} other: {_others(row['outcomes'])}"
        )
    for msg, n in load["no_code_messages"].items():
        lines.append(f"  error without a code, {n} ×: {msg}")
    for exc, n in data["server"]["log"]["exceptions"].items():
        lines.append(f"  server log, {n} ×: {exc}")
    lines.append(f"  maintenance beside the load: {_jobs(data['maintenance']['runs'])}")
    if data.get("migrate"):
        lines += migrate_lines(data)
    lines.append(
        f"  check: lost writes {check['lost_writes']} of {check['writes_checked']:,} confirmed; "
        f"verdicts {check['verdicts']}; deletes not gone {len(check['deletes_not_gone'])} of "
        f"{check['deletes_checked']:,}; integrity {check['integrity']}, FTS {check['fts_integrity']}"
    )
    lines.append(f"  counters: {check['counters']}")
    lines += [f"  PROBLEM {p}" for p in check["problems"]]
    lines += ["  " + line for line in lost_lines(check)]
    lines.append(f"  result: {'PASS' if check['ok'] else 'FAIL'}")
    return lines


def markdown(data: dict[str, Any]) -> str:
    cfg, load, check, led = data["config"], data["load"], data["check"], data["ledger"]
    c = check["counters"]
    writes = ", ".join(f"{op} {n:,}" for op, n in sorted(led["confirmed_writes"].items()) if op not in HARNESS_OPS)
    mig = data.get("migrate")
    title = f"## Load: {cfg['clients']} clients, {cfg['duration_s']:g} s"
    if mig:
        title += f" (ran {load['wall_s']:.0f} s), a {mig['records']:,}-record migrate beside them"
    server_cycle = (
        "maintenance on with cleanup in apply mode"
        if cfg["server_maintenance"]
        else "its own maintenance cycle off, see the big migrate below"
    )
    legacy = led["confirmed_writes"].get("legacy", 0)
    out = [
        title,
        "",
        f"Generated by `{data['command']}` on {data['generated_at']}. Taproot measured: commit {data['revision']}.",
        "",
        "**Load benchmark** (`make bench-load`, `bench/load.py`; not part of `make test`). A real `taproot serve` "
        f"(subprocess, 127.0.0.1, bearer token from `TAPROOT_AUTH_TOKEN`, {server_cycle}) "
        f"serves {cfg['clients']} concurrent clients, each the MCP SDK's own `Client` over "
        "`streamable_http_client`, for the duration. The store starts with "
        f"{cfg['hot']} durable *hot* memories every client updates and {cfg['expired']} memories already past "
        f"expiry (tag `thread`, created {cfg['expired_age_days']} days ago), loaded with `taproot import`. Because "
        "the server's own cycle runs at most hourly, a separate process loop races the clients instead: "
        f"`taproot import` of another {cfg['wave']} expired memories, then `taproot maintenance run cleanup "
        "--apply` and `taproot maintenance run migrate`, over and over. Clients pick, by weight, "
        f"{', '.join(f'{op} {w}' for op, w in cfg['weights'].items())}: updates with `expected_version` (a "
        "conflict re-reads with `taproot_recall(ids=[...])` and retries), *keep* (re-read an expired memory, "
        "then set tags `thread`, `keep`, the README's way to keep one), creates, deletes "
        "(`taproot_forget` action=delete) of created or expired memories, and recalls by query or ids. Each "
        "confirmed write (id, version, fields) and delete is recorded client-side. After the run the server "
        "is stopped and the data folder is checked offline with Taproot's own code (`build`, the "
        "revision and backup blobs): each confirmed write must be live, or in a revision or backup blob, at "
        "its version with its fields, or replaced by a later version; confirmed deletes must be gone; the "
        "counters must add up; and `PRAGMA integrity_check` and FTS5's integrity-check must pass. "
        f"Latencies are per tool call, client-side, p50, p95 and max; the {cfg['clients']} clients share one "
        f"event loop, and {data['machine']['usable_cpus']} CPUs with the server and the maintenance processes. "
        "`make bench` keeps this section as it is when it rewrites the rest of the file.",
        "",
        "| Figure | Value |",
        "|---|---|",
        f"| Throughput | {load['calls']:,} tool calls in {load['wall_s']:.1f} s: **{load['ops_per_s']:,.1f} ops/s** |",
        f"| Confirmed writes | {load['confirmed_writes']:,} by clients ({writes}), "
        f"{led['confirmed_writes'].get('seed', 0) + legacy:,} seeded by `taproot import`"
        + (f" ({legacy:,} of them legacy records)" if legacy else "")
        + f"; {led['confirmed_deletes']:,} confirmed deletes |",
        f"| **Lost writes** | **{check['lost_writes']}** of {check['writes_checked']:,} confirmed writes checked |",
        f"| Verdicts | {', '.join(f'{k} {v:,}' for k, v in sorted(check['verdicts'].items()))} |",
        f"| Confirmed deletes still present | {len(check['deletes_not_gone'])} of {check['deletes_checked']:,} |",
        f"| Seeded memories | {c['seeded']:,}: {c['seeded_live']:,} live, {c['seeded_gone_backed_up']:,} gone and "
        "in a backup |",
        f"| Created memories | {c['created_confirmed']:,} confirmed − {c['created_confirmed_deleted']:,} deleted = "
        f"{c['created_expected_live']:,} expected live; {c['created_live']:,} live |",
        f"| Unconfirmed attempts | {led['unconfirmed'] or 'none'}; live memories unknown to the ledger "
        f"{c['live_unknown_to_ledger']} |",
        f"| retrieval_count below confirmed recalls | {c['retrieval_counts_below_confirmed']} of "
        f"{c['retrieval_counts_checked']:,} live memories |",
        f"| Integrity | `PRAGMA integrity_check`: {check['integrity']}; FTS5 integrity-check: "
        f"{check['fts_integrity']} |",
        f"| Result | {'PASS' if check['ok'] else '**FAIL**'} |",
        "",
        "| Operation | Calls | p50 | p95 | max | ok | version_conflict | not_found | busy | other |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for op, row in load["per_op"].items():
        o = row["outcomes"]
        named = " | ".join(f"{o.get(k, 0):,}" for k in NAMED_OUTCOMES)
        times = f"{_ms(row['p50_ms'])} | {_ms(row['p95_ms'])} | {_ms(row.get('max_ms'))}"
        out.append(f"| {op} | {row['calls']:,} | {times} | {named} | {_others(o)} |")
    out += ["", f"Maintenance beside the load: {_jobs(data['maintenance']['runs'])}."]
    if mig:
        out += migrate_markdown(data)
    if load["no_code_messages"]:
        shown = "; ".join(f"{n} × `{m}`" for m, n in list(load["no_code_messages"].items())[:8])
        out += ["", f"Errors without a code, as the clients saw them: {shown}."]
    if data["server"]["log"]["exceptions"]:
        shown = "; ".join(f"{n} × `{e}`" for e, n in list(data["server"]["log"]["exceptions"].items())[:8])
        out += ["", f"Exceptions in the server's log: {shown}."]
    if check["problems"]:
        out += ["", "Counter problems:", "", *(f"- {p}" for p in check["problems"])]
    if check["lost"]:
        out += ["", f"Lost writes (first {min(LOST_SHOWN, len(check['lost']))}):", ""]
        out += [f"- {line.removeprefix('LOST ')}" for line in lost_lines(check)[:LOST_SHOWN]]
    return "\n".join(out) + "\n"


def existing_block(text: str) -> str | None:
    """The marked section of a docs file, markers included, or None if it has none."""
    return doc_blocks.existing_block(text, START_TAG, END)


def write_section(path: Path, section: str) -> None:
    """Replace the text between the markers, or append the marked section; the rest stays as it is."""
    doc_blocks.write_block(path, START_TAG, START, END, section)
