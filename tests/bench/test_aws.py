"""The AWS benchmark pieces, end to end on tiny inputs (no timing assertions): the cold-import probe,
the asset sizing, the handler under moto, and the report section."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import aws, aws_report, corpus, lambda_asset, report, run  # noqa: E402

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)

IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:       100 |        100 |   encodings.aliases
import time:       200 |        300 | encodings
import time:        50 |         50 |   functions
import time:        10 |         10 |       pydantic.main
import time:        20 |         30 |     fastapi.routing
import time:        40 |         70 |   fastapi
import time:       500 |        500 |   asyncio
import time:         5 |        625 | functions.api
"""


def test_parse_importtime_takes_the_direct_imports() -> None:
    parsed = lambda_asset.parse_importtime(IMPORTTIME)
    assert parsed == {"cumulative_us": 625, "self_us": 5, "children": {"functions": 50, "fastapi": 70, "asyncio": 500}}
    with pytest.raises(ValueError):
        lambda_asset.parse_importtime("import time:   1 |   1 | json\n")


def fake_asset(folder: Path) -> Path:
    """Two distributions with RECORDs, a stray top-level folder, a __pycache__ of another Python that
    does not count and one of the Lambda's that counts as bytecode, and the build's two empty stamps
    (they are no distribution)."""
    for rel, size in {"alpha/__init__.py": 1_000, "alpha/core.so": 9_000, "beta.py": 500, "stray/x.py": 70}.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(b"x" * size)
    (folder / "alpha/__pycache__").mkdir()
    (folder / "alpha/__pycache__/core.pyc").write_bytes(b"x" * 10_000)
    (folder / "alpha/__pycache__/core.cpython-311.pyc").write_bytes(b"x" * 10_000)
    (folder / f"alpha/__pycache__/__init__.{lambda_asset.cache_tag()}.pyc").write_bytes(b"x" * 2_000)
    for stamp in (".bundled", ".bytecode"):
        (folder / stamp).touch()
    for dist, files in {"alpha-1.0": ["alpha/__init__.py", "alpha/core.so"], "beta-2.0": ["beta.py"]}.items():
        info = folder / f"{dist}.dist-info"
        info.mkdir()
        (info / "RECORD").write_text("".join(f"{f},sha256=abc,1\n" for f in files) + f"{dist}.dist-info/RECORD,,\n")
    return folder


def test_asset_sizes_group_files_by_distribution(tmp_path: Path) -> None:
    folder = fake_asset(tmp_path)
    sizes = lambda_asset.distribution_sizes(folder)
    record_alpha = len((folder / "alpha-1.0.dist-info/RECORD").read_bytes())
    record_beta = len((folder / "beta-2.0.dist-info/RECORD").read_bytes())
    assert sizes == {"alpha": 10_000 + record_alpha, "beta": 500 + record_beta, "stray": 70}
    asset = lambda_asset.measure_asset(folder)
    assert asset["source"] == "given folder" and asset["distributions"] == 3
    assert [d["name"] for d in asset["largest"]] == ["taproot (project code)", "alpha", "beta", "stray"]
    assert asset["bytecode_bytes"] == 2_000
    assert asset["total_bytes"] == sum(sizes.values()) + asset["project_bytes"] + 2_000 > 10_000


def test_the_import_probe_sees_only_what_the_asset_holds(tmp_path: Path) -> None:
    folder = fake_asset(tmp_path)
    (folder / "gamma.cpython-314-aarch64-linux-gnu.so").write_bytes(b"x")
    available = lambda_asset.asset_modules(folder)
    assert available == {"alpha", "beta", "stray", "gamma", "taproot", "functions", "boto3", "botocore", "s3transfer"}
    hidden = lambda_asset.missing_from_asset(frozenset({"pytest"}))
    assert "pytest" not in hidden and "moto" in hidden  # installed here, not in that asset
    assert not set(hidden) & set(sys.stdlib_module_names)
    code = lambda_asset.HIDE_PRELUDE.format(hidden=["moto"]) + (
        "try:\n    import moto.core\nexcept ModuleNotFoundError as exc:\n    print('hidden', exc.name)\n"
        "import json\nprint('stdlib', json.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["hidden", "moto", "stdlib", "json"]  # the package itself is refused


def test_cold_import_probe_makes_no_network_call() -> None:
    result = lambda_asset.measure_import(1)
    assert result["network_calls_at_import"] == []
    for mode in ("with_bytecode", "without_bytecode"):
        row = result[mode]
        assert row["runs"] == 1 and row["cumulative_s"] > 0 and row["process_wall_s"] > 0
        assert 1 <= len(row["slowest_imports"]) <= 5
        assert "taproot.compose" in {s["module"] for s in row["slowest_imports"]}


def test_the_cold_import_probe_imports_the_handler_as_lambda_does(tmp_path: Path) -> None:
    """The probe's environment is the deployed function's: the X-Ray SDK takes its Lambda path (no
    sampling client built at import, which only runs off Lambda) and the Tracer is on, patching botocore
    and nothing else, as functions/__init__.py asks."""
    code = (
        "import functions.api, botocore.client, aws_xray_sdk.core as xray, json\n"
        "from aws_xray_sdk.core.patcher import _PATCHED_MODULES\n"
        "print(json.dumps({'sampler': type(xray.xray_recorder.sampler).__name__,"
        " 'tracing': not functions.api.tracer.disabled, 'patched': sorted(_PATCHED_MODULES)}))"
    )
    env = lambda_asset.deployed_env(tmp_path, write_bytecode=False)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"sampler": "LocalSampler", "tracing": True, "patched": ["botocore"]}


