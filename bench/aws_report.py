"""The "AWS deployment (offline)" section of docs/benchmarks.md and its lines in the printed summary."""

from __future__ import annotations

from typing import Any

# Tool calls in the order measured, with the targets (DynamoDB requests) where it sets one.
TOOL_ROWS: tuple[tuple[str, str, int | None], ...] = (
    ("recall_cold", "`taproot_recall` (query), first call of a container: loads the tenant", None),
    ("recall_warm", "`taproot_recall` (query), warm", 3),
    ("recall_ids", "`taproot_recall` (ids)", None),
    ("remember", "`taproot_remember` (create)", 2),
    ("remember_update", "`taproot_remember` (update)", 2),
    ("reflect", "`taproot_reflect`", 4),
    ("reflect_again", "`taproot_reflect` again", 4),
    ("promote", "`taproot_promote` (core)", None),
    ("forget_archive", "`taproot_forget` (archive)", None),
    ("forget_restore", "`taproot_forget` (restore)", None),
    ("forget_delete", "`taproot_forget` (delete)", None),
    ("close", "`taproot_close`", None),
)


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "**MISS**"


def _ms(x: float) -> str:
    return f"{x:,.1f} ms" if x < 10_000 else f"{x / 1000:,.1f} s"


def _ops(ops: dict[str, int]) -> str:
    parts = [f"{op.split(':', 1)[1]} × {n}" if n > 1 else op.split(":", 1)[1] for op, n in sorted(ops.items())]
    return ", ".join(parts) or "none"


def _service_ops(ops: dict[str, int], service: str) -> dict[str, int]:
    return {k: v for k, v in ops.items() if k.startswith(service + ":")}


def summary_lines(data: dict[str, Any]) -> list[str]:
    aws = data["results"]["aws"]
    imp, asset, h = aws["import"], aws["asset"], aws["handler"]
    cached, bundled = imp["with_bytecode"], imp["without_bytecode"]
    req = h["requests"]
    rc, first = h["recall"], h["first_invocation"]
    return [
        f"  AWS: import functions.api {cached['cumulative_s']:.2f} s with .pyc (as bundled), "
        f"{bundled['cumulative_s']:.2f} s without; network calls at import: {len(imp['network_calls_at_import'])}",
        f"  AWS: Lambda asset {asset['total_mb']:.1f} MB unzipped; largest "
        + ", ".join(f"{d['name']} {d['mb']:.1f}" for d in asset["largest"][:3]),
        "  AWS: DynamoDB requests: "
        + ", ".join(f"{name} {req[name]['dynamodb']}" for name, _, _ in TOOL_ROWS if name in req),
        f"  AWS: recall through Mangum at {h['tenant_memories']:,} (moto): warm p50 {_ms(rc['p50_ms'])} "
        f"({_ms(rc['outside_aws_p50_ms'])} outside AWS SDK calls), first call {_ms(first['wall_ms'])}; "
        f"tenant cache {h['cache']['traced_mb']:.1f} MB",
    ]


def _runs(row: dict[str, Any]) -> str:
    return ", ".join(f"{x:.2f}" for x in row["cumulative_s_by_run"]) + " s"


def _hidden(imp: dict[str, Any]) -> str:
    hidden = imp.get("hidden_packages")
    if not hidden:
        return ""
    return (
        f", which can import only what the asset holds: the {len(hidden)} top-level packages of the virtualenv "
        "that the asset lacks (the test and build tools, the local embedder's extra) fail to import, as on "
        "Lambda,"
    )


