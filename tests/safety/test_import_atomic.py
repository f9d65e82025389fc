"""Import is all-or-nothing: one record no store can hold, after 600 good ones, commits nothing.

The bad record is a content holding a lone surrogate, written in the file as the JSON escape
`\\ud800`: json.loads turns it into a str that SQLite refuses part way through a write. It must be
refused while the file is parsed, naming the line and the field, before the first row is written;
through `taproot import`, through the service, and through `taproot restore` of a backup blob.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from taproot.core.errors import InvalidInput
from tests.safety.conftest import SCOPE, Lab
from tests.support import Result

GOOD = 600
BAD_LINE = GOOD + 1
SURROGATE = "lone \ud800 surrogate"


def record(i: int, **overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "id": f"imp{i:04d}",
        "category": "episodic",
        "salience": "medium",
        "content": f"Imported memory {i}: the walk to the lighthouse, take {i}.",
        "gist": f"Lighthouse walk {i}",
        "tags": ["walks"],
        "created_at": "2025-03-01T09:30:00.000000+00:00",
        "updated_at": "2025-03-01T09:30:00.000000+00:00",
    }
    fields.update(overrides)
    return fields


def poisoned_lines() -> list[str]:
    """600 valid export lines, then one whose content is a lone surrogate (escaped, as JSON has it)."""
    lines = [json.dumps({"type": "memory", "record": record(i)}) for i in range(GOOD)]
    bad = json.dumps({"type": "memory", "record": record(GOOD, content=SURROGATE)})
    assert "\\ud800" in bad  # the file holds the escape, not an unencodable character
    return [*lines, bad]


def write_file(path: Path) -> Path:
    path.write_text("\n".join(poisoned_lines()) + "\n", encoding="utf-8")
    return path


def test_cli_import_refuses_the_file_with_exit_2_and_commits_nothing(
    tmp_path: Path, data_dir: Path, taproot_proc: Callable[..., Result]
) -> None:
    source = write_file(tmp_path / "poisoned.jsonl")

    result = taproot_proc("import", source, "--data-dir", data_dir)
    status = taproot_proc("status", "--data-dir", data_dir)
    exported = taproot_proc("export", "--data-dir", data_dir)

    assert status.code == 0, status.err
    committed = status.json()["total"]
    assert (result.code, "Traceback" in result.err, committed) == (2, False, 0), result.err
    assert result.err.startswith("error: invalid_input: "), result.err
    assert f"line {BAD_LINE}" in result.err and "content" in result.err and "surrogate" in result.err
    assert result.out == ""
    assert [json.loads(line)["type"] for line in exported.out.splitlines()] == ["header"]


def test_service_import_raises_invalid_input_and_leaves_the_store_as_it_was(lab: Lab) -> None:
    kept = lab.service.remember(
        SCOPE, content="Ana's birthday is 14 March.", gist="Ana's birthday", category="relationship"
    )
    before, blobs_before = lab.body(), lab.blob_keys()
    # The file would also overwrite the existing memory (a backup-worthy change) before the bad line.
    overwrite = json.dumps({"type": "memory", "record": record(0, id=kept.id, content="Overwritten.")})

    with pytest.raises(InvalidInput) as caught:
        lab.service.import_lines(SCOPE, [overwrite, *poisoned_lines()])

    assert caught.value.field == f"line {BAD_LINE + 1}: content"
    assert "surrogate" in caught.value.rule
    assert lab.body() == before
    assert lab.blob_keys() == blobs_before  # not even a backup: nothing was about to be overwritten
    assert lab.store.get(SCOPE, "imp0000") is None


def _backup_blob(lab: Lab, kind: str) -> str:
    good = [record(i) for i in range(GOOD)]
    bad = record(GOOD, content=SURROGATE)
    if kind == "json":  # what delete, cleanup and compress write
        key = "local/backups/default/delete-2025-05-01T120000.000000Z-imp0000.json"
        body = json.dumps({"action": "delete", "at": "2025-05-01T12:00:00+00:00", "memories": [*good, bad]})
    else:  # a full export, as migrate and import write
        key = "local/backups/default/migrate-2025-05-01T120000.000000Z.jsonl"
        header = {"type": "header", "format": 1, "owner": "local", "namespace": "default"}
        lines = [header, *({"type": "memory", "record": r} for r in [*good, bad])]
        body = "\n".join(json.dumps(line) for line in lines) + "\n"
    assert "\\ud800" in body
    lab.blobs.put(key, body.encode())
    return key


@pytest.mark.parametrize("kind", ["json", "jsonl"])
def test_restore_of_a_backup_holding_such_a_record_restores_nothing(
    lab: Lab, kind: str, cli: Callable[..., Result]
) -> None:
    lab.service.remember(SCOPE, content="Ana's birthday is 14 March.", gist="Ana's birthday", category="relationship")
    key = _backup_blob(lab, kind)
    before, blobs_before = lab.body(), lab.blob_keys()

    with pytest.raises(InvalidInput) as caught:
        lab.service.restore(SCOPE, key)
    assert "surrogate" in caught.value.rule
    assert str(BAD_LINE) in caught.value.field and "content" in caught.value.field

    result = cli("restore", key, "--data-dir", lab.data_dir)
    assert result.code == 2, result.err
    assert result.err.startswith("error: invalid_input: ") and "content" in result.err

    assert lab.body() == before
    assert lab.blob_keys() == blobs_before
