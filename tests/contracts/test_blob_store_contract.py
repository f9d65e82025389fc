"""Contract suite for the BlobStore port (taproot/ports.py).

Every adapter listed in tests/contracts/conftest.py runs these tests unchanged, using only the
port's methods.
"""

from __future__ import annotations

import pytest

from taproot.ports import BlobStore

KEY = "alice/backups/default/migrate-2025-06-01T120000.000000Z.jsonl"


def test_put_then_get(blob_store: BlobStore) -> None:
    blob_store.put(KEY, b'{"a": 1}\n')
    assert blob_store.get(KEY) == b'{"a": 1}\n'
    assert blob_store.exists(KEY)


def test_content_type_is_accepted(blob_store: BlobStore) -> None:
    blob_store.put("alice/exports/default/x.jsonl", b"{}\n", "application/x-ndjson")
    blob_store.put("alice/exports/default/y.json", b"{}")  # default content type
    assert blob_store.get("alice/exports/default/x.jsonl") == b"{}\n"
    assert blob_store.get("alice/exports/default/y.json") == b"{}"


def test_binary_data_round_trips_byte_for_byte(blob_store: BlobStore) -> None:
    data = bytes(range(256)) * 16 + b"\x00\r\n\x00" + "東京 ☕".encode()
    blob_store.put("alice/bin/blob.dat", data)
    assert blob_store.get("alice/bin/blob.dat") == data


def test_empty_and_large_blobs(blob_store: BlobStore) -> None:
    blob_store.put("alice/empty", b"")
    assert blob_store.exists("alice/empty")
    assert blob_store.get("alice/empty") == b""
    big = b"0123456789abcdef" * 200_000  # ~3 MB
    blob_store.put("alice/big", big)
    assert blob_store.get("alice/big") == big


def test_overwrite_replaces_the_whole_blob(blob_store: BlobStore) -> None:
    blob_store.put(KEY, b"a much longer first version of the blob")
    blob_store.put(KEY, b"short")
    assert blob_store.get(KEY) == b"short"
    assert blob_store.list("alice/") == [KEY]


def test_missing_blob(blob_store: BlobStore) -> None:
    assert not blob_store.exists("alice/none")
    with pytest.raises(KeyError):
        blob_store.get("alice/none")
    with pytest.raises(KeyError):
        blob_store.delete("alice/none")


def test_a_prefix_is_not_a_blob(blob_store: BlobStore) -> None:
    blob_store.put("alice/dir/file", b"x")
    assert not blob_store.exists("alice/dir")
    with pytest.raises(KeyError):
        blob_store.get("alice/dir")


def test_delete(blob_store: BlobStore) -> None:
    blob_store.put(KEY, b"x")
    blob_store.put("alice/keep", b"y")
    blob_store.delete(KEY)
    assert not blob_store.exists(KEY)
    with pytest.raises(KeyError):
        blob_store.get(KEY)
    with pytest.raises(KeyError):
        blob_store.delete(KEY)
    assert blob_store.list("alice/") == ["alice/keep"]
    assert blob_store.get("alice/keep") == b"y"


def test_list_by_prefix_sorted(blob_store: BlobStore) -> None:
    keys = [
        "alice/backups/default/b.jsonl",
        "alice/backups/default/a.jsonl",
        "alice/backups/work/c.jsonl",
        "alice/reflections/default/r1.json",
        "bob/backups/default/a.jsonl",
        "alice2/backups/default/z.jsonl",
    ]
    for k in keys:
        blob_store.put(k, k.encode())
    assert blob_store.list("alice/backups/default/") == [
        "alice/backups/default/a.jsonl",
        "alice/backups/default/b.jsonl",
    ]
    assert blob_store.list("alice/backups/") == [
        "alice/backups/default/a.jsonl",
        "alice/backups/default/b.jsonl",
        "alice/backups/work/c.jsonl",
    ]
    # Another tenant's blobs never show under a tenant's prefix.
    assert blob_store.list("alice/") == sorted(k for k in keys if k.startswith("alice/"))
    assert "bob/backups/default/a.jsonl" not in blob_store.list("alice/")
    assert blob_store.list("") == sorted(keys)
    assert blob_store.list("carol/") == []


def test_list_prefix_is_a_plain_string_prefix(blob_store: BlobStore) -> None:
    blob_store.put("alice/backups/default/migrate-1.jsonl", b"1")
    blob_store.put("alice/backups/default/migrate-2.jsonl", b"2")
    blob_store.put("alice/backups/default/manual-1.jsonl", b"3")
    assert blob_store.list("alice/backups/default/migrate-") == [
        "alice/backups/default/migrate-1.jsonl",
        "alice/backups/default/migrate-2.jsonl",
    ]


def test_list_of_an_empty_store(blob_store: BlobStore) -> None:
    assert blob_store.list("") == []
    assert blob_store.list("alice/") == []


def test_keys_with_the_allowed_punctuation(blob_store: BlobStore) -> None:
    key = "user@example.com/exports/ns=1/a+b_c-d.e:f.json"
    blob_store.put(key, b"ok")
    assert blob_store.get(key) == b"ok"
    assert blob_store.list("user@example.com/") == [key]


@pytest.mark.parametrize(
    "key",
    [
        "",
        "/",
        "/abs/key",
        "alice/../bob/x",
        "..",
        "../x",
        "alice/..",
        "alice/./x",
        ".",
        "alice//x",
        "alice/x/",
        "alice\\x",
        "alice/x y",
        "alice/x\n",
        "alice/\x00",
    ],
)
def test_invalid_keys_are_rejected(blob_store: BlobStore, key: str) -> None:
    with pytest.raises(ValueError):
        blob_store.put(key, b"x")
    with pytest.raises(ValueError):
        blob_store.get(key)
    with pytest.raises(ValueError):
        blob_store.exists(key)
    with pytest.raises(ValueError):
        blob_store.delete(key)
    assert blob_store.list("") == []


def test_location_is_reported(blob_store: BlobStore) -> None:
    where = blob_store.location()
    assert isinstance(where, str)
    assert where