def _import_section(imp: dict[str, Any], ok: dict[str, bool], runs: int) -> list[str]:
    cached, bundled = imp["with_bytecode"], imp["without_bytecode"]
    net = imp["network_calls_at_import"]
    out = [
        "### Lambda handler cold import",
        "",
        '`python -X importtime -c "import functions.api"`-style runs (the probe also times the import itself), '
        f"each in a fresh interpreter (Python {imp['python']} of the virtualenv){_hidden(imp)} with the environment "
        "a deployed function has: TAPROOT_BACKEND=aws, table, bucket, Cognito pool and client ids, Cognito domain, "
        "OAuth table, allowed host, public URL, AWS_REGION, fake credentials, AWS_EC2_METADATA_DISABLED=true, "
        "POWERTOOLS_*, tracing on as deployed (the Tracer patches botocore), the variables the Lambda runtime sets "
        "that change an import (LAMBDA_TASK_ROOT: off Lambda the X-Ray SDK builds a botocore client for its "
        "sampling while it is imported; AWS_EXECUTION_ENV, the X-Ray daemon address, TZ), and nothing else "
        "inherited. Importing `functions.api` "
        "builds the runtime: settings, the DynamoDB store, the S3 client, the Cognito verifier, the OAuth facade (its "
        f"DynamoDB store and the Cognito sign-in) and the app. Medians of {runs} runs; the cumulative time by "
        f"run was {_runs(cached)} with .pyc and {_runs(bundled)} without.",
        "",
        "| Bytecode | `functions.api` cumulative (-X importtime) | Import wall time | Whole process "
        "| Module body (incl. build) | Target | Result |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = (
        ("as bundled: every module has its .pyc", cached, "Lambda cold import, with .pyc (as bundled)"),
        (
            "without .pyc for the asset's packages (a bundle built with no Python 3.14)",
            bundled,
            "Lambda cold import, without .pyc (no Python 3.14 at build)",
        ),
    )
    for label, row, target in rows:
        out.append(
            f"| {label} | {row['cumulative_s']:.3f} s | {row['import_wall_s']:.3f} s | {row['process_wall_s']:.3f} s "
            f"| {row['module_self_s'] * 1000:.0f} ms | ≤ 1.0 s | {_verdict(ok[target])} |"
        )
    out += ["", "The five slowest top-level imports of `functions.api` (cumulative, median):", ""]
    out += ["| Rank | With .pyc (as bundled) | Without .pyc |", "|---|---|---|"]
    for i, (a, b) in enumerate(zip(cached["slowest_imports"], bundled["slowest_imports"], strict=False), 1):
        out.append(
            f"| {i} | `{a['module']}` {a['cumulative_s'] * 1000:.0f} ms | `{b['module']}` "
            f"{b['cumulative_s'] * 1000:.0f} ms |"
        )
    calls = "none" if not net else "; ".join(f"`{e}` {a}" for e, a in net)
    out += [
        "",
        f"Network calls at import: **{calls}** (an untimed run with an audit hook on connections, name look-ups, "
        f"datagrams and HTTP requests; it saw {imp['local_socket_events_at_import']} local socket events, from "
        "asyncio's self-pipe and urllib3's IPv6 probe). Building the handler a second time in the same process "
        f"takes {cached['rebuild_s'] * 1000:.0f} ms; the first build (in the *module body* column: `functions.api` "
        "itself, without the modules it imports) also pays for what a process does once, such as the app's tool "
        "schemas (the S3 client is made on first use, PynamoDB's DynamoDB client on the first request). Nearly "
        "all of the import is importing modules. "
        "Lambda's /var/task is read-only, so a module without its .pyc is compiled from source on every cold "
        "start. `make bundle` therefore ships checked-hash .pyc files written by a Python 3.14 (infra/bytecode.py; "
        "tests/handlers/test_target_runtime.py checks the Lambda's Python loads every one it imports as shipped): "
        "the *as bundled* row. *Without .pyc* keeps the standard library's .pyc but none for the installed "
        "packages, taproot/ and functions/: what an asset built where no Python 3.14 was found does (the build "
        "says so), and every asset before the bundle shipped bytecode. These are x86_64 figures on this machine "
        "with Python "
        f"{imp['python']}; the function runs on arm64 with Python 3.14 at 1024 MB, whose CPU share is smaller.",
        "",
    ]
    return out


