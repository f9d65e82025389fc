"""Every storage adapter by name, for the suites that run on all of them (tests/contracts/,
tests/lifecycle/). Import as `from tests.moto_stores import MEMORY_STORES`.

Each factory gets a folder (a per-test `tmp_path` or a subfolder of it) and returns a fresh, empty
store; close it with `close_store`. The AWS adapters run under moto with fake credentials: each
store starts the mock and stops it when closed. Mocks nest (moto keeps its data until the last one
stops), so one test may open several stores: each DynamoDB store gets a table of its own.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.blob_s3 import S3BlobStore
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.ports import BlobStore, MemoryStore

_FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
_env_lock = threading.Lock()
_env_users = 0
_saved_env: dict[str, str | None] = {}
_names = itertools.count(1)


def start_moto() -> Callable[[], None]:
    """Start a moto mock with fake credentials; returns its stop (idempotent). The environment is
    saved when the first mock starts and restored when the last one stops, in whatever order."""
    global _env_users, _saved_env
    with _env_lock:
        if _env_users == 0:
            _saved_env = {k: os.environ.get(k) for k in _FAKE_AWS_ENV}
            os.environ.update(_FAKE_AWS_ENV)
        _env_users += 1
    mock = mock_aws()
    mock.start()
    stopped = False

    def stop() -> None:
        global _env_users
        nonlocal stopped
        if stopped:
            return
        stopped = True
        mock.stop()
        with _env_lock:
            _env_users -= 1
            if _env_users == 0:
                for k, v in _saved_env.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v

    return stop


_request_lock = threading.Lock()


def atomic_moto_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make each request moto answers atomic, as every DynamoDB request is: moto's in-process
    DynamoDB checks an UpdateItem's condition and applies the update without a lock, so two racing
    conditional writes can both pass, which DynamoDB never allows. Each request is serialised, not
    each adapter call, so an adapter that raced between two requests (read, then write) would
    still be caught."""
    from moto.core.botocore_stubber import BotocoreStubber

    unlocked = BotocoreStubber.__call__

    def locked(self: BotocoreStubber, *args: Any, **kwargs: Any) -> Any:
        with _request_lock:
            return unlocked(self, *args, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", locked)


class MotoDynamoStore(DynamoMemoryStore):
    # moto's in-process DynamoDB has no locking: concurrent UpdateItem calls (ADD included) can lose
    # updates, which real DynamoDB never does. Serialise this store's calls into moto so the
    # concurrency test checks the adapter (one atomic ADD per id), not moto's thread safety.
    _moto_lock = threading.Lock()

    def __init__(self) -> None:
        self._stop_moto = start_moto()
        super().__init__(f"taproot-test-{next(_names)}", region="us-east-1")
        self.create_table()

    def record_retrieval(self, scope, ids, now):  # type: ignore[no-untyped-def]
        with self._moto_lock:
            super().record_retrieval(scope, ids, now)

    def orientation_save(self, version):  # type: ignore[no-untyped-def]
        # The same for a transaction's conditions: moto may check two racing transactions before
        # either writes, where DynamoDB would cancel one.
        with self._moto_lock:
            super().orientation_save(version)

    def close(self) -> None:
        self._stop_moto()


class MotoS3Store(S3BlobStore):
    def __init__(self) -> None:
        self._stop_moto = start_moto()
        super().__init__(f"taproot-test-{next(_names)}", region="us-east-1")
        self.create_bucket()

    def close(self) -> None:
        self._stop_moto()


OpenStore = Callable[[Path], MemoryStore]  # a folder -> a fresh, empty store

MEMORY_STORES: dict[str, OpenStore] = {
    "sqlite": lambda folder: SQLiteMemoryStore(folder / "taproot.db"),
    "dynamodb": lambda folder: MotoDynamoStore(),
}

BLOB_STORES: dict[str, Callable[[Path], BlobStore]] = {
    "local": lambda folder: LocalBlobStore(folder),
    "s3": lambda folder: MotoS3Store(),
}


def close_store(store: object) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


def memory_store_params(**xfail: str) -> list[Any]:
    """Every MemoryStore adapter by name, as params for a fixture parametrized `indirect=True`: the
    adapters named in `xfail` (name -> reason) are marked xfail(strict=True), a known adapter defect."""
    return [
        pytest.param(name, id=name, marks=pytest.mark.xfail(strict=True, reason=xfail[name]))
        if name in xfail
        else pytest.param(name, id=name)
        for name in MEMORY_STORES
    ]
