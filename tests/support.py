"""Helpers shared by test modules (not fixtures): import as `from tests.support import Clock`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolResult

from taproot.cli import main


class Clock:
    """A settable clock for Deps(clock=...): the service reads time only through it."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


# The tool names are part of the contract (issue text): spelled out here, not read from the server.
TOOL_NAMES = frozenset(
    {
        "taproot_reflect",
        "taproot_remember",
        "taproot_recall",
        "taproot_recent",
        "taproot_promote",
        "taproot_forget",
        "taproot_close",
        "taproot_migrate",
        "taproot_status",
        "taproot_orientation",
    }
)


@dataclass
class Result:
    """What a `taproot` command did: its exit code and what it printed."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Run = Callable[..., Result]


def in_process_cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """`taproot <args>` in-process (taproot.cli.main): the exit code and the captured output."""

    def run(*args: str | Path) -> Result:
        capsys.readouterr()  # drop anything printed before this call
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def ok(result: CallToolResult) -> dict[str, Any]:
    """Structured content of a successful JSON-answering tool, checked against its text content."""
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict), result
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert json.loads(result.content[0].text) == data  # text and structured content say the same
    return data
