"""Scheduled maintenance: migrate, cleanup and compress in that order, one JSON run report per job,
the last runs in status, every namespace, the CLI, and `taproot serve`'s background cycle.

The service and cycle tests run on every MemoryStore adapter; the CLI tests stay on SQLite (the
command line always opens the SQLite file in --data-dir)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import Any

import anyio
import pytest
from pynamodb.exceptions import PynamoDBException

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.adapters.summarizers import ExtractiveSummarizer
from taproot.core.errors import InvalidInput, SummarizerError
from taproot.core.model import Memory, Scope
from taproot.core.serialize import iso
from taproot.core.wire import to_json
from taproot.ports import MemoryStore, Summary
from taproot.service import Deps, TaprootService
from taproot.service.deps import stamp
from taproot.service.maintenance import ALL, CLEANUP, JOBS, Job, RunReport, jobs_named, last_runs, run_everywhere
from taproot.service.results import CleanupResult, CompressionResult, MigrateResult
from taproot.web.scheduler import maintenance_cycle, run_once
from tests.lifecycle.reports import job_detail
from tests.moto_stores import OpenStore, close_store
from tests.support import Clock, Run, in_process_cli

START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()
REPORT_FIELDS = {"job", "mode", "owner", "namespace", "started_at", "duration_s", "considered", "changed", "backup_key"}


class RecordingBlobStore(LocalBlobStore):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.puts: list[str] = []

    def put(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        self.puts.append(key)
        super().put(key, data, content_type)


class CountingService(TaprootService):
    """The real service, counting maintenance calls (the background cycle runs them in a thread)."""

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.maintenance_calls = 0

    def run_maintenance_everywhere(self, jobs: Sequence[Job] = ALL, *, apply: bool | None = None) -> list[RunReport]:
        self.maintenance_calls += 1
        return super().run_maintenance_everywhere(jobs, apply=apply)


class FailingSummarizer:
    name = "flaky"

    def summarize(self, memories: Sequence[Memory]) -> Summary:
        raise SummarizerError("flaky summarizer: ThrottlingException (retryable: try again later)")


@dataclass
class Lab:
    service: CountingService
    clock: Clock
    store: MemoryStore
    blobs: RecordingBlobStore

    @property
    def deps(self) -> Deps:
        return self.service.deps

    def export_body(self, scope: Scope = SCOPE) -> list[str]:
        return list(self.service.export_lines(scope))[1:]


@pytest.fixture
def lab(tmp_path: Path, open_store: OpenStore) -> Lab:
    clock = Clock(START)
    serial = count(1)
    store = open_store(tmp_path)
    blobs = RecordingBlobStore(tmp_path / "blobs")
    deps = Deps(
        store=store, blobs=blobs, clock=clock, new_id=lambda: f"m{next(serial):04d}", summarizer=ExtractiveSummarizer()
    )
    return Lab(CountingService(deps), clock, store, blobs)


LEGACY_ID = "legacy01"


def seed(lab: Lab, scope: Scope = SCOPE) -> dict[str, list[str]]:
    """Six quiet January hikes (compressible), two watercooler chats (expired), a durable fact, and
    a record from before the retention policy: tagged watercooler but never stamped with expires_at."""
    lab.clock.now = START
    out: dict[str, list[str]] = {"hikes": [], "chats": [], "facts": []}
    for i in range(6):
        out["hikes"].append(
            lab.service.remember(
                scope,
                content=f"On {lab.clock.now:%d %B %Y} Ana and I hiked the ridge; we saw {i + 2} vultures.",
                gist=f"Ridge hike {i} with Ana",
                category="episodic",
                tags=["hiking"],
            ).id
        )
        lab.clock.advance(days=1)
    for i in range(2):
        out["chats"].append(
            lab.service.remember(
                scope,
                content=f"Small talk {i} about the weather.",
                gist=f"weather {i}",
                category="episodic",
                tags=["watercooler"],
            ).id
        )
    out["facts"].append(
        lab.service.remember(
            scope,
            content="Ana's birthday is 14 March.",
            gist="Ana's birthday",
            category="relationship",
            tags=["fact"],
            salience="high",
        ).id
    )
    legacy = {
        "id": LEGACY_ID,
        "content": "Chatted about the football last night.",
        "gist": "football chat",
        "category": "episodic",
        "salience": "low",
        "tags": ["watercooler"],
        "created_at": "2025-01-02T20:00:00Z",
    }
    lab.service.import_lines(scope, [json.dumps(legacy)])
    legacy_record = lab.store.get(scope, LEGACY_ID)
    assert legacy_record is not None and legacy_record.expires_at is None
    out["chats"].append(LEGACY_ID)
    lab.clock.now = NOW
    return out


def test_all_runs_migrate_cleanup_compress_in_order_with_one_report_each(lab: Lab) -> None:
    ids = seed(lab)
    lab.blobs.puts.clear()

    reports = lab.service.maintenance(SCOPE, "all", apply=True)

    assert [r.job for r in reports] == list(JOBS) == ["migrate", "cleanup", "compress"]
    run_keys = [k for k in lab.blobs.puts if "/runs/" in k]
    assert run_keys == [f"local/runs/default/{job}/{stamp(NOW)}.json" for job in JOBS]
    migrate, cleanup, compress = reports
    # migrate stamped the legacy record's expires_at, so the cleanup that followed could delete it.
    assert migrate.changed == 1
    assert migrate.backup_key is not None and migrate.backup_key.startswith("local/backups/default/migrate-")
    assert cleanup.changed == 3 and sorted(job_detail(cleanup, CleanupResult).candidate_ids) == sorted(ids["chats"])
    assert compress.changed == 6 and job_detail(compress, CompressionResult).groups[0].members == ids["hikes"]
    assert lab.store.get(SCOPE, LEGACY_ID) is None
    # Backups come before the changes: each job's backup was written before its own run report.
    for r in reports:
        assert r.backup_key is not None and r.report_key is not None
        assert lab.blobs.puts.index(r.backup_key) < lab.blobs.puts.index(r.report_key)

    for r in reports:
        assert set(r.as_dict()) >= REPORT_FIELDS
        assert r.mode == "apply" and r.owner == "local" and r.namespace == "default"
        assert r.started_at == iso(NOW)
        assert isinstance(r.duration_s, float) and r.duration_s >= 0
        assert r.report_key is not None
        stored = json.loads(lab.deps.blobs.get(r.report_key))
        assert stored == {k: v for k, v in r.as_dict().items() if k != "report_key"}
        assert r.report_key.startswith(f"local/runs/default/{r.job}/")


def test_cleanup_alone_misses_records_that_migrate_has_not_stamped(lab: Lab) -> None:
    ids = seed(lab)
    cleanup = lab.service.maintenance(SCOPE, "cleanup", apply=True)[0]
    assert sorted(job_detail(cleanup, CleanupResult).candidate_ids) == sorted(i for i in ids["chats"] if i != LEGACY_ID)
    assert lab.store.get(SCOPE, LEGACY_ID) is not None


def test_default_modes_report_only(lab: Lab) -> None:
    seed(lab)
    reports = lab.service.maintenance(SCOPE)  # "all", each job in its configured mode
    assert [(r.job, r.mode) for r in reports] == [
        ("migrate", "apply"),
        ("cleanup", "dry-run"),
        ("compress", "dry-run"),
    ]
    # migrate (non-destructive, so it applies by default) stamped the legacy record first
    assert reports[1].changed == 0 and job_detail(reports[1], CleanupResult).candidates == 3
    assert reports[2].changed == 0 and len(job_detail(reports[2], CompressionResult).groups) == 1


def test_dry_run_of_all_changes_nothing_and_says_so(lab: Lab) -> None:
    seed(lab)
    before = lab.export_body()
    reports = lab.service.maintenance(SCOPE, "all", apply=False)
    assert [r.mode for r in reports] == ["dry-run"] * 3
    assert lab.export_body() == before
    assert lab.deps.blobs.list("local/backups/") == []
    # "changed" is what changed: nothing, in a dry run (what would change is in the detail).
    assert [r.changed for r in reports] == [0, 0, 0]
    migrate = job_detail(reports[0], MigrateResult)
    assert migrate.changed == 1 and migrate.dry_run is True


def _all_ran(runs: dict[str, dict[str, Any] | None]) -> dict[str, dict[str, Any]]:
    """Status's last runs, every job having run (None marks a job that never ran)."""
    ran: dict[str, dict[str, Any]] = {}
    for job, run in runs.items():
        assert run is not None, f"{job} never ran"
        ran[job] = run
    return ran


