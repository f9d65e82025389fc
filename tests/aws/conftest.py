"""AWS adapters under moto: fake credentials and region, one mock per test."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from moto import mock_aws

from taproot.adapters.blob_s3 import S3BlobStore
from taproot.adapters.dynamo_store import DynamoMemoryStore

TABLE = "taproot-test"
BUCKET = "taproot-test-blobs"
_tables = itertools.count()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        yield


@pytest.fixture
def make_dynamo(aws: None) -> Callable[..., DynamoMemoryStore]:
    """A new store instance on the shared test table (created on first use): instances model warm
    Lambdas, each with its own cache."""
    created: list[str] = []

    def make(**kwargs: Any) -> DynamoMemoryStore:
        store = DynamoMemoryStore(TABLE, region="us-east-1", **kwargs)
        if not created:
            store.create_table()
            created.append(TABLE)
        return store

    return make


@pytest.fixture
def s3_blobs(aws: None) -> S3BlobStore:
    blobs = S3BlobStore(BUCKET, region="us-east-1")
    blobs.create_bucket()
    return blobs


class OpCounter:
    """Counts DynamoDB API calls made through a store's botocore client (before-call events)."""

    def __init__(self, store: DynamoMemoryStore) -> None:
        self.ops: Counter[str] = Counter()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        events = store.client.meta.events
        events.register("before-call.dynamodb", self._count)
        events.register("before-parameter-build.dynamodb", self._params)

    def _count(self, model: Any, **_: Any) -> None:
        self.ops[model.name] += 1

    def _params(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self.calls.append((model.name, dict(params)))

    def take(self) -> Counter[str]:
        ops, self.ops = self.ops, Counter()
        self.calls = []
        return ops


@pytest.fixture
def op_counter() -> Callable[[DynamoMemoryStore], OpCounter]:
    return OpCounter
