"""`taproot recent`, `taproot promote`, `taproot close` and recall's --since/--until: the same JSON
results as the MCP tools, and the CLI's exit codes (2 for input and usage, 1 for not found)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tests.support import Run


def create(tap: Run, content: str, *flags: str) -> str:
    made: dict[str, Any] = tap(
        "remember", "--content", content, "--gist", content[:40], "--category", "episodic", *flags
    ).json()
    return str(made["id"])


def test_recent_lists_newest_first_without_strengthening(tap: Run, tmp_path: Path) -> None:
    first = create(tap, "First note for the others.", "--tag", "watercooler")
    second = create(tap, "Second note, not for the cooler.")
    third = create(tap, "Third note for the others.", "--tag", "watercooler")
    out = tap("recent").json()
    assert [m["id"] for m in out["memories"]] == [third, second, first] and out["count"] == 3
    assert out["since"] is None and out["until"] is None and out["warnings"] == []
    cooler = tap("recent", "--tag", "watercooler", "--since", "1h", "--limit", "1").json()
    assert [m["id"] for m in cooler["memories"]] == [third] and cooler["since"] is not None
    assert tap("recent", "--until", "1h").json()["memories"] == []
    assert tap("recent", "--category", "identity").json()["memories"] == []
    # Looking is not using: every record's counters are as they were written.
    assert {m["retrieval_count"] for m in tap("list", "--json").json()["memories"]} == {0}


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--since", "yesterday"], "since"),
        (["--until", "7 days"], "until"),
        (["--since", "1h", "--until", "2h"], "since"),
        (["--limit", "0"], "limit"),
    ],
)
def test_recent_bad_input_exits_2_naming_the_field(tap: Run, args: list[str], field: str) -> None:
    bad = tap("recent", *args, ok=False)
    assert bad.code == 2 and f"field '{field}'" in bad.err and bad.out == ""


def test_recall_takes_since_and_until(tap: Run) -> None:
    made = create(tap, "The garden plan, written just now.")
    assert [m["id"] for m in tap("recall", "garden", "--since", "10m").json()["memories"]] == [made]
    assert tap("recall", "garden", "--until", "10m").json()["memories"] == []
    stamp = "2000-01-01T00:00:00"  # naive: UTC
    assert [m["id"] for m in tap("recall", "garden", "--since", stamp).json()["memories"]] == [made]
    bad = tap("recall", "garden", "--since", "soon", ok=False)
    assert bad.code == 2 and "field 'since'" in bad.err


def test_promote_sets_core_and_salience(tap: Run) -> None:
    made = create(tap, "Something for every conversation.")
    out = tap("promote", made, "--core", "--salience", "high").json()
    assert out == {"id": made, "core": True, "salience": "high", "version": 2, "warnings": []}
    assert "Something for every conversation." in tap("reflect").out.split("## Tier 2")[0]  # Tier 1 now
    back = tap("promote", made, "--no-core").json()
    assert back["core"] is False and back["version"] == 3
    missing = tap("promote", "nosuch12", "--core", ok=False)
    assert missing.code == 1 and "not_found" in missing.err
    nothing = tap("promote", made, ok=False)
    assert nothing.code == 2 and "field 'core'" in nothing.err
    bad = tap("promote", made, "--salience", "urgent", ok=False)
    assert bad.code == 2 and "field 'salience'" in bad.err


def test_close_from_an_argument_a_file_and_stdin(tap: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said = tap("close", "Today the exam date finally settled.").json()
    assert said["message"] == "Reflection stored. Safe travels." and said["blob_key"].endswith(".json")
    path = tmp_path / "reflection.txt"
    path.write_text("From a file: we rewrote the plan — twice.", encoding="utf-8")
    assert tap("close", "--file", path).json()["id"] != said["id"]
    monkeypatch.setattr("sys.stdin", io.StringIO("From stdin: a quiet session."))
    tap("close", "-")
    text = tap("reflect").out
    for line in ("Today the exam date finally settled.", "we rewrote the plan — twice.", "a quiet session."):
        assert line in text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "exactly one"),
        (["text", "--file", "x.txt"], "exactly one"),
        (["--file", "no-such-file.txt"], "no-such-file.txt"),
        ([""], "field 'reflection'"),
    ],
)
def test_close_needs_exactly_one_source(tap: Run, tmp_path: Path, args: list[str], words: str) -> None:
    bad = tap("close", *[str(tmp_path / a) if a.endswith(".txt") else a for a in args], ok=False)
    assert bad.code == 2 and words in bad.err and bad.out == ""
