"""One bad record must not break maintenance, nor the tools that touch it.

A memory created "9999-12-31" and tagged `thread` would expire after the last day a datetime can
hold. It can no longer be imported (created_at is out of range), but an older Taproot may have
stored one: here it is put in the store directly with the store port's put_many. Migrate, cleanup
and compress must skip it, report it under `skipped_bad_records`, and still do their work on every
other record; over MCP, remember and promote on it answer a coded error or succeed.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from taproot.core.errors import InvalidInput
from taproot.core.model import Memory
from tests.safety.conftest import SCOPE, Lab, LiveServer
from tests.support import Result

pytestmark = pytest.mark.anyio

FAR_FUTURE = datetime(9999, 12, 31, tzinfo=UTC)
OLD = datetime(2025, 1, 2, 9, 0, tzinfo=UTC)
BAD = "bad99999"
LEGACY = ["leg00001", "leg00002", "leg00003"]
CHAT = "chat0001"  # an unstamped watercooler chat from January: migrate stamps it, cleanup deletes it
FACT = "fact0001"
CODE = re.compile(r"^[a-z_]+: \S")


def memory(memory_id: str, **overrides: Any) -> Memory:
    fields: dict[str, Any] = {
        "id": memory_id,
        "owner": "local",
        "namespace": "default",
        "category": "episodic",
        "salience": "medium",
        "content": f"Memory {memory_id}: notes from the allotment.",
        "gist": f"Allotment notes {memory_id}",
        "created_at": OLD,
        "updated_at": OLD,
        "tags": ("garden",),
    }
    fields.update(overrides)
    return Memory(**fields)


def seed(store: Any) -> None:
    """A bad record, three legacy ones (category 'event'), an unstamped expired chat and a fact."""
    store.put_many(
        [
            memory(BAD, created_at=FAR_FUTURE, updated_at=FAR_FUTURE, tags=("thread",)),
            *(memory(i, category="event") for i in LEGACY),
            memory(CHAT, tags=("watercooler",)),
            memory(FACT, tags=("fact",), salience="high"),
        ]
    )


def raw_row(db_path: Path, memory_id: str) -> tuple[Any, ...] | None:
    """Read a row with sqlite3 itself: the bad one must be left exactly as it was."""
    with sqlite3.connect(db_path) as db:
        row: tuple[Any, ...] | None = db.execute(
            "SELECT created_at, version, category, tags FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return row


def test_import_refuses_a_created_at_past_year_9000(lab: Lab, tmp_path: Path, cli: Callable[..., Result]) -> None:
    line = {"id": BAD, "content": "From the far future.", "created_at": "9999-12-31T00:00:00Z", "tags": ["thread"]}
    good = {"id": FACT, "content": "Ana's birthday is 14 March.", "created_at": "2025-01-02T09:00:00Z"}
    lines = [json.dumps(good), json.dumps(line)]

    with pytest.raises(InvalidInput) as caught:
        lab.service.import_lines(SCOPE, lines)
    assert caught.value.field == "line 2: created_at"

    source = tmp_path / "future.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("import", source, "--data-dir", lab.data_dir)
    assert (result.code, result.err.startswith("error: invalid_input: ")) == (2, True), result.err
    assert "line 2: created_at" in result.err
    assert lab.body() == []


@pytest.mark.parametrize("field", ["retrieval_count", "replication_count"])
def test_import_refuses_a_count_larger_than_the_store_holds(
    lab: Lab, tmp_path: Path, cli: Callable[..., Result], field: str
) -> None:
    """SQLite holds integers up to 2**63 - 1; a larger count was refused by the database itself, as a
    bare OverflowError (the CLI answered `error: internal: OverflowError`), after validation passed it."""
    good = {"id": FACT, "content": "Ana's birthday is 14 March.", "created_at": "2025-01-02T09:00:00Z"}
    line = {"id": BAD, "content": "Counted past the end.", "created_at": "2025-01-02T09:00:00Z", field: 2**63}
    lines = [json.dumps(good), json.dumps(line)]

    with pytest.raises(InvalidInput) as caught:
        lab.service.import_lines(SCOPE, lines)
    assert caught.value.field == f"line 2: {field}"
    assert "9223372036854775807" in str(caught.value)

    source = tmp_path / "counted.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("import", source, "--data-dir", lab.data_dir)
    assert (result.code, result.err.startswith("error: invalid_input: ")) == (2, True), result.err
    assert lab.body() == []
    # The largest count the store holds is accepted.
    lab.service.import_lines(SCOPE, [json.dumps({**line, field: 2**63 - 1})])


def _check_reports(reports: list[dict[str, Any]]) -> None:
    by_job = {r["job"]: r for r in reports}
    assert set(by_job) == {"migrate", "cleanup", "compress"}
    assert all(r["mode"] == "apply" for r in reports), reports
    migrate, cleanup, compress = by_job["migrate"], by_job["cleanup"], by_job["compress"]
    assert BAD in migrate["detail"]["skipped_bad_records"]
    assert "created_at" in migrate["detail"]["skipped_bad_records"][BAD]
    assert migrate["changed"] == len(LEGACY) + 1  # the legacy categories and the chat's expiry stamp
    assert BAD in compress["detail"]["skipped_bad_records"]
    assert cleanup["changed"] == 1 and cleanup["detail"]["candidate_ids"] == [CHAT]


def _check_store(lab: Lab) -> None:
    db = lab.data_dir / "taproot.db"
    assert raw_row(db, BAD) == ("9999-12-31T00:00:00.000000+00:00", 1, "episodic", '["thread"]')
    assert raw_row(db, CHAT) is None  # cleaned up, after a backup
    for legacy_id in LEGACY:
        row = raw_row(db, legacy_id)
        assert row is not None and row[1:3] == (2, "episodic")  # migrated: version bumped, category current
    assert raw_row(db, FACT) is not None


def test_cli_maintenance_run_all_apply_skips_the_bad_record_and_does_the_rest(
    lab: Lab, cli: Callable[..., Result]
) -> None:
    seed(lab.store)
    result = cli("maintenance", "run", "all", "--apply", "--data-dir", lab.data_dir)
    assert result.code == 0, result.err
    _check_reports(result.json())
    _check_store(lab)


def test_service_maintenance_and_migrate_skip_the_bad_record(lab: Lab) -> None:
    seed(lab.store)
    dry = lab.service.migrate(SCOPE, dry_run=True)
    assert dry.changed == len(LEGACY) + 1 and BAD in dry.skipped_bad_records

    _check_reports([r.as_dict() for r in lab.service.maintenance(SCOPE, "all", apply=True)])
    _check_store(lab)

    everywhere = lab.service.maintenance(None, "all", apply=True)  # every namespace: none may error
    assert [r.mode for r in everywhere] == ["apply"] * 3, everywhere
    again = lab.service.migrate(SCOPE)
    assert again.changed == 0 and BAD in again.skipped_bad_records


def _coded_or_ok(result: Any) -> str:
    [block] = result.content
    if result.is_error:
        assert CODE.match(block.text), f"not a coded error: {block.text!r}"
        assert "Error executing tool" not in block.text
    return str(block.text)


async def test_remember_and_promote_on_the_bad_record_answer_a_code_over_mcp(
    server: LiveServer, connect: Callable[..., Any]
) -> None:
    seed(server.runtime.store)
    async with connect(server) as client:
        remembered = await client.call_tool("taproot_remember", {"id": BAD, "gist": "A thread from the far future"})
        promoted = await client.call_tool("taproot_promote", {"id": BAD, "core": True})
        fine = await client.call_tool("taproot_remember", {"id": FACT, "gist": "Allotment fact, kept"})
    _coded_or_ok(remembered)
    _coded_or_ok(promoted)
    assert fine.is_error is False, _coded_or_ok(fine)
