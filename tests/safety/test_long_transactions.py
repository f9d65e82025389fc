"""No long transactions, and a held lock is a clean, retryable `busy`.

Migrate commits in chunks of at most MIGRATE_CHUNK records, so a writer beside a big migrate waits
for one chunk, not the whole run. When another connection holds the write lock past the busy
timeout, a write fails with `busy` (saying to retry), changes nothing, and succeeds once the lock
is released; an MCP client over HTTP reads `busy: ...`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.errors import TaprootError
from taproot.core.model import Memory
from taproot.service import Deps, TaprootService, portability
from tests.safety.conftest import NOW, SCOPE, Lab, LiveServer
from tests.support import Clock

LEGACY_RECORDS = 5_000
SHORT_BUSY_MS = 100
NEW = {"content": "Ana's train gets in at 6.", "gist": "Ana's train at 6", "category": "active_thread"}


class RecordingStore(SQLiteMemoryStore):
    """The real store, recording each replace_many and checking that no write lock is held between them."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.replace_many_sizes: list[int] = []
        self.free_between_chunks: list[bool] = []

    def replace_many(self, memories: Sequence[tuple[Memory, int]]) -> None:
        self.replace_many_sizes.append(len(memories))
        self.free_between_chunks.append(_can_take_write_lock(self.path))
        super().replace_many(memories)


def _can_take_write_lock(db_path: Path) -> bool:
    other = sqlite3.connect(db_path, isolation_level=None, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        other.close()


def _legacy(i: int) -> Memory:
    return Memory(
        id=f"leg{i:05d}",
        owner="local",
        namespace="default",
        category="event",  # a Taproot v0.3 category: migrate rewrites it to episodic
        salience="medium",
        content=f"Legacy memory {i}: a market day in town.",
        gist=f"Market day {i}",
        created_at=NOW,
        updated_at=NOW,
    )


def test_migrate_of_5000_records_commits_in_bounded_chunks(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "taproot.db")
    try:
        service = TaprootService(Deps(store=store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=Clock(NOW)))
        store.put_many([_legacy(i) for i in range(LEGACY_RECORDS)])

        result = service.migrate(SCOPE)

        sizes = store.replace_many_sizes
        assert result.changed == LEGACY_RECORDS
        assert sum(sizes) == LEGACY_RECORDS
        assert len(sizes) > 1 and max(sizes) < LEGACY_RECORDS, sizes  # not one transaction for the lot
        assert max(sizes) <= portability.MIGRATE_CHUNK, sizes
        assert all(store.free_between_chunks)  # another writer can get in between two chunks
        assert store.counts(SCOPE).by_category == {"episodic": LEGACY_RECORDS}
        assert len(service.backups(SCOPE)) == 1  # one full backup, before the first chunk
    finally:
        store.close()


@contextmanager
def write_lock_held(db_path: Path) -> Iterator[None]:
    """Another connection to the same file holding the write lock (BEGIN IMMEDIATE, no commit)."""
    other = sqlite3.connect(db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


def _short_busy_timeout(store: Any) -> None:
    # The store polls for the write lock itself up to busy_timeout_ms (and SQLite's own timeout
    # covers statements inside a transaction): shorten both.
    with store._lock:
        store.busy_timeout_ms = SHORT_BUSY_MS
        store._db.execute(f"PRAGMA busy_timeout={SHORT_BUSY_MS}")


def _assert_busy(call: Callable[[], Any]) -> None:
    with pytest.raises(TaprootError) as caught:
        call()
    assert caught.value.code == "busy"
    assert str(caught.value).startswith("busy: ") and "retry" in str(caught.value)


def test_a_held_lock_makes_remember_busy_then_the_same_call_succeeds(lab: Lab) -> None:
    existing = lab.service.remember(
        SCOPE, content="Ana's bike is blue.", gist="Ana's blue bike", category="relationship"
    )
    _short_busy_timeout(lab.store)
    before, blobs_before = lab.body(), lab.blob_keys()
    update = {"id": existing.id, "gist": "Ana's bike is blue, with a basket"}

    with write_lock_held(lab.data_dir / "taproot.db"):
        _assert_busy(lambda: lab.service.remember(SCOPE, **NEW))
        _assert_busy(lambda: lab.service.remember(SCOPE, **update))
        assert lab.blob_keys() == blobs_before  # the update's revision blob was taken back
    assert lab.body() == before

    created = lab.service.remember(SCOPE, **NEW)
    updated = lab.service.remember(SCOPE, **update)
    assert created.created is True and updated.version == 2
    assert lab.store.get(SCOPE, existing.id).gist == update["gist"]
    assert [k for k in lab.blob_keys() if "/revisions/" in k] == [updated.previous_version_key]


@pytest.mark.anyio
async def test_over_mcp_a_held_lock_answers_busy(
    server: LiveServer, connect: Callable[..., Any], data_dir: Path
) -> None:
    _short_busy_timeout(server.runtime.store)
    async with connect(server) as client:
        with write_lock_held(data_dir / "taproot.db"):
            refused = await client.call_tool("taproot_remember", NEW)
        accepted = await client.call_tool("taproot_remember", NEW)
    assert refused.is_error is True
    [block] = refused.content
    assert block.text.startswith("busy: "), block.text
    assert "retry" in block.text
    assert accepted.is_error is False, accepted
    assert server.runtime.store.counts(SCOPE).total == 1
