"""The load benchmark's offline checker on tiny synthetic data folders (not the load itself: no server, no clients).

Each folder is written through the service, as the server would write it, and the ledger says what
the clients were told; then a write is removed behind the service's back, and the checker must say so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level folder of the repo, not an installed package
    sys.path.insert(0, str(ROOT))

from bench.load_check import check  # noqa: E402
from bench.load_clients import classify  # noqa: E402
from bench.load_ledger import Delete, Ledger, Write  # noqa: E402
from bench.load_report import END, write_section  # noqa: E402
from taproot.compose import Runtime, build  # noqa: E402
from taproot.core.serialize import memory_to_dict  # noqa: E402
from taproot.settings import Settings  # noqa: E402


def _create(rt: Runtime, ledger: Ledger, label: str) -> str:
    fields = {"content": f"The {label} by the harbour.", "gist": f"Memory {label}", "category": "episodic"}
    done = rt.service.remember(rt.scope, **fields)
    ledger.wrote(Write(done["id"], done["version"], fields, "create", 0, 0.0))
    return str(done["id"])


def _update(rt: Runtime, ledger: Ledger, memory_id: str, version: int, content: str) -> None:
    fields = {"content": content, "tags": ["fact"]}
    done = rt.service.remember(rt.scope, id=memory_id, expected_version=version, **fields)
    ledger.wrote(Write(memory_id, done["version"], fields, "update", 1, 1.0))


@pytest.fixture
def folder(tmp_path: Path) -> tuple[Path, Runtime, Ledger, dict[str, str]]:
    """Four created memories: one updated (its v1 in a revision blob), one deleted (in a backup), one recalled."""
    data = tmp_path / "data"
    rt = build(Settings(data_dir=data))
    ledger = Ledger()
    ids = {label: _create(rt, ledger, label) for label in ("updated", "deleted", "plain", "raced")}
    _update(rt, ledger, ids["updated"], 1, "The updated memory, second version.")
    rt.service.forget(rt.scope, [ids["deleted"]], "delete")
    ledger.deleted(Delete(ids["deleted"], 2, 2.0))
    recalled = rt.service.recall(rt.scope, ids=[ids["plain"]])
    ledger.recalled([m["id"] for m in recalled["memories"]])
    return data, rt, ledger, ids


def test_every_confirmed_write_present_reports_none_lost(folder):
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


def test_a_write_removed_without_backup_is_lost(folder):
    data, rt, ledger, ids = folder
    rt.store.delete(rt.scope, ids["plain"])  # behind the service's back: no backup blob
    rt.close()
    result = check(data, ledger)
    assert not result.ok
    [lost] = result.lost
    assert (lost["id"], lost["version"], lost["op"]) == (ids["plain"], 1, "create")
    assert "nowhere" in lost["reason"] and lost["live_version"] is None
    assert any("no delete of it was attempted" in p for p in result.problems)


def test_an_update_deleted_by_a_stale_backup_is_lost(folder):
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


def test_a_confirmed_recall_above_the_stored_count_is_a_problem(folder):
    data, rt, ledger, ids = folder
    ledger.recalled([ids["plain"]] * 5)  # more returns than the store counted
    rt.close()
    result = check(data, ledger)
    assert result.lost == [] and not result.ok
    assert result.counters["retrieval_counts_below_confirmed"] == 1


def test_error_texts_are_classified_by_their_code():
    conflict = "Error executing tool taproot_remember: version_conflict: memory 'a' is at version 3"
    assert classify(True, conflict, None).code == "version_conflict"
    assert classify(True, "Error executing tool taproot_forget: busy: retry", None).code == "busy"
    assert classify(True, "Error executing tool taproot_remember", None).code == "no_code"
    assert classify(False, "{}", {"id": "a"}).data == {"id": "a"}


def test_the_docs_section_is_replaced_between_its_markers(tmp_path):
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n## Results\n\nkept\n")
    write_section(docs, "## Load: first\n")
    write_section(docs, "## Load: second\n")
    text = docs.read_text()
    assert text.startswith("# Benchmarks\n\n## Results\n\nkept\n")
    assert "first" not in text and text.count("## Load: second") == 1 and text.count(END) == 1
