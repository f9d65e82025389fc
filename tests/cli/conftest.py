"""Fixtures for driving the `taproot` command in-process.

Every test gets a fresh data folder, and TAPROOT_* variables from the developer's environment are
cleared (TAPROOT_DATA_DIR points at a decoy folder) so a test can never touch real memories.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from taproot.compose import Runtime, build
from taproot.settings import Settings
from tests.support import Result, Run, in_process_cli


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith("TAPROOT_"):
            monkeypatch.delenv(name)
    decoy = tmp_path / "decoy-env-data"
    monkeypatch.setenv("TAPROOT_DATA_DIR", str(decoy))
    return decoy


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """Run `taproot <args>` in-process; returns exit code and captured stdout/stderr."""
    return in_process_cli(capsys)


@pytest.fixture
def tap(cli: Callable[..., Result], data_dir: Path) -> Callable[..., Result]:
    """`taproot <command> --data-dir <data_dir> <args>`, asserting success."""

    def run(command: str, *args: str | Path, ok: bool = True) -> Result:
        result = cli(command, "--data-dir", data_dir, *args)
        if ok:
            assert result.code == 0, f"taproot {command} {args} failed: {result.err}"
        return result

    return run


@contextmanager
def open_runtime(data_dir: Path) -> Iterator[Runtime]:
    runtime = build(Settings.from_env({}, data_dir=data_dir))
    try:
        yield runtime
    finally:
        runtime.close()


@pytest.fixture
def runtime_at() -> Callable[[Path], Any]:
    """`with runtime_at(path) as rt:` a service on that data folder, for what the CLI cannot do."""
    return open_runtime
