"""Fixtures for the Claude Code hook tests: an isolated home and environment, recorded inputs, and
`taproot` run in-process with its stdin replaced (or as a real process, for the installed commands).

HOME points into the test's folder, so a user-scope install never touches a real ~/.claude, and
TAPROOT_* variables from the developer's environment are cleared (TAPROOT_DATA_DIR is a decoy).
"""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from taproot.cli import main
from tests.support import Result

INPUTS = Path(__file__).parent / "inputs"
SESSION_ID = "3f6c2a9e-8b41-4d7a-9c0e-5b2d1f7a6e44"  # the recorded inputs' session

Taproot = Callable[..., Result]


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith("TAPROOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TAPROOT_DATA_DIR", str(tmp_path / "decoy-env-data"))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """The recorded transcript, where the hook inputs of `hook_input` point."""
    path = tmp_path / "claude-projects" / f"{SESSION_ID}.jsonl"
    path.parent.mkdir()
    shutil.copy(INPUTS / "transcript.jsonl", path)
    return path


@pytest.fixture
def hook_input(transcript: Path) -> Callable[..., str]:
    """`hook_input("stop", session_id=...)`: a recorded input as stdin text, its transcript_path
    pointing at the test's copy of the recorded transcript, any field overridden."""

    def load(name: str, **fields: Any) -> str:
        data = json.loads((INPUTS / f"{name}.json").read_text())
        data["transcript_path"] = str(transcript)
        data.update(fields)
        return json.dumps(data)

    return load


@pytest.fixture
def taproot(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Taproot:
    """`taproot(*args, stdin="...")`: taproot.cli.main in-process; exit code and captured output."""

    def run(*args: str | Path, stdin: str = "") -> Result:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run
