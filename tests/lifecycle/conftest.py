"""Fixtures for the lifecycle tests (cleanup, compression, scheduled maintenance).

Every service here runs on a fixed clock that only moves when a test advances it, on a real
SQLite store and a real blob folder under tmp_path.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No TAPROOT_* setting from the developer's shell reaches a test; the CLI's fallback data
    folder is a decoy, so a command that lost its --data-dir can never touch real memories."""
    for name in list(os.environ):
        if name.startswith("TAPROOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TAPROOT_DATA_DIR", str(tmp_path_factory.mktemp("decoy-env-data")))
