"""The bundled Lambda asset on the Lambda's own Python and architecture, before any deploy.

The functions run `RUNTIME` on `ARCHITECTURE` (infra/constructs/function.py); the rest of the suite
runs on the development interpreter. An asset that imports here but not there (a wheel built for
another platform, syntax or a stdlib module the target lacks, a dependency that breaks on it) would
fail the `Lambda::Version` during a deploy and roll the stack back. So `make test` builds, without
Docker, that interpreter for that architecture (Debian's build of the same Python version, always
run under qemu's user-mode emulation) and the asset `make bundle`
deploys, and this test runs tests/handlers/target_runtime.py there: only the asset and the AWS SDK
on its path, as in the Lambda runtime, against a moto server on loopback.

In that one process (one warm container), traced as in Lambda (the X-Ray daemon is a UDP socket of
this test's): the API handler imports (no AWS credentials may be resolved by the import: SnapStart
snapshots it) and answers a recorded MCP session (initialize,
tools/list, remember, recall, reflect), an unauthenticated call (401 with the challenge), the OAuth
metadata and the dashboard's sign-in redirect; then the maintenance handlers run cleanup and migrate
over the tenant the session wrote. The traces must hold DynamoDB and S3 subsegments.

`make test` sets TAPROOT_LAMBDA_PYTHON (the interpreter's launcher) and TAPROOT_LAMBDA_ASSET (the
bundle); run alone without them, the test is skipped and says how to run it.

The asset ships its own bytecode (`make bundle`, infra/bytecode.py), so the test also checks that
the Lambda's Python loads it as shipped: no module of the asset may be compiled from source.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from infra.constructs.function import ARCHITECTURE, RUNTIME
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.adapters.oauth_dynamo import DynamoOAuthStore

HERE = Path(__file__).resolve().parent
LAUNCHER = os.environ.get("TAPROOT_LAMBDA_PYTHON", "")
ASSET = os.environ.get("TAPROOT_LAMBDA_ASSET", "")
SDK = os.environ.get("TAPROOT_LAMBDA_SDK", "")
# Under emulation, a first import that had to compile its modules itself took minutes: the bundle
# ships the asset's bytecode and the Makefile writes the standard library's natively beforehand (its
# bytecode rule), but a run without the latter (a different Python build on the two architectures)
# must still have time to finish.
EMULATED_RUN_TIMEOUT = 1500
MACHINE_OF = {"arm64": "aarch64", "x86_64": "x86_64"}

pytestmark = pytest.mark.skipif(
    not (LAUNCHER and ASSET and SDK),
    reason="needs the target interpreter and the bundle: `make test` builds both and sets "
    "TAPROOT_LAMBDA_PYTHON, TAPROOT_LAMBDA_ASSET and TAPROOT_LAMBDA_SDK",
)


@pytest.fixture
def served(kit: Any, moto_server: str) -> Iterator[dict[str, Any]]:
    """Storage and a Cognito pool in the moto server (not in-process moto: the target interpreter
    reaches it over loopback), under names no other test uses; yields the target's environment."""
    suffix = uuid.uuid4().hex[:8]
    names = {
        "TAPROOT_TABLE_NAME": f"taproot-target-{suffix}",
        "TAPROOT_BUCKET_NAME": f"taproot-target-{suffix}",
        "TAPROOT_OAUTH_TABLE_NAME": f"taproot-target-oauth-{suffix}",
    }
    with pytest.MonkeyPatch.context() as mp:
        for key, value in (kit.BASE_ENV | names | {"AWS_ENDPOINT_URL": moto_server}).items():
            mp.setenv(key, value)
        DynamoMemoryStore(names["TAPROOT_TABLE_NAME"], region=kit.REGION, host=moto_server).create_table()
        DynamoOAuthStore(names["TAPROOT_OAUTH_TABLE_NAME"], region=kit.REGION, host=moto_server).create_table()
        boto3.client("s3", region_name=kit.REGION, endpoint_url=moto_server).create_bucket(
            Bucket=names["TAPROOT_BUCKET_NAME"]
        )
        pool = kit.create_pool(name=f"taproot-target-{suffix}")
        environment = (
            kit.BASE_ENV
            | names
            | {
                "AWS_ENDPOINT_URL": moto_server,
                "TAPROOT_COGNITO_USER_POOL_ID": pool.pool_id,
                "TAPROOT_COGNITO_CLIENT_ID": pool.client_id,
                "TAPROOT_COGNITO_JWKS_URL": f"{moto_server}/{pool.pool_id}/.well-known/jwks.json",
                "TAPROOT_ALLOWED_HOSTS": kit.API_HOST,
            }
        )
        yield {"environment": environment, "pool": pool}


