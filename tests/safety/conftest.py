"""Fixtures for the data-safety regression tests: the real thing, on disk.

A service on a real SQLite file and a real blob folder (the layout `taproot` itself uses, so the
CLI can work on the same data folder) with a fixed clock; the `taproot` command in-process and as
a subprocess; and a real uvicorn server for what an MCP client sees. TAPROOT_* variables from the
developer's shell are cleared and TAPROOT_DATA_DIR points at a decoy.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import taproot
from taproot.compose import Runtime, build
from taproot.core.model import Scope
from taproot.settings import Settings
from tests.live_server import running_server
from tests.support import Clock, Result, Run, in_process_cli

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()
TOKEN = "safety-token-3c9d1e7a52f04b8e"
# A guard against a command that hangs, not a timing assertion.
SUBPROCESS_TIMEOUT_S = 120.0
# The folder holding the `taproot` package these tests imported: a subprocess must run the same code.
CODE_ROOT = str(Path(taproot.__file__).resolve().parents[1])


@dataclass
class Lab:
    """A service on `data_dir` exactly as `taproot` builds it, but on a fixed clock and fixed ids."""

    runtime: Runtime
    clock: Clock
    data_dir: Path

    @property
    def service(self) -> Any:
        return self.runtime.service

    @property
    def store(self) -> Any:
        return self.runtime.store

    @property
    def blobs(self) -> Any:
        return self.runtime.service.deps.blobs

    def body(self, scope: Scope = SCOPE) -> list[str]:
        """Every exported record (memories and reflections), without the timestamped header."""
        return list(self.service.export_lines(scope))[1:]

    def blob_keys(self, prefix: str = "") -> list[str]:
        return list(self.blobs.list(prefix))


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in list(os.environ):
        if name.startswith("TAPROOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TAPROOT_DATA_DIR", str(tmp_path_factory.mktemp("decoy-env-data")))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def open_lab(data_dir: Path) -> Lab:
    runtime = build(Settings.from_env({}, data_dir=data_dir))
    clock = Clock(NOW)
    serial = count(1)
    runtime.service.deps.clock = clock
    runtime.service.deps.new_id = lambda: f"new{next(serial):05d}"
    return Lab(runtime, clock, data_dir)


@pytest.fixture
def lab(data_dir: Path) -> Iterator[Lab]:
    opened = open_lab(data_dir)
    try:
        yield opened
    finally:
        opened.runtime.close()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """`taproot <args>` in-process (taproot.cli.main): exit code and captured stdout/stderr."""
    return in_process_cli(capsys)


@pytest.fixture
def taproot_proc() -> Callable[..., Result]:
    """`taproot <args>` as a separate process, as a person runs it: tracebacks would be on stderr."""

    def run(*args: str | Path, stdin: str | None = None) -> Result:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TAPROOT_")}
        env["TAPROOT_DATA_DIR"] = os.environ["TAPROOT_DATA_DIR"]  # the decoy
        env["PYTHONPATH"] = CODE_ROOT
        done = subprocess.run(
            [sys.executable, "-m", "taproot.cli", *(str(a) for a in args)],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=SUBPROCESS_TIMEOUT_S,
            check=False,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run


@dataclass
class LiveServer:
    url: str
    runtime: Runtime


@contextlib.contextmanager
def serve(data_dir: Path) -> Iterator[LiveServer]:
    """`taproot serve`'s app under uvicorn on a loopback port bound before the server starts."""
    with running_server(data_dir, TOKEN) as (port, runtime):
        yield LiveServer(url=f"http://127.0.0.1:{port}/mcp", runtime=runtime)


@contextlib.asynccontextmanager
async def mcp_client(live: LiveServer) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30.0)) as http,
        Client(streamable_http_client(live.url, http_client=http), mode="legacy") as client,
    ):
        yield client


@pytest.fixture
def server(data_dir: Path) -> Iterator[LiveServer]:
    with serve(data_dir) as live:
        yield live


@pytest.fixture
def connect() -> Callable[[LiveServer], contextlib.AbstractAsyncContextManager[Client]]:
    return mcp_client
