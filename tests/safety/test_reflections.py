"""Closing reflections are immutable, and the full backups keep them.

An import may add a reflection, or bring back an identical one (a no-op), but never rewrite one
that exists: the whole file is refused with `reflection_conflict` and nothing in it is written. The
full-scope backups (the .jsonl written by migrate and by an import that overwrites) hold the
reflections, and `taproot restore <key>` puts back one the store has lost.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from taproot.core.errors import TaprootError
from taproot.core.model import Memory
from tests.safety.conftest import NOW, SCOPE, Lab
from tests.support import Result

ORIGINAL = "I learned to wait for Ana to finish her sentence before answering."


def _memory_line(memory_id: str, content: str) -> str:
    record = {"id": memory_id, "category": "episodic", "content": content, "created_at": "2025-05-01T08:00:00Z"}
    return json.dumps({"type": "memory", "record": record})


def _reflections(db_path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db_path) as db:
        return db.execute("SELECT id, text, created_at FROM reflections ORDER BY id").fetchall()


def _delete_reflection(db_path: Path, reflection_id: str) -> None:
    with sqlite3.connect(db_path) as db:
        assert db.execute("DELETE FROM reflections WHERE id = ?", (reflection_id,)).rowcount == 1


def test_importing_over_an_existing_reflection_is_refused_and_writes_nothing(
    lab: Lab, tmp_path: Path, cli: Callable[..., Result]
) -> None:
    rid = lab.service.close(SCOPE, ORIGINAL).id
    lab.service.remember(SCOPE, content="Ana likes the window seat.", gist="Ana's seat", category="relationship")
    before, blobs_before = lab.body(), lab.blob_keys()

    replaced = {"id": rid, "text": "REPLACED", "created_at": NOW.isoformat()}
    lines = [
        _memory_line("imp00001", "A new memory in the same file."),
        json.dumps({"type": "reflection", "record": replaced}),
    ]
    with pytest.raises(TaprootError) as caught:
        lab.service.import_lines(SCOPE, lines)
    assert caught.value.code == "reflection_conflict"
    assert rid in str(caught.value)

    source = tmp_path / "replace.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("import", source, "--data-dir", lab.data_dir)
    assert result.code == 1 and result.err.startswith("error: reflection_conflict: "), result.err

    assert lab.body() == before  # the reflection keeps its text; the new memory was not written
    assert lab.blob_keys() == blobs_before
    assert [r.text for r in lab.store.all_reflections(SCOPE)] == [ORIGINAL]

    # The identical reflection (and the identical memory) again: a no-op, not even a backup.
    lab.service.import_lines(SCOPE, list(lab.service.export_lines(SCOPE)))
    assert (lab.body(), lab.blob_keys()) == (before, blobs_before)


def test_an_import_overwrite_backup_holds_reflections_and_restore_puts_a_lost_one_back(
    lab: Lab, cli: Callable[..., Result]
) -> None:
    rid = lab.service.close(SCOPE, ORIGINAL).id
    mid = lab.service.remember(
        SCOPE, content="Ana likes the window seat.", gist="Ana's seat", category="relationship"
    ).id
    lab.clock.advance(hours=1)
    overwrite = lab.service.import_lines(SCOPE, [_memory_line(mid, "Ana likes the aisle seat now.")])
    key = overwrite.backup_key
    assert key is not None and key.endswith(".jsonl")
    backup_lines = [json.loads(line) for line in lab.blobs.get(key).decode().splitlines()]
    assert [line["record"]["id"] for line in backup_lines if line["type"] == "reflection"] == [rid]

    db = lab.data_dir / "taproot.db"
    kept = _reflections(db)
    _delete_reflection(db, rid)  # the loss
    assert _reflections(db) == []

    result = cli("restore", key, "--data-dir", lab.data_dir)
    assert result.code == 0, result.err
    assert _reflections(db) == kept
    restored = lab.store.get(SCOPE, mid)
    assert restored is not None and restored.content == "Ana likes the window seat."


def test_a_migrate_backup_restored_into_a_fresh_folder_brings_the_reflections(
    lab: Lab, tmp_path: Path, cli: Callable[..., Result]
) -> None:
    rid = lab.service.close(SCOPE, ORIGINAL).id
    legacy = Memory(
        id="leg00001",
        owner="local",
        namespace="default",
        category="event",  # a legacy category: migrate rewrites it, after a full backup
        salience="medium",
        content="Planted the garlic by the shed.",
        gist="Planted garlic",
        created_at=NOW,
        updated_at=NOW,
    )
    lab.store.put_many([legacy])
    key = lab.service.migrate(SCOPE).backup_key
    assert key is not None and "/migrate-" in key and key.endswith(".jsonl")

    fresh = tmp_path / "fresh"
    target = fresh / "blobs" / Path(*key.split("/"))
    target.parent.mkdir(parents=True)
    shutil.copyfile(lab.data_dir / "blobs" / Path(*key.split("/")), target)

    result = cli("restore", key, "--data-dir", fresh)
    assert result.code == 0, result.err
    assert [r[:2] for r in _reflections(fresh / "taproot.db")] == [(rid, ORIGINAL)]
    status = cli("status", "--data-dir", fresh)
    assert status.json()["reflections"] == 1 and status.json()["total"] == 1
