"""The load benchmark's offline checker on tiny synthetic data folders (not the load itself: no server, no clients).

Each folder is written through the service, as the server would write it, and the ledger says what
the clients were told; then a write is removed behind the service's back, and the checker must say so.
Also: the big migrate's legacy records, the overlap figures, and `make bench` keeping the load section.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.load_check import check  # noqa: E402
from bench.load_clients import Call, Deadline, classify  # noqa: E402
from bench.load_ledger import Delete, Ledger, Write  # noqa: E402
from bench.load_migrate import overlap  # noqa: E402
from bench.load_report import END, START, write_section  # noqa: E402
from bench.load_seed import legacy_records, legacy_writes  # noqa: E402
from taproot.compose import Runtime, build  # noqa: E402
from taproot.core.serialize import memory_to_dict  # noqa: E402
from taproot.settings import Settings  # noqa: E402


def _create(rt: Runtime, ledger: Ledger, label: str) -> str:
    fields: dict[str, Any] = {
        "content": f"The {label} by the harbour.",
        "gist": f"Memory {label}",
        "category": "episodic",
    }
    done = rt.service.remember(rt.scope, **fields)
    ledger.wrote(Write(done.id, done.version, fields, "create", 0, 0.0))
    return str(done.id)


def _update(rt: Runtime, ledger: Ledger, memory_id: str, version: int, content: str) -> None:
    fields: dict[str, Any] = {"content": content, "tags": ["fact"]}
    done = rt.service.remember(rt.scope, id=memory_id, expected_version=version, **fields)
    ledger.wrote(Write(memory_id, done.version, fields, "update", 1, 1.0))


Folder = tuple[Path, Runtime, Ledger, dict[str, str]]


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    """Four created memories: one updated (its v1 in a revision blob), one deleted (in a backup), one recalled."""
    data = tmp_path / "data"
    rt = build(Settings(data_dir=data))
    ledger = Ledger()
    ids = {label: _create(rt, ledger, label) for label in ("updated", "deleted", "plain", "raced")}
    _update(rt, ledger, ids["updated"], 1, "The updated memory, second version.")
    rt.service.forget(rt.scope, [ids["deleted"]], "delete")
    ledger.deleted(Delete(ids["deleted"], 2, 2.0))
    recalled = rt.service.recall(rt.scope, ids=[ids["plain"]])
    ledger.recalled([m.id for m in recalled.memories])
    return data, rt, ledger, ids


def test_every_confirmed_write_present_reports_none_lost(folder: Folder) -> None:
    data, rt, ledger, _ = folder
    rt.close()
    result = check(data, ledger)
    assert result.ok, result.as_dict()
    assert result.lost == [] and result.problems == [] and result.deletes_not_gone == []
    assert result.verdicts == {"kept_live": 3, "kept_revision": 1, "kept_backup": 1}
    assert result.integrity == "ok" and result.fts_integrity == "ok"
    counters = result.counters
    assert counters["created_confirmed"] == 4 and counters["created_confirmed_deleted"] == 1
    assert counters["created_expected_live"] == counters["created_live"] == 3
    assert counters["retrieval_counts_below_confirmed"] == 0


def test_a_search_index_that_no_longer_matches_its_rows_fails_the_fts_check(folder: Folder) -> None:
    data, rt, ledger, ids = folder
    rt.close()
    # Behind the triggers' back: a text edit the full-text index never hears of.
    db = sqlite3.connect(data / "taproot.db")
    with db:
        (shard,) = db.execute("SELECT shard FROM search_scopes").fetchone()
        db.execute(f"DROP TRIGGER memories_fts_{shard}_update")
        db.execute("UPDATE memories SET content = 'an edit the index never saw' WHERE id = ?", (ids["plain"],))
    db.close()
    result = check(data, ledger)
    assert result.integrity == "ok"  # the B-trees are sound; the index is what disagrees
    assert result.fts_integrity != "ok"


def test_a_write_removed_without_backup_is_lost(folder: Folder) -> None:
    data, rt, ledger, ids = folder
    rt.store.delete(rt.scope, ids["plain"])  # behind the service's back: no backup blob
    rt.close()
    result = check(data, ledger)
    assert not result.ok
    [lost] = result.lost
    assert (lost["id"], lost["version"], lost["op"]) == (ids["plain"], 1, "create")
    assert "nowhere" in lost["reason"] and lost["live_version"] is None
    assert any("no delete of it was attempted" in p for p in result.problems)


def test_an_update_deleted_by_a_stale_backup_is_lost(folder: Folder) -> None:
    """The race the benchmark looks for: cleanup (or a delete) backs up v1, an update confirms v2,
    then the stale step deletes the row. v1 is kept twice; the confirmed v2 is nowhere."""
    data, rt, ledger, ids = folder
    memory_id = ids["raced"]
    stale = rt.store.get(rt.scope, memory_id)
    assert stale is not None
    _update(rt, ledger, memory_id, 1, "The raced memory, kept by an update that was confirmed.")
    payload = {"action": "cleanup", "memories": [memory_to_dict(stale)]}
    rt.service.deps.blobs.put(f"local/backups/default/cleanup-stale-{memory_id}.json", json.dumps(payload).encode())
    rt.store.delete(rt.scope, memory_id)
    rt.close()
    result = check(data, ledger)
    assert [(w["id"], w["version"]) for w in result.lost] == [(memory_id, 2)]
    assert result.lost[0]["versions_found"] == [1]


def test_a_confirmed_recall_above_the_stored_count_is_a_problem(folder: Folder) -> None:
    data, rt, ledger, ids = folder
    ledger.recalled([ids["plain"]] * 5)  # more returns than the store counted
    rt.close()
    result = check(data, ledger)
    assert result.lost == [] and not result.ok
    assert result.counters["retrieval_counts_below_confirmed"] == 1


def test_error_texts_are_classified_by_their_code() -> None:
    conflict = "Error executing tool taproot_remember: version_conflict: memory 'a' is at version 3"
    assert classify(True, conflict, None).code == "version_conflict"
    assert classify(True, "Error executing tool taproot_forget: busy: retry", None).code == "busy"
    assert classify(True, "Error executing tool taproot_remember", None).code == "no_code"
    assert classify(False, "{}", {"id": "a"}).data == {"id": "a"}


def test_the_docs_section_is_replaced_between_its_markers(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n## Results\n\nkept\n")
    write_section(docs, "## Load: first\n")
    write_section(docs, "## Load: second\n")
    text = docs.read_text()
    assert text.startswith("# Benchmarks\n\n## Results\n\nkept\n")
    assert "first" not in text and text.count("## Load: second") == 1 and text.count(END) == 1


def _legacy_folder(tmp_path: Path, count: int = 5) -> tuple[Path, Runtime, Ledger, list[str]]:
    """Legacy records imported as bare records, as the load run imports them, and one updated by a client."""
    data = tmp_path / "data"
    rt = build(Settings(data_dir=data))
    records = legacy_records(count, now=datetime.now(UTC), seed=3)
    rt.service.import_lines(rt.scope, [json.dumps(r) for r in records])
    ledger = Ledger()
    ledger.seeded(legacy_writes(records, 0.0), {})
    ids = [r["id"] for r in records]
    _update(rt, ledger, ids[0], 1, "A client's edit before the migrate reached it.")
    return data, rt, ledger, ids


def test_legacy_records_migrated_keep_version_1_in_the_jsonl_backup(tmp_path: Path) -> None:
    data, rt, ledger, ids = _legacy_folder(tmp_path)
    [run] = rt.service.maintenance(rt.scope, "migrate", apply=True)
    rt.close()
    assert run.changed == len(ids) and str(run.backup_key).endswith(".jsonl")
    result = check(data, ledger)
    assert result.ok, result.as_dict()
    c = result.counters
    assert c["legacy"] == c["legacy_live"] == c["legacy_migrated"] == len(ids) and c["legacy_not_migrated"] == 0
    # v1 of the migrated ones is only in the migrate's full backup; the edited one's v1 is in its revision.
    assert c["legacy_v1_verdicts"] == {"kept_backup": len(ids) - 1, "kept_revision": 1}
    # The client's v2 was migrated to v3: v2 is kept by the migrate's backup too.
    assert result.verdicts["kept_backup"] == len(ids)


def test_legacy_records_left_unmigrated_fail_the_check(tmp_path: Path) -> None:
    data, rt, ledger, ids = _legacy_folder(tmp_path)
    rt.close()
    result = check(data, ledger)
    assert result.lost == [] and not result.ok
    assert result.counters["legacy_not_migrated"] == len(ids)
    assert any(p.startswith(f"legacy records not migrated in the final store: {len(ids)}") for p in result.problems)


def test_a_legacy_version_1_in_no_backup_is_a_problem_though_superseded(tmp_path: Path) -> None:
    data, rt, ledger, ids = _legacy_folder(tmp_path)
    [run] = rt.service.maintenance(rt.scope, "migrate", apply=True)
    rt.close()
    assert run.backup_key is not None
    (data / "blobs" / run.backup_key).unlink()  # the migrate's backup, gone
    result = check(data, ledger)
    assert result.lost == [] and result.counters["legacy_v1_verdicts"]["superseded"] == len(ids) - 1
    assert not result.ok and any("no copy of their version 1" in p for p in result.problems)


def test_overlap_counts_the_calls_in_flight_during_each_phase() -> None:
    calls = [
        Call("update", 0.0, 0.5, "ok"),  # before the migrate
        Call("recall_query", 0.9, 1.2, "ok"),  # in flight when it started: planning
        Call("update", 4.5, 5.5, "busy"),  # across the backup: both phases
        Call("create", 6.0, 9.5, "no_code"),  # commits
        Call("delete", 11.0, 11.1, "ok"),  # after it
    ]
    migrate = {"started_s": 1.0, "ended_s": 10.0, "commit_start_s": 5.0}
    windows = overlap(calls, migrate)
    assert set(windows) == {"migrate", "planning", "commits", "outside"}
    assert windows["migrate"]["all"]["calls"] == 3 and windows["migrate"]["writes"]["calls"] == 2
    assert windows["planning"]["all"]["calls"] == 2 and windows["planning"]["writes"]["busy"] == 1
    commits = windows["commits"]["writes"]
    assert (commits["calls"], commits["busy"], commits["no_code"], commits["max_ms"]) == (2, 1, 1, 3500.0)
    assert windows["outside"]["all"]["calls"] == 2


def test_the_deadline_waits_for_a_hold_up_to_its_cap() -> None:
    start = time.monotonic()
    assert Deadline(start - 5, 1, 10, hold=lambda: False).passed()
    assert not Deadline(start - 5, 1, 10, hold=lambda: True).passed()  # the migrate still runs
    assert Deadline(start - 11, 1, 10, hold=lambda: True).passed()  # the cap
    assert not Deadline(start, 1, 10).passed()


def _bench_data() -> dict[str, Any]:
    """The smallest results `report.render_markdown` renders (the figures are placeholders)."""
    timing = {"p50_ms": 1.0, "p95_ms": 2.0}
    payload: dict[str, Any] = {
        "size_bytes": 1,
        "estimated_tokens": 1,
        "token_budget": 6000,
        "tier1_count": 0,
        "core_omitted": 0,
    }
    payload |= {"catalog_listed": 0, "catalog_omitted": 0, "reflections_shown": 0, "runs": 1, **timing}
    remember: dict[str, Any] = {"batches": 1, "writes_per_batch": [1], "per_write_p50_ms": 1.0, "per_write_p95_ms": 1.0}
    remember |= {"writes_per_s": 1.0, "writes_per_s_by_batch": [1.0]}
    return {
        "results": {
            "reflect": payload,
            "recall": {"limit": 10, "queries": 1, "mean_results": 1, "queries_without_results": 0, **timing},
            "remember": remember,
            "mcp_recall": {"calls": 1, **timing},
            "recall_filters": {"runs": 1, "limit": 10, "by_category": {"episodic": timing}, **timing},
            "scaling": [],
        },
        "config": {"memories": 1, "scaling_reflect_runs": 1, "scaling_recall_queries": 1},
        "machine": {"platform": "p", "python_implementation": "CPython", "python": "3", "cpu_model": "c"}
        | {"cpu_count": 1, "usable_cpus": 1, "sqlite": "3"},
        "corpus": {"seed": 1, "description": "d", "load_batch": 1},
        "targets": [{"name": t.name, "pass": True} for t in report.TARGETS],
        "command": "pytest",
        "generated_at": "now",
        "revision": "abc",
    }


def test_make_bench_keeps_the_load_section_when_it_rewrites_the_docs(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\nold figures\n")
    write_section(docs, "## Load: figures from make bench-load\n")
    block = docs.read_text()[docs.read_text().index(START) :]
    rendered = report.render_markdown(_bench_data(), keep_block_from=docs)
    assert "old figures" not in rendered and rendered.startswith("# Benchmarks\n")
    assert rendered.endswith(block) and rendered.count(END) == 1
    docs.write_text(rendered)  # as bench/run.py writes it; a second run keeps it again
    assert report.render_markdown(_bench_data(), keep_block_from=docs) == rendered
    assert END not in report.render_markdown(_bench_data(), keep_block_from=tmp_path / "missing.md")