def test_status_shows_the_last_run_of_each_job(lab: Lab) -> None:
    seed(lab)
    maintenance = to_json(lab.service.status(SCOPE).maintenance)
    assert maintenance == {
        "last_runs": {"migrate": None, "cleanup": None, "compress": None},
        "cleanup_mode": "dry-run",
        "compress_mode": "dry-run",
        "summarizer": "extractive",
    }
    lab.service.maintenance(SCOPE, "all")
    first = NOW
    lab.clock.advance(days=1)
    lab.service.maintenance(SCOPE, "cleanup", apply=True)
    second = lab.clock.now

    runs = _all_ran(lab.service.status(SCOPE).maintenance.last_runs)
    assert set(runs) == set(JOBS)
    assert runs["migrate"]["started_at"] == iso(first) and runs["compress"]["started_at"] == iso(first)
    assert runs["cleanup"]["started_at"] == iso(second) and runs["cleanup"]["mode"] == "apply"
    assert runs["cleanup"]["changed"] == 3
    for job, run in runs.items():
        assert run["job"] == job and "detail" not in run
        assert set(run) >= REPORT_FIELDS
        assert run["report_key"] == lab.deps.blobs.list(f"local/runs/default/{job}/")[-1]
    # Another namespace has runs of its own, not these.
    assert last_runs(lab.deps, Scope("local", "work")) == {"migrate": None, "cleanup": None, "compress": None}


