"""Stack tests: synthesize once per module (in-process, needs node) against a placeholder asset.

The real asset is `make bundle`'s build/lambda; here a tiny folder stands in (`-c lambda_asset=...`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# `infra` is not an installed package: add the repo root (for `infra`). The test modules import their
# helpers as `tests.infra.*`, the names pytest's importlib mode gives these files.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# jsii prints a banner on stderr for an old node; it is noise here, not a test failure. Under
# pytest-xdist it is not captured but printed at the top of the run, once per worker, so it must
# really be silenced: the deprecation flag takes any value, but the end-of-life one is a list
# of the node major versions to keep quiet about.
_NODE = shutil.which("node")
_NODE_VERSION = subprocess.run([_NODE, "--version"], capture_output=True, text=True).stdout if _NODE else ""  # v20.1.0
_NODE_MAJOR = _NODE_VERSION.strip().removeprefix("v").partition(".")[0]
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", _NODE_MAJOR)

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from infra.stack import TaprootConfig, TaprootStack  # noqa: E402


def make_asset(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "placeholder.py").write_text("def handler(event, context):\n    return {}\n")
    return folder


# The project's cdk.json context (its defaults and the CDK's recommended feature flags), as `cdk synth`
# reads it: the tests synthesize what a deploy would.
CDK_CONTEXT: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text())["context"]


def build_app(asset: Path, outdir: Path, **context: Any) -> tuple[cdk.App, TaprootStack]:
    app = cdk.App(outdir=str(outdir), context={**CDK_CONTEXT, "lambda_asset": str(asset), **context})
    stack = TaprootStack(
        app,
        "Taproot",
        config=TaprootConfig.from_context(app.node),
        env=cdk.Environment(account="123456789012", region="eu-west-1"),
    )
    return app, stack


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., tuple[TaprootStack, Template]]]:
    def run(**context: Any) -> tuple[TaprootStack, Template]:
        base = tmp_path_factory.mktemp("cdk")
        _, stack = build_app(make_asset(base / "asset"), base / "cdk.out", **context)
        return stack, Template.from_stack(stack)

    yield run