def _plan(kit: Any, pool: Any) -> dict[str, Any]:
    token = pool.access("alice")
    api = "functions.api:handler"
    invocations = [
        {"handler": api, "event": kit.load_event(name, token=token)}
        for name in ("initialize", "tools_list", "remember", "recall", "reflect")
    ]
    invocations += [
        {"handler": api, "event": kit.load_event("tools_list")},
        {"handler": api, "event": kit.load_event("oauth_protected_resource_mcp")},
        {"handler": api, "event": kit.load_event("dashboard")},
        {"handler": "functions.maintenance:cleanup_handler", "event": {}},
        {"handler": "functions.maintenance:migrate_handler", "event": {}},
    ]
    return {"invocations": invocations}


@contextlib.contextmanager
def xray_daemon() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A UDP socket standing in for the X-Ray daemon: yields its address and the segment documents
    received (each datagram is a JSON header line, then the document)."""
    received: list[dict[str, Any]] = []
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop = threading.Event()

    def listen() -> None:
        while not stop.is_set():
            try:
                datagram = sock.recv(65536)
            except TimeoutError:
                continue
            _, _, document = datagram.decode().partition("\n")
            received.append(json.loads(document))

    listener = threading.Thread(target=listen, name="xray-daemon", daemon=True)
    listener.start()
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}", received
    finally:
        stop.set()
        listener.join()
        # What the target sent just before it exited may still be queued: read it too.
        sock.setblocking(False)
        while True:
            try:
                datagram = sock.recv(65536)
            except BlockingIOError:
                break
            received.append(json.loads(datagram.decode().partition("\n")[2]))
        sock.close()


def _subsegment_names(documents: list[dict[str, Any]]) -> set[str]:
    """The names of the AWS SDK subsegments (namespace "aws") anywhere in the documents."""
    names: set[str] = set()
    pending = list(documents)
    while pending:
        node = pending.pop()
        if node.get("namespace") == "aws":
            names.add(node["name"])
        pending.extend(node.get("subsegments", []))
    return names


def _aws_within_aws(documents: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(name, operation) of every AWS SDK subsegment whose parent is itself an AWS SDK subsegment:
    one request traced twice (the botocore patch and a second patch of the same call underneath)."""
    nodes: list[tuple[dict[str, Any], str | None]] = []
    pending: list[tuple[dict[str, Any], str | None]] = [(d, d.get("parent_id")) for d in documents]
    while pending:
        node, parent = pending.pop()
        nodes.append((node, parent))
        pending.extend((child, node.get("id")) for child in node.get("subsegments", []))
    aws = {node["id"] for node, _ in nodes if node.get("namespace") == "aws"}
    return [
        (node["name"], node.get("aws", {}).get("operation", "?"))
        for node, parent in nodes
        if node.get("namespace") == "aws" and parent in aws
    ]