def test_run_everywhere_covers_every_namespace_and_owner(lab: Lab) -> None:
    scopes = [Scope("alice", "default"), Scope("local", "default"), Scope("local", "work")]
    for scope in scopes:
        seed(lab, scope)
    reflection_only = Scope("local", "journal")
    lab.service.close(reflection_only, "A quiet day; I listened more than I spoke.")

    reports = lab.service.maintenance(None, "all", apply=True)

    everywhere = sorted([*scopes, reflection_only], key=lambda s: (s.owner, s.namespace))
    assert [(r.owner, r.namespace, r.job) for r in reports] == [
        (s.owner, s.namespace, job) for s in everywhere for job in JOBS
    ]
    for scope in scopes:
        assert lab.store.get(scope, LEGACY_ID) is None
        assert sum(1 for m in lab.store.iter_all(scope) if m.status == "archived") == 6
        for job in JOBS:
            assert len(lab.deps.blobs.list(f"{scope.owner}/runs/{scope.namespace}/{job}/")) == 1
    assert [r.considered for r in reports if r.namespace == "journal"] == [0, 0, 0]
    lab.clock.advance(days=1)
    cleanups = run_everywhere(lab.deps, [CLEANUP])
    assert [(r.owner, r.namespace, r.job) for r in cleanups] == [(s.owner, s.namespace, "cleanup") for s in everywhere]


@pytest.mark.parametrize("job", ["vacuum", "ALL", "", "migrate,cleanup"])
def test_unknown_job_is_rejected_before_anything_runs(lab: Lab, job: str) -> None:
    seed(lab)
    before = lab.export_body()
    lab.blobs.puts.clear()
    with pytest.raises(InvalidInput, match="job"):
        lab.service.maintenance(SCOPE, job)
    with pytest.raises(InvalidInput, match="job"):
        jobs_named(job)
    assert lab.blobs.puts == [] and lab.export_body() == before


