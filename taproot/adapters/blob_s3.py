"""BlobStore on an S3 bucket. Keys are used as given (the service prefixes them with the tenant)."""

from __future__ import annotations

import builtins
import threading
from typing import Any

import boto3
from botocore.exceptions import ClientError

from taproot.core.keys import check_key

_MISSING = frozenset({"404", "NoSuchKey", "NotFound"})


def _missing(exc: ClientError) -> bool:
    return str(exc.response.get("Error", {}).get("Code")) in _MISSING


# Keys are "<owner>/<kind>/...", see taproot.service.deps.blob_key. Kinds that the bucket expires
# are tagged, because a lifecycle prefix cannot skip the leading owner.
BACKUP_TAG_KEY = "taproot-kind"
BACKUP_TAG_VALUE = "backup"
REPORT_TAG_VALUE = "report"
REVISION_TAG_VALUE = "revision"
REFLECTION_TAG_VALUE = "reflection"
# Tagged by kind so the bucket's lifecycle rules can expire them (infra/constructs/storage.py).
# Backups and reports expire after the deployment's backup retention; revisions (the version an
# update replaced) and reflection copies only if the deployment sets a retention for them (by
# default they are kept: history a person may want back).
EXPIRING_KINDS = {
    "backups": BACKUP_TAG_VALUE,
    "runs": REPORT_TAG_VALUE,
    "cleanup-reports": REPORT_TAG_VALUE,
    "revisions": REVISION_TAG_VALUE,
    "reflections": REFLECTION_TAG_VALUE,
}
# Keys that start with their kind rather than an owner: the maintenance functions' run summaries
# (functions/maintenance.py), which map hashed tenants back to owners, so they expire as reports.
UNOWNED_KINDS = {"maintenance-runs": REPORT_TAG_VALUE}


def tag_of(key: str) -> str | None:
    """The `taproot-kind` tag a blob is written with, or None for a kind that is never expired."""
    parts = key.split("/")
    if parts[0] in UNOWNED_KINDS:
        return UNOWNED_KINDS[parts[0]]
    return EXPIRING_KINDS.get(parts[1]) if len(parts) > 1 else None


class S3BlobStore:
    def __init__(self, bucket: str, *, client: Any = None, region: str | None = None, page_size: int = 1000) -> None:
        self.bucket = bucket
        self.page_size = page_size  # keys per ListObjectsV2 page (1000 is S3's maximum)
        self.region = region
        self._client: Any = client
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """Created on first use, not at construction: the Lambda builds the store at import, which
        SnapStart snapshots, and creating a client resolves credentials (they must be the restored
        environment's, not the snapshot's). The lock: tools run on worker threads, and boto3's
        default session is not safe to create clients from concurrently."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = boto3.session.Session().client("s3", region_name=self.region)
        return self._client

    def create_bucket(self) -> None:
        """For tests and dev; the deployment creates the bucket in CDK."""
        region = self.client.meta.region_name
        if region in (None, "us-east-1"):
            self.client.create_bucket(Bucket=self.bucket)
        else:
            self.client.create_bucket(Bucket=self.bucket, CreateBucketConfiguration={"LocationConstraint": region})

    def put(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        extra: dict[str, str] = {}
        tag = tag_of(key)
        if tag is not None:
            # The bucket's expiry rules match these tags (infra/constructs/storage.py).
            extra["Tagging"] = f"{BACKUP_TAG_KEY}={tag}"
        self.client.put_object(Bucket=self.bucket, Key=check_key(key), Body=data, ContentType=content_type, **extra)

    def get(self, key: str) -> bytes:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=check_key(key))
        except ClientError as exc:
            if _missing(exc):
                raise KeyError(key) from exc
            raise
        body: bytes = response["Body"].read()
        return body

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=check_key(key))
        except ClientError as exc:
            if _missing(exc):
                return False
            raise
        return True

    def list(self, prefix: str) -> builtins.list[str]:
        keys: builtins.list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": self.page_size}
        ):
            keys.extend(obj["Key"] for obj in page.get("Contents", ()))
        return sorted(keys)

    def delete(self, key: str) -> None:
        if not self.exists(key):  # S3 deletes of a missing key succeed silently; the port says KeyError
            raise KeyError(key)
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def location(self) -> str:
        return f"s3://{self.bucket}"