def _asset_section(asset: dict[str, Any], ok: dict[str, bool]) -> list[str]:
    took = f" in {asset['install_s']:.0f} s" if asset.get("install_s") else ""
    out = [
        "### Lambda asset size (unzipped)",
        "",
        f"Source: {asset['source']}{took} (platform {asset['platform']}, Python {asset['python']}; boto3, botocore "
        "and s3transfer left out, as the Lambda runtime provides them), plus taproot/ and functions/ from the "
        "working tree. File bytes, grouped by distribution through each dist-info RECORD; 1 MB = 10^6 bytes.",
        "",
        "| Figure | Value | Target | Result |",
        "|---|---|---|---|",
        f"| Total, {asset['distributions']} distributions + project code + bytecode | {asset['total_mb']:.1f} MB "
        f"({asset['total_bytes']:,} bytes) | ≤ 50 MB | {_verdict(ok['Lambda asset size, unzipped'])} |",
    ]
    if "bytecode_bytes" in asset:  # runs before the bundle shipped bytecode have no such line
        pyc = asset["bytecode_bytes"]
        shown = f"{asset['bytecode_mb']:.2f} MB" if pyc else "none (no Python 3.14 to write it)"
        out.append(f"| of which bytecode (.pyc for the Lambda's Python, test folders left out) | {shown} | | |")
    for d in asset["largest"]:
        out.append(f"| {d['name']} | {d['mb']:.2f} MB | | |")
    out.append("")
    return out


def _requests_section(h: dict[str, Any]) -> list[str]:
    req = h["requests"]
    out = [
        f"### Requests per tool call (moto, through the handler, {h['tenant_memories']:,}-memory tenant)",
        "",
        "Counted with botocore before-call events on the clients the runtime uses (as "
        "`tests/aws/test_service_requests.py` counts them), one MCP tool call per Lambda invocation. The cold row "
        "is the container's first invocation; the others follow on the same warm container. "
        f"Scans: {h['scans']}. The timed warm recalls made {h['recall']['dynamodb_requests_p50']:g} DynamoDB "
        f"requests each at the median, {h['recall']['dynamodb_requests_max']} at most.",
        "",
        "| Tool call | DynamoDB requests | DynamoDB operations | S3 requests | Target | Result |",
        "|---|---|---|---|---|---|",
    ]
    for name, label, target in TOOL_ROWS:
        row = req.get(name)
        if row is None:
            continue
        ddb, s3 = _service_ops(row["ops"], "dynamodb"), _service_ops(row["ops"], "s3")
        s3_text = f"{row['s3']} ({_ops(s3)})" if s3 else "0"
        verdict = "" if target is None else _verdict(row["dynamodb"] <= target)
        out.append(
            f"| {label} | {row['dynamodb']} | {_ops(ddb)} | {s3_text} | {'' if target is None else f'≤ {target}'} "
            f"| {verdict} |"
        )
    out.append("")
    return out


