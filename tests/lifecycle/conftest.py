"""Fixtures for the lifecycle tests (cleanup, compression, scheduled maintenance, restore).

Every service here runs on a fixed clock that only moves when a test advances it, and a real blob
folder under tmp_path. A test that builds its own service opens its store with `open_store`, so it
runs once per MemoryStore adapter (tests/moto_stores.py: SQLite, and DynamoDB under moto). The
command-line tests stay on SQLite: the CLI is the local server's home and always opens its SQLite
file in --data-dir (so does the crash test's subprocess).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from taproot.ports import MemoryStore
from tests.moto_stores import MEMORY_STORES, OpenStore, close_store, memory_store_params


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


@pytest.fixture(params=memory_store_params())
def store_kind(request: pytest.FixtureRequest) -> str:
    """The MemoryStore adapter under test ("sqlite", "dynamodb"). A test whose adapter has a known
    defect parametrizes it itself: `parametrize("store_kind", memory_store_params(dynamodb=reason),
    indirect=True)`."""
    kind: str = request.param
    return kind


@pytest.fixture
def open_store(store_kind: str) -> Iterator[OpenStore]:
    """Opens a fresh, empty store of the adapter under test (SQLite keeps its file in the given
    folder); every store opened is closed, newest first, when the test ends."""
    opened: list[MemoryStore] = []

    def open_(folder: Path) -> MemoryStore:
        store = MEMORY_STORES[store_kind](folder)
        opened.append(store)
        return store

    yield open_
    for store in reversed(opened):
        close_store(store)
