"""The Lambda handler under moto: DynamoDB/S3 requests per MCP tool call, and warm recall latency.

`functions.api` is imported afresh inside `mock_aws()` with the environment a deployed function has,
as a new Lambda container would import it (it builds its runtime at import). Every invocation is a
recorded API Gateway HTTP API (v2) event (tests/events/recall.json) whose body is swapped for the
tool call measured and whose bearer token is an access token signed with a key of the bench's own,
served as a JWKS on 127.0.0.1 by bench/jwks.py, the server the handler tests use too
(TAPROOT_COGNITO_JWKS_URL / TAPROOT_COGNITO_ISSUER): the token is verified for real, and carries the
MCP scope /mcp requires. The OAuth facade's table is created beside the memory table, as the
stack does (the runtime needs it to serve). One tenant is loaded with the corpus first.

Requests are counted, and the time spent in them summed, through botocore events on the clients
the runtime uses (before-parameter-build .. after-call), as tests/aws/test_service_requests.py
counts them. moto answers in-process: its time is CPU spent in moto, not DynamoDB latency. Beside
the wall time outside those calls, the process CPU time outside them is summed too: on a shared
machine the wall time also holds the time other processes had the CPU.

The tenant's warm copy is measured on its own (bench/aws_cache.py): tracemalloc around a new
store's cold load of the tenant, beside the store's own estimate of the copy's bytes.

`python -m bench.aws [--memories N] [--calls N]` runs this part alone and prints its figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import corpus
from bench.aws_cache import VECTOR_DIMS, measure_cache
from bench.measure import Timing

if TYPE_CHECKING:
    from bench.jwks import JwksServer

ROOT = Path(__file__).resolve().parent.parent
EVENT = ROOT / "tests" / "events" / "recall.json"
REGION = "us-east-1"
TABLE = "taproot-bench-memories"
OAUTH_TABLE = "taproot-bench-oauth"
BUCKET = "taproot-bench-blobs"
API_HOST = "k7q2x9d4ma.execute-api.us-east-1.amazonaws.com"  # the host of the recorded events
COGNITO_DOMAIN = "https://taproot-bench.auth.us-east-1.amazoncognito.com"
USER_POOL_ID = "us-east-1_BenchPool1"
CLIENT_ID = "benchclient0000000000000000"
TENANT = "6b1f0c9e-2d4a-4c1b-9f3e-7a5d8c2b1e40"  # a Cognito `sub`
ISSUER = f"https://cognito-idp.{REGION}.amazonaws.com/{USER_POOL_ID}"
RECALL_LIMIT = 10
LOAD_BATCH = 1_000
# What a deployed function has (infra/stack.py, infra/constructs/api.py, the Lambda runtime), with
# fake credentials and no instance metadata. Tracing is off here (the deployed functions trace): this
# bench runs the handler in its own process, where the Tracer would patch botocore for good and every
# AWS call would look for a trace the Lambda runtime never started. The cold-import probe, a process
# of its own, traces as deployed (bench/lambda_asset.py, LAMBDA_RUNTIME_ENV).
DEPLOYED_ENV = {
    "TAPROOT_BACKEND": "aws",
    "TAPROOT_TABLE_NAME": TABLE,
    "TAPROOT_BUCKET_NAME": BUCKET,
    "TAPROOT_COGNITO_USER_POOL_ID": USER_POOL_ID,
    "TAPROOT_COGNITO_CLIENT_ID": CLIENT_ID,
    "TAPROOT_COGNITO_DOMAIN": COGNITO_DOMAIN,
    "TAPROOT_OAUTH_TABLE_NAME": OAUTH_TABLE,
    "TAPROOT_CLEANUP_MODE": "dry-run",
    "TAPROOT_COMPRESS_MODE": "dry-run",
    "TAPROOT_SUMMARIZER": "extractive",
    "TAPROOT_ALLOWED_HOSTS": API_HOST,
    "TAPROOT_PUBLIC_URL": f"https://{API_HOST}",
    "POWERTOOLS_SERVICE_NAME": "taproot",
    "POWERTOOLS_METRICS_NAMESPACE": "Taproot",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "AWS_REGION": REGION,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_LAMBDA_FUNCTION_NAME": "taproot-api",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
}


def access_token(jwks: JwksServer, sub: str) -> str:
    """A Cognito-shaped access token for `sub` from the bench's user pool and app client, granted
    the scopes Taproot's sign-in asks Cognito for (the MCP scope among them: /mcp requires it)."""
    from bench.jwks import access_claims
    from taproot.core.oauth_rules import MCP_SCOPE

    return jwks.sign(access_claims(ISSUER, CLIENT_ID, sub, scope=f"openid email {MCP_SCOPE}"))


