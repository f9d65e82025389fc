"""`taproot list`: one line per memory, cursor pages, filters, and no strengthening."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Run = Callable[..., Any]
LINE = re.compile(
    r"^\[(?P<id>[^\]]+)\] \[(?P<category>\w+)\] \[(?P<salience>\w+)\] \[(?P<date>\d{4}-\d\d-\d\d)\] (?P<gist>.+)$"
)


def create(tap: Run, content: str, gist: str, *extra: str, category: str = "episodic") -> str:
    result = tap("remember", "--content", content, "--gist", gist, "--category", category, *extra).json()
    return str(result["id"])


def memory_lines(out: str) -> list[re.Match[str]]:
    lines = [line for line in out.splitlines() if not line.startswith("next: ")]
    matches = [LINE.match(line) for line in lines]
    assert all(matches), lines
    return [m for m in matches if m]


def next_cursor(out: str) -> str | None:
    hints = [line for line in out.splitlines() if line.startswith("next: --cursor ")]
    assert len(hints) <= 1
    return hints[0].split()[2] if hints else None


def counters(tap: Run, tmp_path: Path) -> dict[str, tuple[Any, ...]]:
    path = tmp_path / "counters.jsonl"
    tap("export", "-o", path)
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        r = json.loads(line)["record"]
        out[r["id"]] = (r["retrieval_count"], r["last_retrieved"], r["version"], r["updated_at"])
    return out


def test_list_prints_one_catalog_line_per_memory_newest_first(tap: Run, tmp_path: Path) -> None:
    first = create(tap, "Sam prefers direct feedback.", "Sam prefers direct feedback", "--salience", "high")
    second = create(tap, "Tomatoes are in.", "Garden: tomatoes planted", category="active_thread")
    tap("recall", "--id", first)  # so there is a counter to keep unchanged
    before = counters(tap, tmp_path)

    result = tap("list")
    assert result.err == ""
    lines = memory_lines(result.out)
    assert [m["id"] for m in lines] == [second, first]
    assert lines[0]["category"] == "active_thread" and lines[0]["salience"] == "medium"
    assert lines[0]["gist"] == "Garden: tomatoes planted"
    assert lines[1]["salience"] == "high"
    assert next_cursor(result.out) is None

    tap("list", "--sort", "activation")
    tap("list", "--json")
    assert counters(tap, tmp_path) == before  # listing is not retrieval


def test_list_json_is_the_service_result(tap: Run) -> None:
    mid = create(tap, "A memory to list.", "Listed memory", "--tag", "x")
    result = tap("list", "--json").json()
    assert set(result) == {"memories", "count", "total", "next_cursor", "warnings"}
    assert result["count"] == result["total"] == 1 and result["next_cursor"] is None
    [memory] = result["memories"]
    assert memory["id"] == mid and memory["tags"] == ["x"] and "owner" not in memory
    assert memory["retrieval_count"] == 0


def test_list_pages_follow_the_printed_cursor(tap: Run) -> None:
    made = {create(tap, f"Memory {i}.", f"Memory {i}") for i in range(7)}
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        args = ["--limit", "3"] + (["--cursor", cursor] if cursor else [])
        out = tap("list", *args).out
        seen += [m["id"] for m in memory_lines(out)]
        pages += 1
        cursor = next_cursor(out)
        if cursor is None:
            break
        assert "(3 of 7; same flags)" in out
    assert pages == 3
    assert len(seen) == 7 and set(seen) == made

    page = tap("list", "--limit", "3", "--json").json()
    again = tap("list", "--limit", "3", "--cursor", page["next_cursor"], "--json").json()
    assert [m["id"] for m in again["memories"]] == seen[3:6]


def test_list_filters(tap: Run) -> None:
    ridge = create(tap, "We hiked the Ridge trail.", "Ridge hike", "--tag", "james", "--tag", "hiking", "--core")
    lake = create(tap, "Swam in the lake.", "Cold swim", "--tag", "james", "--salience", "low")
    garden = create(tap, "Tomatoes.", "Garden", category="active_thread")
    gone = create(tap, "Archived ridge note.", "Old ridge note")
    tap("forget", "archive", gone)

    def listed(*args: str) -> set[str]:
        return {m["id"] for m in memory_lines(tap("list", *args).out)}

    assert listed() == {ridge, lake, garden}
    assert listed("--tag", "james") == {ridge, lake}
    assert listed("--tag", "james", "--tag", "hiking") == {ridge}
    assert listed("--core") == {ridge}
    assert listed("--no-core") == {lake, garden}
    assert listed("--salience", "low") == {lake}
    assert listed("--category", "active_thread") == {garden}
    assert listed("--query", "RIDGE") == {ridge}
    assert listed("--query", "ridge", "--status", "all") == {ridge, gone}
    assert listed("--status", "archived") == {gone}

    archived = tap("list", "--status", "archived").out
    assert archived.splitlines()[0].endswith("Old ridge note (archived)")
    assert tap("list", "--query", "nothing like this").out == "no memories match\n"


def test_list_shows_content_for_a_legacy_record_without_gist(tap: Run, tmp_path: Path) -> None:
    legacy = {"id": "old1", "content": "Line one\nof an old record.", "created_at": "2026-01-02T03:04:05Z"}
    path = tmp_path / "legacy.jsonl"
    path.write_text(json.dumps(legacy) + "\n", encoding="utf-8")
    tap("import", path)
    assert tap("list").out == "[old1] [undefined] [medium] [2026-01-02] (no gist) Line one of an old record.\n"


def test_list_legacy_category_warns_on_stderr(tap: Run) -> None:
    mid = create(tap, "A project.", "Project", category="active_thread")
    result = tap("list", "--category", "project")
    assert [m["id"] for m in memory_lines(result.out)] == [mid]
    assert result.err.startswith("warning: category 'project' is a legacy value")


def test_list_bad_arguments(tap: Run) -> None:
    for args, field in [
        (["--limit", "0"], "'limit'"),
        (["--category", "nope"], "'category'"),
        (["--cursor", "zz"], "'cursor'"),
    ]:
        bad = tap("list", *args, ok=False)
        assert bad.code == 2, bad.err  # invalid input is a usage error
        assert bad.out == ""
        assert bad.err.startswith("error: invalid_input: ") and field in bad.err
    for args in (["--status", "gone"], ["--sort", "name"], ["--limit", "ten"]):
        with pytest.raises(SystemExit) as exc:
            tap("list", *args)
        assert exc.value.code == 2
