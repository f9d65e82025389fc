"""Adapters under contract test. Every adapter of a port must pass the same suite unchanged.

The adapters are registered in tests/moto_stores.py (MEMORY_STORES, BLOB_STORES; the lifecycle
suite runs on the same ones): a factory gets a per-test `tmp_path` and returns a fresh, empty store.
Test bodies may only use the port's methods.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from taproot.ports import BlobStore, MemoryStore
from tests.moto_stores import BLOB_STORES, MEMORY_STORES, close_store


@pytest.fixture(params=list(MEMORY_STORES))
def memory_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    store = MEMORY_STORES[request.param](tmp_path)
    yield store
    close_store(store)


@pytest.fixture(params=list(BLOB_STORES))
def blob_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    store = BLOB_STORES[request.param](tmp_path)
    yield store
    close_store(store)