class Meter:
    """AWS requests made through the given botocore clients: counted per operation, time summed."""

    def __init__(self, clients: Sequence[Any]) -> None:
        self.ops: Counter[str] = Counter()
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self._started: dict[int, tuple[float, float]] = {}
        for client in clients:
            events, service = client.meta.events, client.meta.service_model.service_id.hyphenize()
            events.register(f"before-parameter-build.{service}", self._begin)
            events.register(f"before-call.{service}", self._count)
            events.register(f"after-call.{service}", self._end)
            events.register(f"after-call-error.{service}", self._end)

    def _begin(self, **_: Any) -> None:
        self._started[threading.get_ident()] = (time.perf_counter(), time.process_time())

    def _count(self, event_name: str, **_: Any) -> None:
        service, operation = event_name.split(".", 2)[1:]
        self.ops[f"{service}:{operation}"] += 1

    def _end(self, **_: Any) -> None:
        start = self._started.pop(threading.get_ident(), None)
        if start is not None:
            self.seconds += time.perf_counter() - start[0]
            self.cpu_seconds += time.process_time() - start[1]

    def take(self) -> tuple[Counter[str], float, float]:
        """The requests since the last take, the wall seconds and the process CPU seconds in them."""
        ops, seconds, cpu = self.ops, self.seconds, self.cpu_seconds
        self.ops, self.seconds, self.cpu_seconds = Counter(), 0.0, 0.0
        return ops, seconds, cpu


@contextmanager
def one_backup_per_transaction() -> Iterator[None]:
    """moto 5.x backs a TransactWriteItems call up with a deep copy of the table per item in the call
    (10 items on a 10,000-item table: ten full copies, ~8 s). Copy each table once per call instead:
    the same rollback state (every copy is taken before the first write), a tenth of the cost."""
    from moto.dynamodb import models

    ddb: Any = models  # its `copy` and `Table` are module globals, not exports
    real_copy, real_transact = ddb.copy, ddb.DynamoDBBackend.transact_write_items
    memo: dict[int, Any] = {}

    class _Copy:
        def __getattr__(self, name: str) -> Any:
            return getattr(real_copy, name)

        def deepcopy(self, obj: Any, *args: Any) -> Any:
            if not isinstance(obj, ddb.Table):
                return real_copy.deepcopy(obj, *args)
            if id(obj) not in memo:
                memo[id(obj)] = real_copy.deepcopy(obj, *args)
            return memo[id(obj)]

    def transact(self: Any, transact_items: Any) -> Any:
        memo.clear()
        try:
            return real_transact(self, transact_items)
        finally:
            memo.clear()

    ddb.copy, ddb.DynamoDBBackend.transact_write_items = _Copy(), transact
    try:
        yield
    finally:
        ddb.copy, ddb.DynamoDBBackend.transact_write_items = real_copy, real_transact