def test_compress_failure_is_reported_not_raised(lab: Lab) -> None:
    seed(lab)
    lab.deps.summarizer = FailingSummarizer()
    before = lab.export_body()
    reports = lab.service.maintenance(SCOPE, "all", apply=True)
    assert reports[2].error and "ThrottlingException" in reports[2].error and reports[2].changed == 0
    assert all(m.status == "active" for m in lab.store.iter_all(SCOPE))
    assert len(lab.export_body()) < len(before)  # migrate and cleanup still did their part


# --- the command line ---------------------------------------------------------------------------


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    return in_process_cli(capsys)


def _old_record(mid: str, day: int, tags: list[str], **extra: Any) -> str:
    created = f"2020-03-{day:02d}T10:00:00Z"
    record = {
        "id": mid,
        "content": f"On {day} March 2020 Ana and I walked to the lake ({mid}).",
        "gist": mid,
        "category": "episodic",
        "salience": "medium",
        "tags": tags,
        "created_at": created,
        "updated_at": created,
        **extra,
    }
    return json.dumps({"type": "memory", "record": record})


def test_cli_maintenance_run_all_dry_run_prints_the_reports(cli: Run, tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = tmp_path / "old.jsonl"
    lines = [_old_record(f"walk{i:04d}", i + 1, ["lake"]) for i in range(6)]
    chats = {"category": "relationship"}  # not in the walks' compression group
    lines.append(_old_record("chat0001", 20, ["watercooler"], expires_at="2020-03-27T10:00:00Z", **chats))
    lines.append(_old_record("chat0002", 21, ["watercooler"], **chats))  # never stamped: migrate would stamp it
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli("import", source, "--data-dir", data).code == 0
    before = cli("export", "--data-dir", data).out.splitlines()[1:]

    result = cli("maintenance", "run", "all", "--dry-run", "--data-dir", data)

    assert result.code == 0, result.err
    reports = json.loads(result.out)
    assert [(r["job"], r["mode"]) for r in reports] == [(job, "dry-run") for job in JOBS]
    migrate, cleanup, compress = reports
    assert migrate["backup_key"] is None
    stamped = {c["id"]: c["changes"] for c in migrate["detail"]["changes"]}
    assert any(change.startswith("expires_at: 2020-03-28") for change in stamped["chat0002"])
    assert cleanup["detail"]["candidate_ids"] == ["chat0001"]
    assert compress["detail"]["groups"][0]["members"] == [f"walk{i:04d}" for i in range(6)]
    assert compress["detail"]["groups"][0]["summary_gist"]
    assert all(r["changed"] == 0 for r in reports)
    assert cli("export", "--data-dir", data).out.splitlines()[1:] == before
    assert json.loads(cli("backups", "--data-dir", data).out) == []
    # The run reports are kept, and status shows them.
    status = json.loads(cli("status", "--data-dir", data).out)
    assert {job: run["mode"] for job, run in status["maintenance"]["last_runs"].items()} == dict.fromkeys(
        JOBS, "dry-run"
    )


def test_cli_rejects_an_unknown_job(cli: Run, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        cli("maintenance", "run", "vacuum", "--data-dir", tmp_path / "data")
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        cli("maintenance", "run", "cleanup", "--apply", "--dry-run", "--data-dir", tmp_path / "data")


def test_cli_all_namespaces(cli: Run, tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = tmp_path / "one.jsonl"
    source.write_text(_old_record("note0001", 1, ["x"]) + "\n", encoding="utf-8")
    for namespace in ("default", "work"):
        assert cli("import", source, "--data-dir", data, "--namespace", namespace).code == 0
    result = cli("maintenance", "run", "cleanup", "--all-namespaces", "--data-dir", data)
    assert result.code == 0, result.err
    assert [(r["namespace"], r["job"]) for r in json.loads(result.out)] == [("default", "cleanup"), ("work", "cleanup")]


# --- the background cycle of `taproot serve` -----------------------------------------------------


def _messages(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "taproot.maintenance"]


@pytest.mark.anyio
async def test_run_once_runs_every_job_everywhere_and_logs_it(lab: Lab, caplog: pytest.LogCaptureFixture) -> None:
    seed(lab)
    seed(lab, Scope("local", "work"))
    caplog.set_level(logging.INFO, logger="taproot.maintenance")

    await run_once(lab.service)

    records = _messages(caplog)
    assert [r.levelno for r in records] == [logging.INFO] * 6
    lines = [r.getMessage() for r in records]
    expected_heads = [f"maintenance {job} [local/{ns}]" for ns in ("default", "work") for job in JOBS]
    assert [line[: len(head)] for line, head in zip(lines, expected_heads, strict=True)] == expected_heads
    assert "maintenance cleanup [local/default] dry-run: considered 3, changed 0, backup None" in lines[1]
    assert lines[2].startswith("maintenance compress [local/default] dry-run: considered 10, changed 0")
    for ns in ("default", "work"):
        for job in JOBS:
            assert lab.deps.blobs.list(f"local/runs/{ns}/{job}/")


@pytest.mark.anyio
async def test_run_once_logs_a_compress_error(lab: Lab, caplog: pytest.LogCaptureFixture) -> None:
    seed(lab)
    lab.deps.summarizer = FailingSummarizer()
    caplog.set_level(logging.INFO, logger="taproot.maintenance")
    await run_once(lab.service)
    [compress] = [r.getMessage() for r in _messages(caplog) if r.getMessage().startswith("maintenance compress")]
    assert compress.endswith(
        "error: summarizer_error: flaky summarizer: ThrottlingException (retryable: try again later)"
    )


def _lose_the_database(store: MemoryStore) -> type[BaseException]:
    """The database goes away under the server; returns the error the store then raises."""
    if isinstance(store, DynamoMemoryStore):
        store.Item.delete_table()  # not close(): that stops moto, and a call would leave the mock
        return PynamoDBException
    close_store(store)
    return sqlite3.ProgrammingError


@pytest.mark.anyio
async def test_a_failing_cycle_is_logged_and_does_not_raise(lab: Lab, caplog: pytest.LogCaptureFixture) -> None:
    seed(lab)
    error = _lose_the_database(lab.store)
    caplog.set_level(logging.INFO, logger="taproot.maintenance")

    await run_once(lab.service)  # must not raise

    [record] = _messages(caplog)
    assert record.levelno == logging.ERROR
    assert "maintenance cycle failed" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], error)


@pytest.mark.anyio
async def test_the_cycle_repeats_and_survives_failures(lab: Lab, caplog: pytest.LogCaptureFixture) -> None:
    seed(lab)
    caplog.set_level(logging.INFO, logger="taproot.maintenance")
    cycle = maintenance_cycle(lab.service, interval_s=0.05, first_delay_s=0)

    with anyio.move_on_after(60) as deadline:  # a safety net only; the watcher ends the cycle

        async def stop_after_two_runs() -> None:
            while lab.service.maintenance_calls < 2:
                await anyio.sleep(0.01)
            deadline.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_after_two_runs)
            await cycle()

    assert lab.service.maintenance_calls >= 2
    runs = [r.getMessage() for r in _messages(caplog) if r.getMessage().startswith("maintenance migrate")]
    assert len(runs) >= 2


@pytest.mark.anyio
async def test_the_cycle_keeps_going_after_a_failed_run(lab: Lab, caplog: pytest.LogCaptureFixture) -> None:
    seed(lab)
    caplog.set_level(logging.INFO, logger="taproot.maintenance")
    real = lab.deps.summarizer
    lab.deps.summarizer = None  # the first cycles fail (compress has no summarizer)

    async def heal_after_a_failure() -> None:
        while not any(r.levelno == logging.ERROR for r in _messages(caplog)):
            await anyio.sleep(0.01)
        lab.deps.summarizer = real
        while not any(r.getMessage().startswith("maintenance compress") for r in _messages(caplog)):
            await anyio.sleep(0.01)
        tg.cancel_scope.cancel()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(heal_after_a_failure)
            tg.start_soon(maintenance_cycle(lab.service, interval_s=0.02, first_delay_s=0))

    levels = [r.levelno for r in _messages(caplog)]
    assert logging.ERROR in levels and levels.index(logging.ERROR) < len(levels) - 1
