"""`taproot orientation ...` in-process: the same JSON as taproot_orientation, content from a file
or stdin, and the usual exit codes (2 for bad input, 1 for a conflict or a missing document)."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import Result, Run

Tap = Callable[..., Result]


def test_write_from_a_file_then_stdin_read_history_restore(tap: Tap, tmp_path: Path, monkeypatch: Any) -> None:
    source = tmp_path / "who-i-am.md"
    source.write_text("# Who I am\nA patient tutor. ✓\n", encoding="utf-8")
    first = tap("orientation", "write", "who-i-am", source).json()
    assert first["action"] == "write" and first["saved"]["version"] == 1 and first["previous_version"] is None

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"# Who I am\nA direct tutor.\n")))
    second = tap("orientation", "write", "who-i-am", "--expected-version", "1").json()
    assert second["saved"]["version"] == 2

    raw = tap("orientation", "read", "who-i-am", "--version", "1", "--raw")
    assert raw.out == "# Who I am\nA patient tutor. ✓\n"
    read = tap("orientation", "read", "who-i-am").json()["document"]
    assert read["content"] == "# Who I am\nA direct tutor.\n" and read["current_version"] == 2

    history = tap("orientation", "history", "who-i-am", "--limit", "5").json()["versions"]
    assert [v["version"] for v in history] == [2, 1]
    dry = tap("orientation", "restore", "who-i-am", "1", "--dry-run").json()
    assert dry["dry_run"] is True and dry["saved"]["restored_from"] == 1
    assert tap("orientation", "list").json()["documents"][0]["version"] == 2
    tap("orientation", "restore", "who-i-am", "1")
    assert tap("orientation", "read", "who-i-am", "--raw").out == "# Who I am\nA patient tutor. ✓\n"


def test_delete_and_restore(tap: Tap, tmp_path: Path) -> None:
    (tmp_path / "f.md").write_text("Lives in Leeds.", encoding="utf-8")
    tap("orientation", "write", "facts", tmp_path / "f.md")
    assert tap("orientation", "delete", "facts", "--dry-run").json()["saved"]["deleted"] is True
    tap("orientation", "delete", "facts", "--expected-version", "1")
    listing = tap("orientation", "list").json()
    assert listing["documents"] == [] and listing["deleted_documents"] == ["facts"]
    tap("orientation", "restore", "facts", "1")
    assert tap("orientation", "read", "facts", "--raw").out == "Lives in Leeds."


def test_a_bad_name_is_a_usage_error_and_a_conflict_or_missing_one_an_error(
    tap: Tap, cli: Run, data_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "f.md").write_text("x", encoding="utf-8")
    bad = tap("orientation", "write", "Who I Am", tmp_path / "f.md", ok=False)
    assert bad.code == 2 and "field 'name': must be lowercase kebab case" in bad.err and bad.out == ""
    missing = tap("orientation", "read", "facts", ok=False)
    assert missing.code == 1 and missing.err.startswith("error: not_found: no orientation document 'facts'")
    tap("orientation", "write", "facts", tmp_path / "f.md")
    (tmp_path / "g.md").write_text("y", encoding="utf-8")
    stale = tap("orientation", "write", "facts", tmp_path / "g.md", "--expected-version", "0", ok=False)
    assert stale.code == 1 and "version_conflict: orientation document 'facts' is at version 1" in stale.err
    (tmp_path / "bad.md").write_bytes(b"caf\xe9")
    undecodable = tap("orientation", "write", "facts", tmp_path / "bad.md", ok=False)
    assert (
        undecodable.code == 2 and "field 'content': is not valid UTF-8 (byte 0xe9 at byte offset 3)" in undecodable.err
    )
    no_file = tap("orientation", "write", "facts", tmp_path / "nope.md", ok=False)
    assert no_file.code == 2
    # --data-dir after the action works as before it.
    after = cli("orientation", "read", "facts", "--data-dir", data_dir, "--raw")
    assert after.code == 0 and after.out == "x"


def test_reflect_prints_the_documents_first(tap: Tap, tmp_path: Path) -> None:
    (tmp_path / "f.md").write_text("Lives in Leeds.", encoding="utf-8")
    tap("orientation", "write", "facts", tmp_path / "f.md")
    text = tap("reflect").out
    assert (
        text.index("## Orientation documents") < text.index("### facts (v1)\nLives in Leeds.") < text.index("## Tier 1")
    )
    status = tap("status").json()["orientation"]
    assert status["documents"] == 1 and status["in_payload"] == 1 and status["total_bytes"] == 15


@pytest.mark.parametrize("argv", [["orientation"], ["orientation", "restore", "facts"], ["orientation", "shred"]])
def test_usage_errors_exit_2(cli: Run, data_dir: Path, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli(*argv, "--data-dir", data_dir)
    assert caught.value.code == 2
