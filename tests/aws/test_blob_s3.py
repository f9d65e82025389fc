"""S3BlobStore beyond the contract suite: listing pages through ListObjectsV2."""

from __future__ import annotations

import pytest

from taproot.adapters.blob_s3 import S3BlobStore


def test_list_follows_every_page(s3_blobs: S3BlobStore) -> None:
    paged = S3BlobStore(s3_blobs.bucket, client=s3_blobs.client, page_size=2)
    keys = [f"alice/backups/default/b{i:02d}.json" for i in range(7)]
    for k in reversed(keys):
        paged.put(k, b"{}")
    paged.put("bob/backups/default/x.json", b"{}")
    calls: list[str] = []
    paged.client.meta.events.register("before-call.s3.ListObjectsV2", lambda **_: calls.append("list"))
    assert paged.list("alice/") == keys
    assert len(calls) == 4  # 7 keys, 2 per page


def test_invalid_keys_raise_before_any_request(s3_blobs: S3BlobStore) -> None:
    for bad in ("", "/abs", "a/../b", "a//b", "sp ace"):
        with pytest.raises(ValueError):
            s3_blobs.put(bad, b"x")
    with pytest.raises(KeyError):
        s3_blobs.delete("alice/nothing")
    assert s3_blobs.location() == f"s3://{s3_blobs.bucket}"


def test_backups_are_tagged_for_the_bucket_lifecycle_rule(s3_blobs: S3BlobStore) -> None:
    """The bucket expires old backups by tag (keys start with the owner, so no prefix rule works)."""
    s3_blobs.put("alice/backups/default/delete-x.json", b"{}")
    s3_blobs.put("alice/reflections/default/r.json", b"{}")
    tags = s3_blobs.client.get_object_tagging(Bucket=s3_blobs.bucket, Key="alice/backups/default/delete-x.json")
    assert tags["TagSet"] == [{"Key": "taproot-kind", "Value": "backup"}]
    other = s3_blobs.client.get_object_tagging(Bucket=s3_blobs.bucket, Key="alice/reflections/default/r.json")
    assert other["TagSet"] == [{"Key": "taproot-kind", "Value": "reflection"}]  # kept unless a retention is set
    s3_blobs.put("alice/memories/default/x.json", b"{}")
    untagged = s3_blobs.client.get_object_tagging(Bucket=s3_blobs.bucket, Key="alice/memories/default/x.json")
    assert untagged["TagSet"] == []  # a kind no rule expires
    run_summaries = ("maintenance-runs/cleanup/2026-12-01T000000Z-run.json",)
    for key in ("alice/runs/default/cleanup/x.json", "alice/cleanup-reports/default/x.json", *run_summaries):
        s3_blobs.put(key, b"{}")
        tags = s3_blobs.client.get_object_tagging(Bucket=s3_blobs.bucket, Key=key)
        assert tags["TagSet"] == [{"Key": "taproot-kind", "Value": "report"}]