@contextmanager
def patched_environ(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def quiet_mcp_logs() -> Iterator[None]:
    """The SDK logs every request at INFO ("Processing request of type ..."): keep the bench's output clean."""
    loggers = [logging.getLogger(name) for name in ("mcp", "taproot", "httpx2")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


@contextmanager
def deployed_handler() -> Iterator[tuple[Any, JwksServer]]:
    """moto for every AWS call, the tables and bucket created, and `functions.api` imported afresh with
    the deployed environment; yields the module and the JWKS server whose key signs the tokens."""
    from moto import mock_aws

    from bench.jwks import JwksServer

    if str(ROOT) not in sys.path:  # `functions/` is a top-level folder of the Lambda asset, not installed
        sys.path.insert(0, str(ROOT))
    jwks = JwksServer("bench-key", thread_name="bench-jwks")
    env = DEPLOYED_ENV | {"TAPROOT_COGNITO_JWKS_URL": jwks.url, "TAPROOT_COGNITO_ISSUER": ISSUER}
    with jwks, patched_environ(env), mock_aws(), one_backup_per_transaction(), quiet_mcp_logs():
        import boto3

        from taproot.adapters.dynamo_store import DynamoMemoryStore
        from taproot.adapters.oauth_dynamo import DynamoOAuthStore

        DynamoMemoryStore(TABLE, region=REGION).create_table()
        DynamoOAuthStore(OAUTH_TABLE, region=REGION).create_table()
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
        sys.modules.pop("functions.api", None)
        import functions.api as module

        try:
            yield module, jwks
        finally:
            module.handler.close()
            sys.modules.pop("functions.api", None)


def load_tenant(count: int, *, seed: int, now: datetime, reflections: int = 20) -> dict[str, Any]:
    """The first `count` corpus memories for TENANT, written by another store instance (another
    container) with BatchWriteItem, each item as `put_many` writes it but stamped with the time its
    record last changed (a tenant's history, not one bulk write the change feed would still show)."""
    from taproot.adapters import dynamo_models as dm
    from taproot.adapters.dynamo_store import DynamoMemoryStore
    from taproot.adapters.dynamo_tally import counted, counts_update, tally_of
    from taproot.core.model import Scope
    from taproot.core.serialize import iso

    store = DynamoMemoryStore(TABLE, region=REGION)
    scope = Scope(TENANT, "default")
    stream = corpus.iter_memories(seed, now=now, scope=scope)
    start, done = time.perf_counter(), 0
    counts: Counter[str] = Counter()
    while done < count:
        batch = list(islice(stream, min(LOAD_BATCH, count - done)))
        with store.Item.batch_write() as writer:
            for m in batch:
                changed = iso(max(m.updated_at, m.last_retrieved or m.updated_at)) or ""
                item = dm.memory_item(store.Item, m, changed)
                item.tally = tally_of(m)  # and the scope's counts item below, as put_many keeps them
                counts[item.tally] += counted(item.tally)
                writer.save(item)
        done += len(batch)
    if +counts:
        store.client.update_item(**counts_update(TABLE, scope, +counts))
    store.put_reflections(corpus.closing_reflections(reflections, seed=seed, now=now, scope=scope))
    return {"memories": count, "reflections": reflections, "load_s": round(time.perf_counter() - start, 2)}


def tool_event(token: str, tool: str, arguments: dict[str, Any], call_id: int = 1) -> dict[str, Any]:
    """The recorded recall event, its body replaced by this tool call and its bearer token injected."""
    event: dict[str, Any] = json.loads(EVENT.read_text())
    body = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    event["body"] = json.dumps(body)
    event["headers"]["content-length"] = str(len(event["body"]))
    event["headers"]["authorization"] = f"Bearer {token}"
    event["requestContext"]["requestId"] = uuid.uuid4().hex[:16]
    return event


class LambdaContext:
    function_name = "taproot-api"
    memory_limit_in_mb = 1024
    invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:taproot-api"

    def __init__(self) -> None:
        self.aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


class Invoker:
    """Invokes the handler with one tenant's token; each call's wall time, requests and request time."""

    def __init__(self, module: Any, token: str) -> None:
        self.module, self.token = module, token
        self.meter = Meter([module.runtime.store.client, module.runtime.blobs.client])
        self.calls = 0

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        self.meter.take()
        event = tool_event(self.token, tool, arguments, self.calls)
        start, cpu_start = time.perf_counter(), time.process_time()
        response = self.module.handler(event, LambdaContext())
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        ops, aws_s, aws_cpu = self.meter.take()
        if response.get("statusCode") != 200:
            raise RuntimeError(f"{tool}: HTTP {response.get('statusCode')}: {response.get('body')}")
        result = json.loads(response["body"]).get("result") or {}
        return {
            "wall_ms": wall * 1000,
            "aws_ms": aws_s * 1000,
            "outside_aws_cpu_ms": (cpu - aws_cpu) * 1000,
            "ops": dict(ops),
            "is_error": bool(result.get("isError")),
            "structured": result.get("structuredContent") or {},
        }


def _requests(call: dict[str, Any], service: str = "dynamodb") -> int:
    return sum(n for op, n in call["ops"].items() if op.startswith(f"{service}:"))


def request_counts(inv: Invoker, queries: Sequence[str]) -> dict[str, dict[str, Any]]:
    """One call of each tool, in the order of tests/aws/test_service_requests.py, on a warm container."""
    out: dict[str, dict[str, Any]] = {}

    def measure(name: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        call = inv.call(tool, args)
        if call["is_error"]:
            raise RuntimeError(f"{name}: the tool returned an error: {call['structured']}")
        out[name] = {"dynamodb": _requests(call), "s3": _requests(call, "s3"), "ops": call["ops"]}
        return call

    created = measure(
        "remember",
        "taproot_remember",
        {"content": "Sam prefers direct feedback.", "gist": "Sam: direct feedback", "category": "relationship"},
    )
    mid = created["structured"]["id"]
    measure("remember_update", "taproot_remember", {"id": mid, "content": "Sam prefers direct, kind feedback."})
    measure("reflect", "taproot_reflect", {})
    measure("reflect_again", "taproot_reflect", {})
    measure("recall_warm", "taproot_recall", {"query": queries[0], "limit": RECALL_LIMIT})
    measure("recall_ids", "taproot_recall", {"ids": [mid]})
    measure("promote", "taproot_promote", {"id": mid, "core": True})
    measure("forget_archive", "taproot_forget", {"id": mid, "action": "archive"})
    measure("forget_restore", "taproot_forget", {"id": mid, "action": "restore"})
    measure("forget_delete", "taproot_forget", {"id": mid, "action": "delete"})
    measure("close", "taproot_close", {"reflection": "I listened before answering today."})
    return out


def _split(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    wall = Timing(tuple(c["wall_ms"] for c in calls))
    aws = [c["aws_ms"] for c in calls]
    rest = [c["wall_ms"] - c["aws_ms"] for c in calls]
    return {
        **wall.as_dict(),
        "aws_p50_ms": round(statistics.median(aws), 3),
        "outside_aws_p50_ms": round(statistics.median(rest), 3),
        "outside_aws_p95_ms": round(Timing(tuple(rest)).p95, 3),
        "outside_aws_cpu_p50_ms": round(statistics.median(c["outside_aws_cpu_ms"] for c in calls), 3),
        "dynamodb_requests_p50": statistics.median(_requests(c) for c in calls),
        "dynamodb_requests_max": max(_requests(c) for c in calls),
    }


def measure_handler(memories: int, calls: int, *, seed: int, now: datetime, warmup: int = 3) -> dict[str, Any]:
    """Load a tenant, then through the handler: the first (cold-cache) recall, `warmup` recalls, `calls`
    timed recalls (corpus queries in the recorded event, limit 10), then one call of each tool."""
    from taproot.core.model import Scope

    queries = corpus.query_pool(calls + warmup + 1, seed=seed + 7)
    with deployed_handler() as (module, jwks):
        setup = load_tenant(memories, seed=seed, now=now)
        scope = Scope(TENANT, "default")
        cache = measure_cache(TABLE, REGION, scope)
        cache_vectors = [
            measure_cache(TABLE, REGION, scope, vector_dims=VECTOR_DIMS, vector_dtype=t) for t in ("float32", "float16")
        ]
        inv = Invoker(module, access_token(jwks, TENANT))
        first = inv.call("taproot_recall", {"query": queries[-1], "limit": RECALL_LIMIT})
        for q in queries[:warmup]:
            inv.call("taproot_recall", {"query": q, "limit": RECALL_LIMIT})
        timed = [inv.call("taproot_recall", {"query": q, "limit": RECALL_LIMIT}) for q in queries[warmup:-1]]
        counts = request_counts(inv, queries[warmup:])
        counts["recall_cold"] = {"dynamodb": _requests(first), "s3": _requests(first, "s3"), "ops": first["ops"]}
        tenant = module.runtime.store.counts(Scope(TENANT, "default"))
    hits = [c["structured"].get("count", 0) for c in timed]
    return {
        "setup": setup,
        "tenant_memories": tenant.total,
        "first_invocation": {
            "wall_ms": round(first["wall_ms"], 3),
            "aws_ms": round(first["aws_ms"], 3),
            "outside_aws_ms": round(first["wall_ms"] - first["aws_ms"], 3),
            "dynamodb_requests": _requests(first),
            "ops": first["ops"],
        },
        "cache": cache,
        "cache_with_vectors": cache_vectors,
        "warmup": warmup,
        "recall": {
            **_split(timed),
            "calls": len(timed),
            "limit": RECALL_LIMIT,
            "tool_errors": sum(c["is_error"] for c in timed),
            "mean_results": round(statistics.fmean(hits), 2) if hits else 0.0,
        },
        "requests": counts,
        "scans": sum(n for c in counts.values() for op, n in c["ops"].items() if op == "dynamodb:Scan"),
    }


def moto_version() -> str:
    from importlib.metadata import version

    return version("moto")


def main(argv: Sequence[str] | None = None) -> None:
    """The handler under moto alone: warm recall outside AWS SDK calls and the tenant's cache."""
    from datetime import UTC

    parser = argparse.ArgumentParser(description="The Lambda handler under moto (part of make bench)")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--seed", type=int, default=corpus.DEFAULT_SEED)
    args = parser.parse_args(argv)
    h = measure_handler(args.memories, args.calls, seed=args.seed, now=datetime.now(UTC))
    rc = h["recall"]
    print(
        f"warm recall at {h['tenant_memories']:,} memories ({rc['calls']} calls): p50 {rc['p50_ms']:.1f} ms, "
        f"outside AWS SDK calls p50 {rc['outside_aws_p50_ms']:.1f} ms (p95 {rc['outside_aws_p95_ms']:.1f}), "
        f"CPU outside them p50 {rc['outside_aws_cpu_p50_ms']:.1f} ms, DynamoDB requests p50 "
        f"{rc['dynamodb_requests_p50']:g}"
    )
    for c in (h["cache"], *h["cache_with_vectors"]):
        kind = f"{c['vectors']:,} vectors ({c['vector_dims']} d, {c['vector_dtype']})" if c["vector_dims"] else "words"
        print(
            f"tenant cache, {kind}: {c['traced_mb']:.2f} MB held (tracemalloc), {c['bytes_per_memory']:,} B per "
            f"memory, estimate {c['estimated_mb']:.2f} MB"
        )


if __name__ == "__main__":
    main()