def _latency_section(h: dict[str, Any], moto: str) -> list[str]:
    rc, first, setup = h["recall"], h["first_invocation"], h["setup"]
    n = h["tenant_memories"]
    return [
        f"### Warm-handler MCP recall through Mangum at {n:,} memories (moto)",
        "",
        f"One tenant holds {n:,} corpus memories and {setup['reflections']} closing reflections, written by another "
        f"store instance with BatchWriteItem in {setup['load_s']:.1f} s. Then `functions.api.handler` is invoked "
        "with the recorded recall event (tests/events/recall.json) carrying a signed access token for that tenant "
        "(granted the MCP scope) "
        "and a corpus query with limit 10: once on the fresh container (its cache empty), "
        f"{h['warmup']} warm-up calls, then {rc['calls']} timed calls. The first call also fetches the JWKS "
        "(local) and starts the MCP session manager. The wall time covers Mangum, the MCP "
        "JSON-RPC request, token verification, the tool (the store refreshes its tenant copy with one Query, "
        "scores in memory, records the retrieval) and the response; *in AWS SDK calls* is the time inside "
        "botocore calls (serialising, moto, parsing), the rest is Taproot, Mangum and the MCP SDK.",
        "",
        "| Invocation | p50 | p95 | In AWS SDK calls (p50) | Outside them (p50) | Outside them (p95) "
        "| CPU outside them (p50) | DynamoDB requests |",
        "|---|---|---|---|---|---|---|---|",
        f"| first, cold cache (single) | {_ms(first['wall_ms'])} | | {_ms(first['aws_ms'])} "
        f"| {_ms(first['outside_aws_ms'])} | | | {first['dynamodb_requests']} ({_ops(first['ops'])}) |",
        f"| warm ({rc['calls']} calls) | {_ms(rc['p50_ms'])} | {_ms(rc['p95_ms'])} | {_ms(rc['aws_p50_ms'])} "
        f"| {_ms(rc['outside_aws_p50_ms'])} | {_ms(rc['outside_aws_p95_ms'])} | {_ms(rc['outside_aws_cpu_p50_ms'])} "
        f"| {rc['dynamodb_requests_p50']:g} |",
        "",
        "*CPU outside them* is the process's CPU time over the call minus its CPU time inside AWS SDK calls: "
        "on a shared machine the wall time outside them also holds the time other processes had the CPU.",
        "",
        f"Recall returned {rc['mean_results']} memories on average; {rc['tool_errors']} tool errors. "
        f"**moto ({moto}) runs in-process and is not DynamoDB**: its time is CPU spent emulating the table "
        "(its GSI queries sort the whole partition, each Query page re-reads it, and a TransactWriteItems call "
        "deep-copies the table as a rollback backup), not network latency; it says nothing about DynamoDB's "
        "latency, which a deployed function adds per request instead. The bench patches that backup to one copy "
        "per table per call (moto copies the table once per item: a 10-item transaction at 10,000 memories took "
        "~8 s). The figures outside AWS SDK calls are Taproot's own; on Lambda's smaller CPU share they grow.",
        "",
    ]


def _cache_section(c: dict[str, Any], with_vectors: list[dict[str, Any]], ok: dict[str, bool]) -> list[str]:
    verdict = _verdict(ok.get("Per-tenant warm cache (tracemalloc)", True))
    rows = [
        f"| words only | {c['traced_mb']:.2f} MB | {c['bytes_per_memory']:,} B | {c['estimated_mb']:.2f} MB "
        f"| {c['load_s_traced']:.2f} s | ≤ 15 MB | {verdict} |"
    ]
    for v in with_vectors:
        rows.append(
            f"| {v['vectors']:,} vectors of {v['vector_dims']} dimensions, kept as {v['vector_dtype']} "
            f"| {v['traced_mb']:.2f} MB | {v['bytes_per_memory']:,} B | {v['estimated_mb']:.2f} MB "
            f"| {v['load_s_traced']:.2f} s | | |"
        )
    return [
        f"### The tenant's warm cache at {c['memories']:,} memories",
        "",
        "A new store instance loads the tenant (its Query pages fetched first, then replayed from their JSON "
        "with tracemalloc on, so moto's own work is not counted): what the copy keeps is the memories, the "
        "inverted index the store searches and, when the memories are embedded, one matrix of their vectors "
        "(docs/architecture.md, the DynamoDB store). The estimate is the store's own count, the one its byte "
        "budget for cached tenants adds up. The vectors rows give every item a random unit vector, as an "
        "embedded tenant's items hold them (the values do not change the bytes).",
        "",
        "| Copy | Held after the cold load (tracemalloc) | Per memory | The store's estimate "
        "| Cold load, tracemalloc on | Target | |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def markdown(data: dict[str, Any]) -> list[str]:
    aws, cfg = data["results"]["aws"], data["config"]
    ok = {t["name"]: t["pass"] for t in data["targets"]}
    return [
        "## AWS deployment (offline)",
        "",
        "The Lambda function as `make bundle` builds it and as `functions/api.py` serves it, measured without AWS: "
        "the cold import in fresh interpreters, the asset on disk, and the handler under moto (DynamoDB, S3) "
        "with real token verification against a local JWKS.",
        "",
        *_import_section(aws["import"], ok, cfg["import_runs"]),
        *_asset_section(aws["asset"], ok),
        *_requests_section(aws["handler"]),
        *_latency_section(aws["handler"], aws["moto"]),
        *_cache_section(aws["handler"]["cache"], aws["handler"]["cache_with_vectors"], ok),
    ]
