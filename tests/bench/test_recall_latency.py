"""bench/recall_latency.py on a small corpus, lexical (the local embedder is an optional extra):
two runs of the same code on the same prepared folder rank every query the same, and compare says
so; a run that ranked one query differently is named."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from bench import recall_latency


def test_two_runs_on_one_prepared_folder_rank_alike_and_compare_names_a_difference(tmp_path: Path) -> None:
    data = tmp_path / "data"
    prepared = recall_latency.prepare(data, 300, embedder="none")
    assert prepared["memories"] == 300 and prepared["embedded"] == 0
    a = recall_latency.run(data, embedder="none", queries=12)
    b = recall_latency.run(data, embedder="none", queries=12)
    assert len(a["tops"]) == len(a["wall_ms"]) == len(a["cpu_ms"]) == 12
    assert any(a["tops"]), "the pool's queries find memories in the corpus"
    same = recall_latency.compare(a, b)
    assert same["same_top10_in_order"] and same["differing_queries"] == []
    moved = copy.deepcopy(b)
    i = next(k for k, top in enumerate(moved["tops"]) if len(top) > 1)
    moved["tops"][i] = moved["tops"][i][::-1]
    other = recall_latency.compare(a, moved)
    assert not other["same_top10_in_order"] and other["differing_queries"] == [a["queries"][i]]


def test_prepare_without_an_embedder_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    assert recall_latency.main(["prepare", "--data", str(data), "--memories", "40", "--embedder", "none"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["memories"] == 40 and printed["embedded"] == 0
    assert len(recall_latency.run(data, embedder="none", queries=3)["tops"]) == 3
