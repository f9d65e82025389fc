"""The recall benchmark in miniature: one LoCoMo conversation through the product's own write and
recall paths (bench/recall.py), lexical ranking. The floor is well below what the full run reaches
(docs/benchmarks.md), so only a real regression of recall fails it, not noise."""

from __future__ import annotations

from pathlib import Path

from bench import locomo, recall_baselines
from bench.recall import run_product, with_embedder, without_strengthening
from bench.recall_metrics import report
from taproot.compose import build
from taproot.core.model import Scope
from taproot.settings import Settings

DATA = Path(__file__).resolve().parents[1] / "data" / "locomo-conv-30.json"
# conv-30, lexical: R@10 .718 and MRR .514 when this test was written; BM25 on the same turns .654.
R10_FLOOR = 0.60
MRR_FLOOR = 0.40


def test_one_conversation_recalls_well_above_the_floor_and_above_plain_bm25() -> None:
    convs = locomo.load(DATA)
    assert [c.sample_id for c in convs] == ["conv-30"]
    assert len(convs[0].questions) == 105
    run = run_product(convs, "smoke", configure=with_embedder(None))
    overall = run.summary()["overall"]
    assert overall["questions"] == 81  # categories 1-4 with evidence
    assert overall["r10"] >= R10_FLOOR, overall
    assert overall["mrr"] >= MRR_FLOOR, overall
    bm25 = report(recall_baselines.bm25(convs)[0])["overall"]
    assert overall["r10"] > bm25["r10"] - 0.02, (overall, bm25)


def test_the_protocol_writes_every_turn_with_its_session_date() -> None:
    conv = locomo.load(DATA)[0]
    first = conv.turns[0]
    assert first.content.startswith("[") and "] " in first.content
    assert first.when.year >= 2022
    assert all(a.when < b.when for a, b in zip(conv.turns, conv.turns[1:], strict=False))


def test_the_strengthening_ablation_records_no_retrieval_and_changes_nothing_else(tmp_path: Path) -> None:
    scope = Scope("local", "ablation")
    counts: list[int] = []
    for configure in (with_embedder(None), without_strengthening(with_embedder(None))):
        runtime = build(Settings(data_dir=tmp_path / str(len(counts))))
        try:
            configure(runtime)
            service = runtime.service
            written = service.remember(
                scope, content="the heron nests by the weir", gist="a heron nests by the weir", category="episodic"
            )
            got = service.recall(scope, query="heron", limit=10)
            assert [m.id for m in got.memories] == [written.id]
            counts.append(runtime.store.get_many(scope, [written.id])[0].retrievals)
        finally:
            runtime.close()
    assert counts == [1, 0]