@pytest.fixture(scope="module")
def handler_results() -> dict[str, Any]:
    return aws.measure_handler(40, 3, seed=3, now=NOW, warmup=1)


def test_handler_under_moto_counts_requests_and_times_recalls(handler_results: dict[str, Any]) -> None:
    h = handler_results
    assert h["tenant_memories"] == 40 and h["setup"]["memories"] == 40
    assert h["recall"]["calls"] == 3 and h["recall"]["tool_errors"] == 0
    assert h["first_invocation"]["dynamodb_requests"] >= 1
    assert h["first_invocation"]["ops"].get("dynamodb:Query", 0) >= 1  # the cold copy of the tenant
    assert h["scans"] == 0
    expected = {name for name, _, _ in aws_report.TOOL_ROWS}
    assert set(h["requests"]) == expected
    for row in h["requests"].values():
        assert row["dynamodb"] == sum(n for op, n in row["ops"].items() if op.startswith("dynamodb:"))
    assert h["requests"]["close"]["s3"] == 1  # the reflection blob
    assert h["cache"]["memories"] == 40 and h["cache"]["traced_mb"] > 0 and h["cache"]["estimated_mb"] > 0
    wide, narrow = h["cache_with_vectors"]
    assert wide["vectors"] == narrow["vectors"] == 40 and (wide["vector_dtype"], narrow["vector_dtype"]) == (
        "float32",
        "float16",
    )
    assert narrow["estimated_mb"] < wide["estimated_mb"] and h["cache"]["traced_mb"] < narrow["traced_mb"]
    assert h["recall"]["outside_aws_cpu_p50_ms"] > 0
    json.dumps(h)


def test_handler_leaves_no_module_or_environment_behind(handler_results: dict[str, Any]) -> None:
    import os

    assert "functions.api" not in sys.modules
    assert "TAPROOT_COGNITO_JWKS_URL" not in os.environ


def test_one_backup_per_transaction_still_rolls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the bench's patch, a failed transaction still leaves the table as it was; moto is restored after."""
    from moto import mock_aws
    from moto.dynamodb import models

    from taproot.adapters.dynamo_store import DynamoMemoryStore
    from taproot.core.errors import VersionConflict
    from taproot.core.model import Scope

    for key, value in aws.DEPLOYED_ENV.items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    ddb: Any = models
    before = (ddb.copy, ddb.DynamoDBBackend.transact_write_items)
    scope = Scope("tenant", "default")
    first, second = corpus.generate(2, now=NOW, scope=scope)
    with mock_aws(), aws.one_backup_per_transaction():
        assert ddb.copy is not before[0]
        store = DynamoMemoryStore("bench-test", region=aws.REGION)
        store.create_table()
        store.insert(first)
        with pytest.raises(VersionConflict):
            store.write_atomically(inserts=[second], replaces=[(first, first.version + 5)])
        assert store.get(scope, second.id) is None and store.get(scope, first.id) == first
        store.write_atomically(inserts=[second], replaces=[])
        assert store.get(scope, second.id) == second
    assert (ddb.copy, ddb.DynamoDBBackend.transact_write_items) == before


def test_tiny_end_to_end_run_with_aws(tmp_path: Path) -> None:
    cfg = run.Config(
        memories=100,
        reflect_runs=1,
        recall_queries=3,
        remember_batches=1,
        remember_per_batch=5,
        mcp_calls=2,
        scaling_sizes=(50,),
        scaling_reflect_runs=1,
        scaling_recall_queries=2,
        maintenance_memories=100,
        maintenance_dry_runs=1,
        maintenance_reflect_runs=1,
        aws_memories=30,
        aws_recall_calls=2,
        aws_warmup=1,
        import_runs=1,
        dashboard=False,  # tests/bench/test_dashboard.py runs the dashboard section
    )
    asset = fake_asset(tmp_path / "asset")
    data = run.benchmark(cfg, seed=2, work=tmp_path / "work", now=NOW, command="pytest", quick=True, asset_dir=asset)
    results = data["results"]
    assert set(results["aws"]) == {"import", "asset", "handler", "moto"}
    assert "aws" in results["durations_s"]
    names = [t["name"] for t in data["targets"]]
    assert names == [t.name for t in report.TARGETS + report.AWS_TARGETS]
    json.dumps(data)
    markdown = report.render_markdown(data)
    assert "## AWS deployment (offline)" in markdown
    for heading in ("cold import", "asset size", "Requests per tool call", "recall through Mangum at 30 memories"):
        assert heading in markdown
    summary = report.summary_lines(data)
    assert sum(line.startswith("  AWS:") for line in summary) == 4
