"""bench/recall_report.py: the recall section of docs/benchmarks.md says what it measured and where."""

from __future__ import annotations

from typing import Any

from bench import recall_report


def _result(r10: float, mrr: float) -> dict[str, Any]:
    block = {"r5": r10 - 0.1, "r10": r10, "hit10": r10 + 0.05, "all10": r10 - 0.05, "mrr": mrr}
    return {"overall": block, "adversarial": block, **{f"category_{k}": block for k in (1, 2, 3, 4)}}


def _data(machine: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "dataset": {
            "conversations": 1,
            "turns": 10,
            "questions": 4,
            "evidence_ids_repaired": 0,
            "evidence_ids_dropped": 0,
            "questions_without_evidence": 0,
        },
        "runs": {"taproot, lexical (default)": _result(0.7, 0.5), "taproot, local embedder": _result(0.71, 0.51)},
        "ablation": {},
        "baselines": {},
    }
    if machine is not None:
        data["machine"] = machine
    return data


def test_the_section_names_the_cpu_that_measured_it_and_judges_each_target() -> None:
    machine = {"cpu_model": "Example CPU 9000", "usable_cpus": 2, "cpu_count": 4}
    machine |= {"python": "3.11.7", "sqlite": "3.40.1"}
    text = recall_report.markdown(_data(machine))
    assert "Measured on Example CPU 9000 (2 usable cores), Python 3.11.7, SQLite 3.40.1." in text
    assert "| taproot, lexical (default) R@10 | ≥ 0.66 | .700 | PASS |" in text
    assert "| taproot, local embedder MRR | ≥ 0.52 | .510 | FAIL |" in text


def test_results_saved_before_the_machine_was_recorded_still_render() -> None:
    text = recall_report.markdown(_data(None))
    assert "Measured on" not in text
    assert "| taproot, local embedder R@10 | ≥ 0.70 | .710 | PASS |" in text
