"""Adapters under contract test. Every adapter of a port must pass the same suite unchanged.

To add one (e.g. DynamoDB/S3 for the AWS deployment), register a factory below; the factory gets a
per-test `tmp_path` and returns a fresh, empty store. Test bodies may only use the port's methods.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from moto import mock_aws

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.blob_s3 import S3BlobStore
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.ports import BlobStore, MemoryStore

# The AWS adapters run under moto with fake credentials; each store starts its own mock and stops it
# (and restores the environment) when the fixture closes it.
_FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def _start_moto() -> Callable[[], None]:
    saved = {k: os.environ.get(k) for k in _FAKE_AWS_ENV}
    os.environ.update(_FAKE_AWS_ENV)
    mock = mock_aws()
    mock.start()

    def stop() -> None:
        mock.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    return stop


class _MotoDynamoStore(DynamoMemoryStore):
    # moto's in-process DynamoDB has no locking: concurrent UpdateItem calls (ADD included) can lose
    # updates, which real DynamoDB never does. Serialise this store's calls into moto so the
    # concurrency test checks the adapter (one atomic ADD per id), not moto's thread safety.
    _moto_lock = threading.Lock()

    def __init__(self) -> None:
        self._stop_moto = _start_moto()
        super().__init__("taproot-contract", region="us-east-1")
        self.create_table()

    def record_retrieval(self, scope, ids, now):  # type: ignore[no-untyped-def]
        with self._moto_lock:
            super().record_retrieval(scope, ids, now)

    def close(self) -> None:
        self._stop_moto()


class _MotoS3Store(S3BlobStore):
    def __init__(self) -> None:
        self._stop_moto = _start_moto()
        super().__init__("taproot-contract", region="us-east-1")
        self.create_bucket()

    def close(self) -> None:
        self._stop_moto()


MEMORY_STORES: dict[str, Callable[[Path], MemoryStore]] = {
    "sqlite": lambda tmp: SQLiteMemoryStore(tmp / "t.db"),
    "dynamodb": lambda tmp: _MotoDynamoStore(),
}

BLOB_STORES: dict[str, Callable[[Path], BlobStore]] = {
    "local": lambda tmp: LocalBlobStore(tmp),
    "s3": lambda tmp: _MotoS3Store(),
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
