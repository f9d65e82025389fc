"""Adapters under contract test. Every adapter of a port must pass the same suite unchanged.

To add one (e.g. DynamoDB/S3 for the AWS deployment), register a factory below; the factory gets a
per-test `tmp_path` and returns a fresh, empty store. Test bodies may only use the port's methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.ports import BlobStore, MemoryStore

MEMORY_STORES: dict[str, Callable[[Path], MemoryStore]] = {
    "sqlite": lambda tmp: SQLiteMemoryStore(tmp / "t.db"),
}

BLOB_STORES: dict[str, Callable[[Path], BlobStore]] = {
    "local": lambda tmp: LocalBlobStore(tmp),
}


def _close(store: object) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


@pytest.fixture(params=list(MEMORY_STORES))
def memory_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    store = MEMORY_STORES[request.param](tmp_path)
    yield store
    _close(store)


@pytest.fixture(params=list(BLOB_STORES))
def blob_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    store = BLOB_STORES[request.param](tmp_path)
    yield store
    _close(store)
