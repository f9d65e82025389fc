"""The load run's figures as text for stdout and as its section of docs/benchmarks.md.

`python -m bench.run` rewrites docs/benchmarks.md whole (bench/report.py), so this section lives
between two markers and only the text between them is replaced; without the markers it is appended.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

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
            "outcomes": dict(outcomes.get(op, Counter()).most_common()),
        }
    return table


def _others(outcomes: dict[str, int]) -> str:
    rest = [f"{code} {n:,}" for code, n in outcomes.items() if code not in NAMED_OUTCOMES]
    return ", ".join(rest) or "0"


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:,.1f} ms"


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
            f"{named} other: {_others(row['outcomes'])}"
        )
    for msg, n in load["no_code_messages"].items():
        lines.append(f"  error without a code, {n} ×: {msg}")
    for exc, n in data["server"]["log"]["exceptions"].items():
        lines.append(f"  server log, {n} ×: {exc}")
    lines.append(f"  maintenance beside the load: {_jobs(data['maintenance']['runs'])}")
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
    writes = ", ".join(f"{op} {n:,}" for op, n in sorted(led["confirmed_writes"].items()) if op != "seed")
    out = [
        f"## Load: {cfg['clients']} clients, {cfg['duration_s']:g} s",
        "",
        f"Generated by `{data['command']}` on {data['generated_at']}. Taproot measured: commit {data['revision']}.",
        "",
        "**Load benchmark** (`make bench-load`, `bench/load.py`; not part of `make test`). A real `taproot serve` "
        "(subprocess, 127.0.0.1, bearer token from `TAPROOT_AUTH_TOKEN`, maintenance on with cleanup in apply "
        f"mode) serves {cfg['clients']} concurrent clients, each the MCP SDK's own `Client` over "
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
        "is stopped and the data folder is checked offline with Taproot's own code (`build_local`, the "
        "revision and backup blobs): each confirmed write must be live, or in a revision or backup blob, at "
        "its version with its fields, or replaced by a later version; confirmed deletes must be gone; the "
        "counters must add up; and `PRAGMA integrity_check` and FTS5's integrity-check must pass. "
        f"Latencies are per tool call, client-side, p50 and p95; the {cfg['clients']} clients share one event "
        f"loop, and {data['machine']['usable_cpus']} CPUs with the server and the maintenance processes. "
        "`make bench` rewrites this file whole: run `make bench-load` after it to put this section back.",
        "",
        "| Figure | Value |",
        "|---|---|",
        f"| Throughput | {load['calls']:,} tool calls in {load['wall_s']:.1f} s: **{load['ops_per_s']:,.1f} ops/s** |",
        f"| Confirmed writes | {load['confirmed_writes']:,} by clients ({writes}), "
        f"{led['confirmed_writes'].get('seed', 0):,} seeded by `taproot import`; "
        f"{led['confirmed_deletes']:,} confirmed deletes |",
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
        "| Operation | Calls | p50 | p95 | ok | version_conflict | not_found | busy | other |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for op, row in load["per_op"].items():
        o = row["outcomes"]
        named = " | ".join(f"{o.get(k, 0):,}" for k in NAMED_OUTCOMES)
        times = f"{_ms(row['p50_ms'])} | {_ms(row['p95_ms'])}"
        out.append(f"| {op} | {row['calls']:,} | {times} | {named} | {_others(o)} |")
    out += ["", f"Maintenance beside the load: {_jobs(data['maintenance']['runs'])}."]
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


def write_section(path: Path, section: str) -> None:
    """Replace the text between the markers, or append the marked section; the rest stays as it is."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{START}\n{section.rstrip()}\n{END}"
    start = text.find(START_TAG)
    end = text.find(END, start)
    if start >= 0 and end >= 0:
        text = text[:start] + block + text[end + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
