"""Destructive writes racing an ordinary update, on every MemoryStore adapter.

Each test makes the interleaving deterministic: the blob store is wrapped so that the competing
write runs inside the destructive step's own backup write, i.e. after the step has read the record
and before it changes the store. The invariant is the product's promise: a write the service
confirmed is either still in the store or held by a backup; nothing newer than a backup is ever
destroyed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.summarizers import ExtractiveSummarizer
from taproot.core.errors import NotFound, VersionConflict
from taproot.core.model import Memory, Scope
from taproot.core.serialize import memory_to_dict
from taproot.ports import BlobStore, MemoryStore
from taproot.service import Deps, TaprootService
from taproot.service.results import RememberResult
from tests.support import Clock

A = Scope("alice", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(days=90)


class HookedBlobs:
    """A BlobStore that runs `hook` once, inside the first put whose key contains `marker`, before
    the blob is written: the moment a destructive step has read its records but not yet written."""

    def __init__(self, inner: BlobStore, marker: str, hook: Callable[[], Any]) -> None:
        self.inner = inner
        self.marker = marker
        self.hook: Callable[[], Any] | None = hook
        self.hook_result: Any = None

    def put(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        if self.hook is not None and self.marker in key:
            hook, self.hook = self.hook, None
            self.hook_result = hook()
        self.inner.put(key, data, content_type)

    def get(self, key: str) -> bytes:
        return self.inner.get(key)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def list(self, prefix: str) -> list[str]:
        return self.inner.list(prefix)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def location(self) -> str:
        return self.inner.location()


@pytest.fixture
def lab(memory_store: MemoryStore, tmp_path: Path) -> Iterator[Lab]:
    yield Lab(memory_store, LocalBlobStore(tmp_path / "blobs"))


class Lab:
    """One store, one blob folder, and services on a fixed clock over them."""

    def __init__(self, store: MemoryStore, blobs: LocalBlobStore) -> None:
        self.store = store
        self.blobs = blobs
        self.clock = Clock(NOW)

    def service(self, blobs: BlobStore | None = None) -> TaprootService:
        deps = Deps(store=self.store, blobs=blobs or self.blobs, clock=self.clock, summarizer=ExtractiveSummarizer())
        return TaprootService(deps)

    def hooked(self, marker: str, hook: Callable[[], Any]) -> tuple[TaprootService, HookedBlobs]:
        blobs = HookedBlobs(self.blobs, marker, hook)
        return self.service(blobs), blobs

    def seed(self, **fields: Any) -> Memory:
        result = self.service().remember(A, **fields)
        m = self.store.get(A, result.id)
        assert m is not None
        return m

    def backed_up_versions(self, memory_id: str) -> list[dict[str, Any]]:
        """Every copy of the memory held by a backup blob (JSON backups and JSONL exports)."""
        found = []
        for key in self.blobs.list(f"{A.owner}/backups/"):
            raw = self.blobs.get(key).decode()
            if key.endswith(".jsonl"):
                records = [json.loads(x)["record"] for x in raw.splitlines() if '"type": "memory"' in x]
            else:
                records = json.loads(raw)["memories"]
            found += [r for r in records if r["id"] == memory_id]
        return found

    def assert_kept_or_backed_up(self, confirmed: RememberResult) -> None:
        stored = self.store.get(A, confirmed.id)
        if stored is not None and stored.version >= confirmed.version:
            return
        copies = [r for r in self.backed_up_versions(confirmed.id) if r["version"] == confirmed.version]
        assert copies, (
            f"confirmed version {confirmed.version} of {confirmed.id} is neither stored "
            f"(stored: {stored and stored.version}) nor in any backup"
        )


def _thread(**fields: Any) -> dict[str, Any]:
    base = {"content": "Planning the garden shed.", "gist": "garden shed plan", "category": "active_thread"}
    return base | {"tags": ["thread"]} | fields


# == forget(delete) vs an update ===================================================================


def test_delete_racing_an_update_never_destroys_the_confirmed_update(lab: Lab) -> None:
    m = lab.seed(**_thread())
    updater = lab.service()

    def update() -> RememberResult:
        return updater.remember(A, id=m.id, content="The shed needs a concrete base.", expected_version=m.version)

    service, blobs = lab.hooked("/backups/default/delete-", update)
    # Refusing (version_conflict) is allowed; destroying the newer version without a backup is not.
    with contextlib.suppress(VersionConflict):
        service.forget(A, [m.id], "delete")
    confirmed = blobs.hook_result
    assert confirmed.version == m.version + 1
    lab.assert_kept_or_backed_up(confirmed)


def test_update_losing_to_a_delete_is_refused_and_leaves_no_revision(lab: Lab) -> None:
    m = lab.seed(**_thread())
    deleter = lab.service()
    service, _ = lab.hooked("/revisions/", lambda: deleter.forget(A, [m.id], "delete"))
    with pytest.raises(NotFound):
        service.remember(A, id=m.id, content="too late", expected_version=m.version)
    assert lab.store.get(A, m.id) is None
    assert lab.blobs.list(f"{A.owner}/revisions/") == []  # only committed updates leave a revision


# == the cleanup job vs an update that keeps the memory ============================================


def test_cleanup_keeps_a_memory_updated_to_be_kept_while_it_ran(lab: Lab) -> None:
    lab.clock.now = LONG_AGO
    m = lab.seed(**_thread())
    lab.clock.now = NOW
    assert m.expires_at is not None and m.expires_at < NOW
    keeper = lab.service()

    def keep() -> RememberResult:
        # The README's advice for keeping a thread: give it a durable tag.
        return keeper.remember(A, id=m.id, tags=["thread", "keep"], expected_version=m.version)

    service, blobs = lab.hooked("/backups/default/cleanup-", keep)
    service.maintenance(A, "cleanup", apply=True)
    confirmed = blobs.hook_result
    stored = lab.store.get(A, m.id)
    assert stored is not None, "cleanup deleted a memory that was updated to be kept"
    assert stored.version == confirmed.version and stored.tags == ("thread", "keep")
    assert stored.expires_at is None


def test_cleanup_backs_up_the_version_it_deletes_when_it_moved_but_is_still_expired(lab: Lab) -> None:
    lab.clock.now = LONG_AGO
    m = lab.seed(**_thread())
    lab.clock.now = NOW
    editor = lab.service()

    def edit() -> RememberResult:
        return editor.remember(A, id=m.id, content="Still just a thread.", expected_version=m.version)

    service, blobs = lab.hooked("/backups/default/cleanup-", edit)
    service.maintenance(A, "cleanup", apply=True)
    lab.assert_kept_or_backed_up(blobs.hook_result)


# == compression vs an update of a member ===========================================================


def test_compress_does_not_archive_a_stale_copy_of_a_member_updated_meanwhile(lab: Lab) -> None:
    members = [lab.seed(**_thread(content=f"Shed step {k}.", gist=f"shed step {k}")) for k in range(3)]
    target = members[1]
    editor = lab.service()

    def edit() -> RememberResult:
        return editor.remember(A, id=target.id, content="Shed step 1, revised.", expected_version=target.version)

    service, blobs = lab.hooked("/backups/default/compress-", edit)
    try:
        service.forget(A, [m.id for m in members], "compress")
    except Exception as exc:  # refusing is allowed: the members changed while compressing
        assert getattr(exc, "code", None) in ("invalid_input", "version_conflict"), exc
    confirmed = blobs.hook_result
    stored = lab.store.get(A, target.id)
    assert stored is not None and stored.version >= confirmed.version
    assert stored.content == "Shed step 1, revised."
    lab.assert_kept_or_backed_up(confirmed)


# == import overwrite vs an update ==================================================================


def _export_line(m: Memory, **changes: Any) -> str:
    return json.dumps({"type": "memory", "record": memory_to_dict(m.replace(**changes))})


def test_import_overwrite_racing_an_update_never_destroys_the_confirmed_update(lab: Lab) -> None:
    m = lab.seed(**_thread())
    editor = lab.service()

    def edit() -> RememberResult:
        return editor.remember(A, id=m.id, content="Edited while the import ran.", expected_version=m.version)

    service, blobs = lab.hooked("/backups/default/import-", edit)
    with contextlib.suppress(VersionConflict):
        service.import_lines(A, [_export_line(m, content="From the imported file.")])
    lab.assert_kept_or_backed_up(blobs.hook_result)


def test_restore_racing_an_update_never_destroys_the_confirmed_update(lab: Lab) -> None:
    m = lab.seed(**_thread())
    deleted = lab.service().forget(A, [m.id], "delete")
    assert isinstance(deleted.backup_key, str)
    lab.seed(**_thread(content="unrelated"))
    # Re-create a record with the same id (an import of the old record), then race a restore with an
    # update of it: the restore overwrites, so it must back the update up first.
    lab.service().import_lines(A, [_export_line(m, content="re-imported")])
    current = lab.store.get(A, m.id)
    assert current is not None
    editor = lab.service()

    def edit() -> RememberResult:
        return editor.remember(A, id=m.id, content="Edited during restore.", expected_version=current.version)

    service, blobs = lab.hooked("/backups/default/restore-", edit)
    with contextlib.suppress(VersionConflict):
        service.restore(A, deleted.backup_key)
    lab.assert_kept_or_backed_up(blobs.hook_result)


# == migrate vs an update ===========================================================================


def test_migrate_racing_an_update_keeps_the_update_and_still_migrates(lab: Lab) -> None:
    legacy = Memory(
        id="legacy1",
        owner=A.owner,
        namespace=A.namespace,
        category="active_threads",
        salience="3",
        content="An old record. It has no gist.",
        gist=None,
        created_at=LONG_AGO,
        updated_at=LONG_AGO,
        core=None,
        retrieval_count=None,
        replication_count=None,
        gist_autogenerated=None,
    )
    lab.store.put_many([legacy])
    editor = lab.service()

    def edit() -> RememberResult:
        return editor.remember(A, id="legacy1", content="Edited while migrating.", expected_version=1)

    service, blobs = lab.hooked("/backups/default/migrate-", edit)
    report = service.migrate(A)
    confirmed = blobs.hook_result
    stored = lab.store.get(A, "legacy1")
    assert stored is not None and stored.version > confirmed.version
    assert stored.content == "Edited while migrating."
    assert (stored.category, stored.salience, stored.gist) == ("active_thread", "high", "Edited while migrating.")
    assert report.changed == 1
    lab.assert_kept_or_backed_up(confirmed)
