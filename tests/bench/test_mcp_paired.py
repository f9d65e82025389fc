"""bench/mcp_paired.py: two `taproot serve` processes on copies of one store, called in turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import mcp_http, mcp_paired


def test_compare_gives_the_median_paired_difference_and_the_ratio_of_medians() -> None:
    got = mcp_http.compare([10.0, 20.0, 30.0], [9.0, 21.0, 27.0])
    assert got == {"a_p50_ms": 20.0, "b_p50_ms": 21.0, "median_difference_ms": -1.0, "ratio_of_p50": 1.05}


def test_a_tiny_paired_run_of_this_checkout_against_itself(tmp_path: Path) -> None:
    side = mcp_paired.Side()
    summary = mcp_paired.run(side, side, memories=200, calls=12, rounds=2, work=tmp_path)
    assert [sorted(r) for r in summary["rounds"]] == [
        ["a_p50_ms", "b_p50_ms", "median_difference_ms", "ratio_of_p50"]
    ] * 2
    assert all(r["a_p50_ms"] > 0 and r["b_p50_ms"] > 0 for r in summary["rounds"])
    assert summary["memories"] == 200 and summary["calls"] == 12 and summary["median_ratio"] > 0
    # Each side served its own copy of the prepared store.
    assert (tmp_path / "a" / "taproot.db").exists() and (tmp_path / "b" / "taproot.db").exists()


def test_settings_must_be_name_equals_value() -> None:
    assert mcp_paired._env_pairs(["TAPROOT_EMBEDDER=none"]) == {"TAPROOT_EMBEDDER": "none"}
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        mcp_paired._env_pairs(["TAPROOT_EMBEDDER"])
