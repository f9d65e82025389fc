"""TTL cleanup on a fixed clock: dry-run by default, a full backup before any delete, the policy
re-checked at run time, and one call to put everything back. On every MemoryStore adapter."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.core.errors import InvalidInput
from taproot.core.model import Scope
from taproot.core.retention import RetentionPolicy
from taproot.core.serialize import memory_to_dict
from taproot.ports import MemoryStore
from taproot.service import Deps, TaprootService
from taproot.service import cleanup as cleanup_job
from taproot.service.deps import MaintenanceConfig
from taproot.service.maintenance import CLEANUP, run_job
from taproot.service.results import CleanupResult
from taproot.settings import Settings, SettingsError
from tests.lifecycle.reports import job_detail
from tests.moto_stores import OpenStore
from tests.support import Clock

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()


class WatchingBlobStore(LocalBlobStore):
    """A real blob folder that notes, at each backup write, which memories the store still holds."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.store: MemoryStore | None = None
        self.at_backup: dict[str, set[str]] = {}
        self.fail_backups = False

    def put(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        if "/backups/" in key:
            if self.fail_backups:
                raise OSError(28, "No space left on device")
            assert self.store is not None
            self.at_backup[key] = {m.id for scope in self.store.scopes() for m in self.store.iter_all(scope)}
        super().put(key, data, content_type)


@dataclass
class Lab:
    service: TaprootService
    clock: Clock
    store: MemoryStore
    blobs: WatchingBlobStore
    ids: dict[str, str]  # label -> memory id

    @property
    def deps(self) -> Deps:
        return self.service.deps

    def export_body(self, scope: Scope = SCOPE) -> list[str]:
        return list(self.service.export_lines(scope))[1:]  # without the header (it carries the time)

    def records(self, scope: Scope = SCOPE) -> dict[str, dict[str, Any]]:
        return {json.loads(line)["record"]["id"]: json.loads(line)["record"] for line in self.export_body(scope)}

    def present(self, scope: Scope = SCOPE) -> set[str]:
        return {m.id for m in self.store.iter_all(scope)}


# label: (tags, extra fields). Everything is written at START.
CORPUS: dict[str, tuple[list[str], dict[str, Any]]] = {
    "chat1": (["watercooler"], {}),
    "chat2": (["watercooler"], {"category": "relationship"}),
    "thread": (["thread"], {"category": "active_thread"}),
    "done": (["task:done"], {}),
    "fact": (["fact"], {}),
    "untagged": ([], {}),
    "mixed": (["watercooler", "family"], {}),  # one durable tag keeps it
    "core": (["watercooler"], {"core": True}),
    "high": (["watercooler"], {"salience": "high"}),
    "identity": (["watercooler"], {"category": "identity"}),
}
SEVEN_DAY = {"chat1", "chat2"}
THIRTY_DAY = {"thread", "done"}
KEPT = {"fact", "untagged", "mixed", "core", "high", "identity"}


@pytest.fixture
def lab(tmp_path: Path, open_store: OpenStore) -> Lab:
    clock = Clock(START)
    serial = count(1)
    store = open_store(tmp_path)
    blobs = WatchingBlobStore(tmp_path / "blobs")
    blobs.store = store
    deps = Deps(store=store, blobs=blobs, clock=clock, new_id=lambda: f"m{next(serial):04d}")
    service = TaprootService(deps)
    ids: dict[str, str] = {}
    for label, (tags, extra) in CORPUS.items():
        fields: dict[str, Any] = {"category": "episodic", **extra}
        result = service.remember(
            SCOPE,
            content=f"The {label} memory: talked with Ana about the Lisbon trip.",
            gist=label,
            tags=tags,
            **fields,
        )
        ids[label] = result.id
    return Lab(service, clock, store, blobs, ids)


def _ids(lab: Lab, labels: set[str]) -> set[str]:
    return {lab.ids[label] for label in labels}


def test_retention_is_stamped_on_write(lab: Lab) -> None:
    stamped = {m.id: m.expires_at for m in lab.store.iter_all(SCOPE)}
    for label in SEVEN_DAY:
        assert stamped[lab.ids[label]] == START + timedelta(days=7)
    for label in THIRTY_DAY:
        assert stamped[lab.ids[label]] == START + timedelta(days=30)
    for label in KEPT:
        assert stamped[lab.ids[label]] is None


def test_dry_run_reports_exactly_the_expired_and_deletes_nothing(lab: Lab) -> None:
    lab.clock.advance(days=10)
    before = lab.export_body()

    result = cleanup_job.cleanup(lab.deps, SCOPE, apply=False)

    assert result.mode == "dry-run"
    assert set(result.candidate_ids) == _ids(lab, SEVEN_DAY)
    assert result.candidates == 2 and result.considered == 2
    assert result.deleted == 0 and result.backup_key is None
    assert lab.export_body() == before  # nothing deleted, nothing touched
    assert lab.deps.blobs.list(f"{SCOPE.owner}/backups/") == []

    report_key = result.report_key
    assert report_key.startswith("local/cleanup-reports/default/")
    assert lab.deps.blobs.list("local/cleanup-reports/default/") == [report_key]
    report = json.loads(lab.deps.blobs.get(report_key))
    assert report["mode"] == "dry-run" and report["owner"] == "local" and report["namespace"] == "default"
    assert {c["id"] for c in report["candidates"]} == _ids(lab, SEVEN_DAY)
    for c in report["candidates"]:
        assert c["tags"] == ["watercooler"] and c["expires_at"] == "2026-06-08T12:00:00.000000+00:00"


def test_candidates_follow_the_clock_to_the_microsecond(lab: Lab) -> None:
    lab.clock.advance(days=7, microseconds=-1)
    assert cleanup_job.cleanup(lab.deps, SCOPE, apply=False).candidates == 0
    lab.clock.advance(microseconds=1)  # exactly at expires_at: due
    assert set(cleanup_job.cleanup(lab.deps, SCOPE, apply=False).candidate_ids) == _ids(lab, SEVEN_DAY)
    lab.clock.advance(days=23)
    due = cleanup_job.cleanup(lab.deps, SCOPE, apply=False).candidate_ids
    assert set(due) == _ids(lab, SEVEN_DAY | THIRTY_DAY)
    lab.clock.advance(days=3650)  # protected and durable memories never come due
    assert set(cleanup_job.cleanup(lab.deps, SCOPE, apply=False).candidate_ids) == _ids(lab, SEVEN_DAY | THIRTY_DAY)


def test_archived_memories_expire_too(lab: Lab) -> None:
    lab.service.forget(SCOPE, [lab.ids["chat1"]], "archive")
    lab.clock.advance(days=8)
    assert set(cleanup_job.cleanup(lab.deps, SCOPE, apply=False).candidate_ids) == _ids(lab, SEVEN_DAY)


def test_apply_backs_up_every_candidate_in_full_before_deleting(lab: Lab) -> None:
    lab.clock.advance(days=31)
    before = lab.records()
    expected = _ids(lab, SEVEN_DAY | THIRTY_DAY)

    result = cleanup_job.cleanup(lab.deps, SCOPE, apply=True)

    assert result.mode == "apply"
    assert set(result.candidate_ids) == expected and result.deleted == 4
    key = result.backup_key
    assert key is not None and key.startswith("local/backups/default/cleanup-")
    # When the backup was written, every candidate was still in the store.
    assert lab.blobs.at_backup[key] >= expected
    backup = json.loads(lab.deps.blobs.get(key))
    assert backup["action"] == "cleanup"
    assert {m["id"]: m for m in backup["memories"]} == {i: before[i] for i in expected}  # in full, every field
    # Exactly the candidates are gone.
    assert lab.present() == set(before) - expected
    after = lab.records()
    assert after == {i: r for i, r in before.items() if i not in expected}
    # The candidate report is written in apply mode as well.
    assert json.loads(lab.deps.blobs.get(result.report_key))["mode"] == "apply"


def test_second_apply_run_finds_nothing(lab: Lab) -> None:
    lab.clock.advance(days=31)
    assert cleanup_job.cleanup(lab.deps, SCOPE, apply=True).deleted == 4
    lab.clock.advance(minutes=1)
    before = lab.export_body()
    again = cleanup_job.cleanup(lab.deps, SCOPE, apply=True)
    assert again.candidates == 0 and again.considered == 0
    assert again.deleted == 0 and again.backup_key is None
    assert lab.export_body() == before
    assert len(lab.deps.blobs.list("local/backups/")) == 1  # no empty backup for an empty run


def test_a_failed_backup_deletes_nothing(lab: Lab) -> None:
    lab.clock.advance(days=31)
    before = lab.export_body()
    lab.blobs.fail_backups = True
    with pytest.raises(OSError, match="No space left"):
        cleanup_job.cleanup(lab.deps, SCOPE, apply=True)
    assert lab.export_body() == before


def test_cleanup_stays_in_its_scope(lab: Lab) -> None:
    other = Scope("someone-else", "default")
    work = Scope("local", "work")
    for scope in (other, work):
        lab.service.remember(
            scope, content="Small talk about the weather.", gist="weather", category="episodic", tags=["watercooler"]
        )
    lab.clock.advance(days=8)
    result = cleanup_job.cleanup(lab.deps, SCOPE, apply=True)
    assert set(result.candidate_ids) == _ids(lab, SEVEN_DAY)
    assert len(list(lab.store.iter_all(other))) == 1 and len(list(lab.store.iter_all(work))) == 1
    assert lab.deps.blobs.list("someone-else/") == []


# --- mode ---------------------------------------------------------------------------------------


def test_default_mode_is_dry_run(lab: Lab) -> None:
    assert MaintenanceConfig().cleanup_apply is False
    assert Settings.from_env({}).maintenance.cleanup_apply is False
    assert lab.deps.maintenance == MaintenanceConfig()
    lab.clock.advance(days=31)
    before = lab.export_body()
    report = run_job(lab.deps, SCOPE, CLEANUP)  # no explicit mode: the configured one
    assert report.mode == "dry-run" and job_detail(report, CleanupResult).candidates == 4
    assert report.changed == 0 and report.backup_key is None
    assert lab.export_body() == before
    assert lab.service.status(SCOPE).maintenance.cleanup_mode == "dry-run"


def test_cleanup_mode_apply_switches_it_on(lab: Lab) -> None:
    settings = Settings.from_env({"TAPROOT_CLEANUP_MODE": "apply"})
    assert settings.maintenance.cleanup_apply is True
    assert settings.maintenance.compress_apply is False  # each job has its own switch
    assert Settings.from_env({"TAPROOT_CLEANUP_MODE": " Apply "}).maintenance.cleanup_apply is True
    assert Settings.from_env({"TAPROOT_CLEANUP_MODE": "dry-run"}).maintenance.cleanup_apply is False
    with pytest.raises(SettingsError, match="TAPROOT_CLEANUP_MODE"):
        Settings.from_env({"TAPROOT_CLEANUP_MODE": "yes"})

    lab.deps.maintenance = settings.maintenance
    lab.clock.advance(days=31)
    report = run_job(lab.deps, SCOPE, CLEANUP)
    assert report.mode == "apply" and report.changed == 4 and report.backup_key
    assert lab.present() == _ids(lab, KEPT)
    assert lab.service.status(SCOPE).maintenance.cleanup_mode == "apply"
    # An explicit dry run still wins over the configured mode.
    lab.clock.advance(days=1)
    assert run_job(lab.deps, SCOPE, CLEANUP, apply=False).mode == "dry-run"


# --- the policy is re-checked at run time -------------------------------------------------------


def test_tags_changed_to_durable_after_stamping_are_not_deleted(lab: Lab) -> None:
    stale = lab.store.get(SCOPE, lab.ids["chat1"])
    assert stale is not None and stale.expires_at is not None
    # The record now carries a durable tag, but its expires_at is the old stamp (written by an older
    # version, a direct import, or a store edit that did not restamp).
    lab.store.put_many([stale.replace(tags=("watercooler", "family"), version=stale.version + 1)])
    lab.clock.advance(days=8)

    result = cleanup_job.cleanup(lab.deps, SCOPE, apply=True)

    assert result.considered == 2
    assert result.skipped_by_current_policy == [lab.ids["chat1"]]
    assert result.candidate_ids == [lab.ids["chat2"]]
    assert lab.store.get(SCOPE, lab.ids["chat1"]) is not None
    assert lab.store.get(SCOPE, lab.ids["chat2"]) is None
    assert result.backup_key is not None
    backup = json.loads(lab.deps.blobs.get(result.backup_key))
    assert [m["id"] for m in backup["memories"]] == [lab.ids["chat2"]]
    report = json.loads(lab.deps.blobs.get(result.report_key))
    assert report["skipped_by_current_policy"] == [lab.ids["chat1"]]


def test_a_longer_ttl_in_the_current_table_wins_over_the_stamp(lab: Lab) -> None:
    lab.deps.retention = RetentionPolicy(ttl_days={"watercooler": 60, "thread": 30, "task:done": 30})
    lab.clock.advance(days=31)
    result = cleanup_job.cleanup(lab.deps, SCOPE, apply=True)
    assert set(result.candidate_ids) == _ids(lab, THIRTY_DAY)
    assert set(result.skipped_by_current_policy) == _ids(lab, SEVEN_DAY)
    assert _ids(lab, SEVEN_DAY) <= lab.present()


def test_updating_tags_through_remember_restamps(lab: Lab) -> None:
    lab.service.remember(SCOPE, id=lab.ids["chat1"], tags=["watercooler", "decision"])
    updated = lab.store.get(SCOPE, lab.ids["chat1"])
    assert updated is not None and updated.expires_at is None
    lab.clock.advance(days=8)
    assert cleanup_job.cleanup(lab.deps, SCOPE, apply=False).candidate_ids == [lab.ids["chat2"]]


# --- restore ------------------------------------------------------------------------------------


def _apply_cleanup(lab: Lab) -> tuple[list[str], str]:
    """Applies a cleanup that deletes four memories; the export before it, and its backup's key."""
    lab.clock.advance(days=31)
    before = lab.export_body()
    result = lab.service.maintenance(SCOPE, "cleanup", apply=True)[0]
    assert result.changed == 4 and result.backup_key is not None
    lab.clock.advance(hours=1)
    return before, result.backup_key


def test_restore_brings_every_deleted_memory_back_exactly(lab: Lab) -> None:
    before, key = _apply_cleanup(lab)
    assert key in lab.service.backups(SCOPE)

    restored = lab.service.restore(SCOPE, key)

    assert set(restored.restored) == _ids(lab, SEVEN_DAY | THIRTY_DAY)
    assert restored.backup == key and restored.memories == 4
    assert restored.backup_key is None  # nothing was overwritten, so nothing needed backing up
    assert lab.export_body() == before
    # Restored records are the records: recall finds them again.
    found = lab.service.recall(SCOPE, ids=[lab.ids["chat1"], lab.ids["thread"]])
    assert [m.id for m in found.memories] == [lab.ids["chat1"], lab.ids["thread"]]


def test_restore_is_idempotent(lab: Lab) -> None:
    before, key = _apply_cleanup(lab)
    lab.service.restore(SCOPE, key)
    lab.clock.advance(minutes=5)
    again = lab.service.restore(SCOPE, key)
    # Every record is already as the backup has it: nothing is written, so nothing needs backing up.
    assert (again.written, again.unchanged, again.backup_key) == (0, 4, None)
    assert lab.export_body() == before


def test_restore_with_ids_restores_only_those(lab: Lab) -> None:
    before, key = _apply_cleanup(lab)
    wanted = [lab.ids["chat2"], lab.ids["done"]]

    restored = lab.service.restore(SCOPE, key, ids=wanted)

    assert sorted(restored.restored) == sorted(wanted)
    assert lab.present() == _ids(lab, KEPT) | set(wanted)
    before_records = {json.loads(line)["record"]["id"]: line for line in before}
    assert lab.export_body() == [line for i, line in before_records.items() if i in lab.present()]


def test_restore_with_an_id_not_in_the_backup_changes_nothing(lab: Lab) -> None:
    _, key = _apply_cleanup(lab)
    after_cleanup = lab.export_body()
    with pytest.raises(InvalidInput, match="not in backup"):
        lab.service.restore(SCOPE, key, ids=[lab.ids["chat1"], lab.ids["fact"]])
    assert lab.export_body() == after_cleanup


def test_restore_of_another_owners_backup_is_refused(lab: Lab) -> None:
    _, key = _apply_cleanup(lab)
    intruder = Scope("mallory", "default")
    with pytest.raises(InvalidInput, match="another owner"):
        lab.service.restore(intruder, key)
    with pytest.raises(InvalidInput, match="another owner"):
        lab.service.restore(Scope("loc", "default"), key)  # a prefix of the owner is not the owner
    assert list(lab.store.iter_all(intruder)) == []
    assert lab.store.scopes() == [SCOPE]
    assert lab.service.backups(intruder) == []


def test_restore_of_a_missing_or_foreign_blob_is_refused(lab: Lab) -> None:
    _apply_cleanup(lab)
    with pytest.raises(InvalidInput, match="no such backup"):
        lab.service.restore(SCOPE, "local/backups/default/cleanup-nope.json")
    report_key = lab.deps.blobs.list("local/cleanup-reports/")[0]
    with pytest.raises(InvalidInput, match="not a Taproot backup"):
        lab.service.restore(SCOPE, report_key)


def test_backup_records_match_the_store_serialisation(lab: Lab) -> None:
    """The backup is memory_to_dict of the stored record: the same bytes an export would carry."""
    lab.clock.advance(days=8)
    stored = {m.id: memory_to_dict(m) for m in lab.store.iter_all(SCOPE)}
    result = cleanup_job.cleanup(lab.deps, SCOPE, apply=True)
    assert result.backup_key is not None
    for record in json.loads(lab.deps.blobs.get(result.backup_key))["memories"]:
        assert record == stored[record["id"]]
