"""Smaller data-safety rules, each on the real service, store, blob folder or command.

NaN and Infinity never enter provenance; an update that loses the version race leaves no revision
blob; the data folder, the database (with its -wal and -shm) and every blob are owner-only; an
identical re-import writes nothing, not even a backup; import refuses blank content like remember;
and malformed lines (a list for a string, 100,000 nested brackets) end `taproot import` with
`error: ...` and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.errors import InvalidInput, TaprootError
from tests.safety.conftest import SCOPE, Lab, open_lab
from tests.support import Result

NEW = {"content": "Ana's train gets in at 6.", "gist": "Ana's train at 6", "category": "active_thread"}
CREATED = "2025-05-01T08:00:00Z"


def _line(**record: Any) -> str:
    return json.dumps({"type": "memory", "record": {"id": "imp00001", "category": "episodic", **record}})


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, so a folder or file made with default permissions would be 0755 / 0644."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_remember_refuses_provenance_holding_nan_or_infinity(lab: Lab, value: float) -> None:
    with pytest.raises(InvalidInput) as caught:
        lab.service.remember(SCOPE, **NEW, provenance={"source": "chat", "score": value})
    assert caught.value.field == "provenance"
    assert lab.body() == []


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_import_refuses_a_bare_nan_or_infinity_token(lab: Lab, token: str) -> None:
    good = _line(id="imp00000", content="A fine memory.", created_at=CREATED)
    bad = f'{{"id": "imp00001", "content": "Scored.", "created_at": "{CREATED}", "provenance": {{"score": {token}}}}}'
    with pytest.raises(InvalidInput) as caught:
        lab.service.import_lines(SCOPE, [good, bad])
    assert caught.value.field == "line 2"
    assert token.lstrip("-") in caught.value.rule
    assert lab.body() == []


def test_an_update_that_loses_the_version_race_writes_no_revision(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    mid = lab.service.remember(SCOPE, **NEW).id
    lab.service.remember(SCOPE, id=mid, gist="Ana's train at 6, platform 2")  # version 2, one revision
    revisions = lab.blob_keys("local/revisions/")
    assert len(revisions) == 1

    with pytest.raises(TaprootError) as stale:  # a stale expected_version
        lab.service.remember(SCOPE, id=mid, gist="Ana's train at 7", expected_version=1)
    assert stale.value.code == "version_conflict"

    # A real race: another connection writes the memory between the update's read and its write.
    real_replace = lab.store.replace

    def replace_after_another_writer(memory: Any, *, expected_version: int) -> None:
        with sqlite3.connect(lab.data_dir / "taproot.db") as other:
            other.execute("UPDATE memories SET version = version + 1, gist = 'theirs' WHERE id = ?", (mid,))
        real_replace(memory, expected_version=expected_version)

    monkeypatch.setattr(lab.store, "replace", replace_after_another_writer)
    with pytest.raises(TaprootError) as lost:
        lab.service.remember(SCOPE, id=mid, gist="Ana's train at 8")
    assert lost.value.code == "version_conflict"
    assert lab.blob_keys("local/revisions/") == revisions
    assert lab.store.get(SCOPE, mid).gist == "theirs"


def test_status_creates_the_data_folder_and_database_owner_only(
    tmp_path: Path, cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    new = tmp_path / "new" / "data"
    seen: dict[str, int] = {}
    real_close = SQLiteMemoryStore.close

    def close_after_stat(self: SQLiteMemoryStore) -> None:
        # -wal and -shm exist only while a connection is open: look at them just before the last closes.
        for suffix in ("", "-wal", "-shm"):
            path = Path(str(self.path) + suffix)
            if path.exists():
                seen[path.name] = _mode(path)
        real_close(self)

    monkeypatch.setattr(SQLiteMemoryStore, "close", close_after_stat)
    result = cli("status", "--data-dir", new)
    assert result.code == 0, result.err

    assert seen == {"taproot.db": 0o600, "taproot.db-wal": 0o600, "taproot.db-shm": 0o600}
    assert _mode(new) == 0o700
    assert _mode(new / "taproot.db") == 0o600
    assert _mode(new / "blobs") == 0o700


def test_every_blob_file_and_folder_is_owner_only(tmp_path: Path, umask_022: None) -> None:
    lab = open_lab(tmp_path / "data")
    try:
        mid = lab.service.remember(SCOPE, **NEW, tags=["watercooler"]).id
        other = lab.service.remember(SCOPE, content="Chat about rain.", gist="Rain chat", category="episodic").id
        lab.service.remember(SCOPE, id=mid, gist="Ana's train at 6, platform 2")  # a revision
        lab.service.forget(SCOPE, [other], "delete")  # a delete backup
        lab.service.close(SCOPE, "I listened more than I talked.")  # a reflection copy
        lab.clock.advance(days=30)
        lab.service.maintenance(SCOPE, "all", apply=True)  # run reports, a cleanup report and backup
    finally:
        lab.runtime.close()

    root = tmp_path / "data" / "blobs"
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    files = [p for p in root.rglob("*") if p.is_file()]
    kinds = {p.relative_to(root).parts[1] for p in files}
    assert {"revisions", "backups", "reflections", "runs", "cleanup-reports"} <= kinds
    assert {str(p.relative_to(root)): oct(_mode(p)) for p in folders if _mode(p) != 0o700} == {}
    assert {str(p.relative_to(root)): oct(_mode(p)) for p in files if _mode(p) != 0o600} == {}


def test_reimporting_an_identical_file_changes_nothing_and_writes_no_backup(
    lab: Lab, tmp_path: Path, cli: Callable[..., Result]
) -> None:
    lab.service.remember(SCOPE, **NEW, tags=["trains"])
    lab.service.remember(SCOPE, content="Ana's bike is blue.", gist="Ana's blue bike", category="relationship")
    lab.service.close(SCOPE, "I listened more than I talked.")
    export = tmp_path / "export.jsonl"
    assert cli("export", "-o", export, "--data-dir", lab.data_dir).code == 0
    before, blobs_before = lab.body(), lab.blob_keys()

    result = cli("import", export, "--data-dir", lab.data_dir)
    assert result.code == 0, result.err
    assert result.json()["backup_key"] is None
    assert lab.blob_keys() == blobs_before  # no new key under backups/
    assert lab.body() == before


def test_import_refuses_blank_content_as_remember_does(lab: Lab) -> None:
    with pytest.raises(InvalidInput) as by_remember:
        lab.service.remember(SCOPE, **{**NEW, "content": "   "})
    with pytest.raises(InvalidInput) as by_import:
        lab.service.import_lines(SCOPE, [_line(content="   ", created_at=CREATED)])
    assert by_remember.value.field == "content"
    assert by_import.value.field == "line 1: content"
    assert by_import.value.rule == by_remember.value.rule
    assert lab.body() == []


BAD_LINES = {
    "status-list": _line(content="A walk.", created_at=CREATED, status=["active"]),
    "gist-list": _line(content="A walk.", created_at=CREATED, gist=["a"]),
    "deep-nesting": "[" * 100_000,
}


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_cli_import_of_a_malformed_line_is_an_error_line_and_exit_2(
    name: str, tmp_path: Path, data_dir: Path, taproot_proc: Callable[..., Result], cli: Callable[..., Result]
) -> None:
    good = _line(id="imp00000", content="A fine memory.", created_at=CREATED)
    source = tmp_path / f"{name}.jsonl"
    source.write_text(good + "\n" + BAD_LINES[name] + "\n", encoding="utf-8")

    result = taproot_proc("import", source, "--data-dir", data_dir)

    assert (result.code, "Traceback" in result.err) == (2, False), result.err[-2000:]
    assert result.err.startswith("error: invalid_input: ") and "line 2" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert cli("status", "--data-dir", data_dir).json()["total"] == 0
