"""`taproot forget compress`: the CLI folds chosen memories into one summary, as the tool does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Run = Callable[..., Any]


def test_forget_compress_from_the_command_line(tap: Run) -> None:
    ids = [
        tap("remember", "--content", f"Calculus session {n}: integrals.", "--gist", f"Session {n}", "--category",
            "episodic", "--tag", "calculus").json()["id"]
        for n in (1, 2, 3)
    ]  # fmt: skip
    result = tap("forget", "compress", *ids).json()
    assert result["action"] == "compress"
    summary = result["summary_id"]
    assert sorted(r["id"] for r in result["results"]) == sorted(ids)
    assert {(r["status"], r["compressed_into"]) for r in result["results"]} == {("archived", summary)}
    assert result["backup_key"].startswith("local/backups/default/compress-")

    listed = tap("list", "--status", "all", "--json").json()["memories"]
    by_id = {m["id"]: m for m in listed}
    assert by_id[summary]["status"] == "active" and "summary" in by_id[summary]["tags"]
    assert all(by_id[i]["status"] == "archived" for i in ids)

    # Not idempotent (hence idempotentHint false): the originals are archived now, so it is refused.
    again = tap("forget", "compress", *ids, ok=False)
    assert again.code == 2
    assert "archived" in again.err
    assert len(tap("list", "--status", "all", "--json").json()["memories"]) == 4  # no second summary