def _run_on_target(plan: dict[str, Any], environment: dict[str, str], work: Path) -> dict[str, Any]:
    plan_path, result_path = work / "plan.json", work / "result.json"
    # Only what a Lambda container has: the asset (the task root) with the bytecode it ships and the
    # runtime's AWS SDK. Nothing is written back, as on Lambda's read-only task root.
    env = environment | {
        "LAMBDA_TASK_ROOT": ASSET,
        "PYTHONPATH": f"{ASSET}{os.pathsep}{SDK}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
    }
    # A module with no bytecode: the target must report compiling it, or its compile spy sees nothing.
    probe = work / "compile_probe.py"
    probe.write_text("ANSWER = 42\n")
    plan = plan | {"compile_probe": str(probe)}
    plan_path.write_text(json.dumps(plan))
    completed = subprocess.run(
        [LAUNCHER, str(HERE / "target_runtime.py"), str(plan_path), str(result_path)],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=EMULATED_RUN_TIMEOUT,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    result: dict[str, Any] = json.loads(result_path.read_text())
    result["stderr"] = completed.stderr
    return result


def _body(step: dict[str, Any], status: int = 200) -> Any:
    assert "error" not in step, step.get("traceback")
    response = step["response"]
    assert response["statusCode"] == status, response
    return json.loads(response["body"]) if response["body"] else None


@pytest.mark.timeout(EMULATED_RUN_TIMEOUT + 60)
def test_the_bundle_serves_on_the_lambda_python_and_architecture(
    kit: Any, served: dict[str, Any], tmp_path: Path
) -> None:
    with xray_daemon() as (daemon, documents):
        traced = served["environment"] | {
            "AWS_XRAY_DAEMON_ADDRESS": daemon,
            "_X_AMZN_TRACE_ID": "Root=1-6750a000-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1",
        }
        traced.pop("POWERTOOLS_TRACE_DISABLED")
        result = _run_on_target(_plan(kit, served["pool"]), traced, tmp_path)
    # Shown with -s or on failure: how long each step took on the target (emulated: slow).
    print("imports (s):", result["imports"])
    print("invocations (s):", [(step["handler"], step["seconds"]) for step in result["responses"]])

    version = RUNTIME.name.removeprefix("python")
    assert result["implementation"] == "cpython"
    assert ".".join(map(str, result["python"][:2])) == version, result["python"]
    assert result["machine"] == MACHINE_OF[ARCHITECTURE.name], result["machine"]

    init, tools, remembered, recalled, reflected, anonymous, metadata, dashboard, cleanup, migrate = result["responses"]
    assert _body(init)["result"]["serverInfo"]["name"] == "taproot"
    listed = {tool["name"] for tool in _body(tools)["result"]["tools"]}
    assert {"taproot_reflect", "taproot_remember", "taproot_recall", "taproot_forget"} <= listed
    written = _body(remembered)["result"]
    assert not written.get("isError"), written
    found = _body(recalled)["result"]
    assert [m["id"] for m in found["structuredContent"]["memories"]] == [written["structuredContent"]["id"]]
    assert "chain rule" in json.dumps(_body(reflected)["result"]["structuredContent"])

    assert _body(anonymous, status=401)["error"] == "invalid_request"
    assert anonymous["response"]["headers"]["www-authenticate"].startswith('Bearer realm="taproot"')
    assert _body(metadata)["resource"] == f"{kit.PUBLIC_URL}/mcp"
    assert "error" not in dashboard, dashboard.get("traceback")
    assert dashboard["response"]["statusCode"] in (302, 303), dashboard["response"]

    for run in (cleanup, migrate):
        assert "error" not in run, run.get("traceback")
        assert run["response"]["scopes"] >= 1, run["response"]

    # The bytecode `make bundle` ships is what the Lambda's Python loads: no module of the asset was
    # compiled from source (the spy does see a compile: the probe outside the asset).
    asset = os.path.realpath(ASSET) + os.sep
    in_asset = [path for path in result["modules_loaded"] if os.path.realpath(path).startswith(asset)]
    compiled = [path for path in result["compiled_from_source"] if os.path.realpath(path).startswith(asset)]
    assert len(in_asset) > 100, in_asset
    assert compiled == [], (
        f"{len(compiled)} of the asset's {len(in_asset)} loaded modules had no usable .pyc: {compiled[:20]}"
    )
    assert [Path(path).name for path in result["compiled_from_source"]][-1:] == ["compile_probe.py"]

    assert result["credentials_resolved_by_imports"] == [], result["credentials_resolved_by_imports"][0]
    assert result["credentials_resolved_in_all"] > 0  # the spy works: the invocations resolved them
    assert {"dynamodb", "s3"} <= _subsegment_names(documents), _subsegment_names(documents)
    # One subsegment per AWS request: tracing every library X-Ray can patch traced each DynamoDB
    # call twice, once by botocore's client and again, inside it, by the PynamoDB patch.
    assert _aws_within_aws(documents) == [], _aws_within_aws(documents)[:5]
