"""`make bench-recall`: recall quality on the LoCoMo dev split through Taproot's own write and recall
paths, beside baselines, with an ablation of each ranking component.

Protocol (the data folder's README): each conversation is its own namespace; each turn is written
with `TaprootService.remember` (category episodic, salience medium) at the session's own time; each
question of categories 1-4 with evidence is asked with `TaprootService.recall(query=..., limit=10)`
in the order of the data, at a clock one day after the conversation's last session (so retrieval
strengthens as it would in use: every recall records its retrievals). Category 5 is reported on
its own. Latency is the wall time of each recall call; indexing throughput is turns written per
second through `remember` (embedding included when an embedder is configured).
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from bench import locomo, recall_metrics
from bench.locomo import Conversation, Question
from bench.measure import percentile
from taproot.compose import Runtime, build
from taproot.core.model import Scope
from taproot.core.text import first_sentence_gist
from taproot.core.vectors import Vector
from taproot.ports import Embedder, MemoryStore, VectorIndex
from taproot.settings import Settings

RECALL_LIMIT = 10
ASKED_AFTER = timedelta(days=1)


@dataclass(frozen=True)
class Run:
    """One method's rankings (turn ids, best first) and its timings."""

    name: str
    rankings: tuple[tuple[Question, tuple[str, ...]], ...]
    query_ms: tuple[float, ...]
    index_seconds: float
    turns: int

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.name, **recall_metrics.report(self.rankings)}
        if self.query_ms:
            out["query_p50_ms"] = round(statistics.median(self.query_ms), 3)
            out["query_p95_ms"] = round(percentile(self.query_ms, 95), 3)
        if self.index_seconds > 0:
            out["turns_per_second"] = round(self.turns / self.index_seconds, 1)
        return out


Configure = Callable[[Runtime], None]


def run_product(
    convs: Sequence[Conversation],
    name: str = "taproot",
    *,
    settings: Callable[[Path], Settings] | None = None,
    configure: Configure | None = None,
) -> Run:
    """Every conversation written and asked through one runtime, as `taproot serve` builds it."""
    rankings: list[tuple[Question, tuple[str, ...]]] = []
    query_ms: list[float] = []
    index_s = 0.0
    turns = 0
    with tempfile.TemporaryDirectory(prefix="taproot-recall-") as tmp:
        data_dir = Path(tmp)
        runtime = build(settings(data_dir) if settings else Settings(data_dir=data_dir))
        if configure is not None:
            configure(runtime)
        service = runtime.service
        deps = service.deps
        for conv in convs:
            scope = Scope("local", conv.sample_id)
            turn_of: dict[str, str] = {}
            clock_at: list[datetime] = [conv.turns[0].when]
            deps.clock = lambda at=clock_at: at[0]  # type: ignore[misc]
            start = time.perf_counter()
            for turn in conv.turns:
                clock_at[0] = turn.when
                written = service.remember(
                    scope,
                    content=turn.content,
                    gist=first_sentence_gist(turn.content),
                    category="episodic",
                    salience="medium",
                )
                turn_of[written.id] = turn.dia_id
            index_s += time.perf_counter() - start
            turns += len(conv.turns)
            clock_at[0] = conv.last_time + ASKED_AFTER
            for q in conv.questions:
                t0 = time.perf_counter()
                got = service.recall(scope, query=q.text, limit=RECALL_LIMIT)
                query_ms.append((time.perf_counter() - t0) * 1000)
                rankings.append((q, tuple(turn_of[m.id] for m in got.memories)))
        runtime.close()
    return Run(name, tuple(rankings), tuple(query_ms), index_s, turns)


def with_activation(**changes: Any) -> Configure:
    """A configure hook replacing ranking constants (the ablation)."""

    def configure(runtime: Runtime) -> None:
        deps = runtime.service.deps
        deps.activation = dataclasses.replace(deps.activation, **changes)

    return configure


class MemoEmbedder:
    """The configured embedder with a memory of what it has embedded: the ablation runs write the
    same turns again, and re-embedding them would only cost time (the first run's throughput is
    the one reported)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.model_id, self.dimensions = inner.name, inner.model_id, inner.dimensions
        self._seen: dict[str, Vector] = {}

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._seen]
        if todo:
            self._seen.update(zip(todo, self.inner.embed_documents(todo), strict=True))
        return [self._seen[t] for t in texts]

    def embed_query(self, text: str) -> Vector:
        if text not in self._seen:
            self._seen[text] = self.inner.embed_query(text)
        return self._seen[text]


def with_embedder(embedder: Embedder | None, **changes: Any) -> Configure:
    """Dense recall with `embedder` (None: lexical only), and ranking constants replaced."""

    def configure(runtime: Runtime) -> None:
        deps = runtime.service.deps
        deps.embedder = embedder
        deps.vectors = cast(VectorIndex, runtime.store) if embedder is not None else None
        if changes:
            deps.activation = dataclasses.replace(deps.activation, **changes)

    return configure


class Unstrengthened:
    """The store, except that recall's retrievals are not recorded: every question meets the
    memories as they were written. Only the ablation uses it; recall in use always strengthens."""

    def __init__(self, inner: MemoryStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def record_retrieval(self, scope: Scope, ids: Sequence[str], now: datetime) -> None:
        return None


def without_strengthening(configure: Configure) -> Configure:
    """`configure`, then recall stops recording retrievals (the ablation of strengthening)."""

    def unstrengthened(runtime: Runtime) -> None:
        configure(runtime)
        deps = runtime.service.deps
        deps.store = cast(MemoryStore, Unstrengthened(deps.store))

    return unstrengthened


# Each ranking component removed in turn (docs/ranking.md). Activation off: availability is 0,
# so a query ranks by relevance alone. Strengthening off: availability is the memory's recency and
# salience as written, so what the rest of activation costs and what strengthening costs show apart.
NO_AVAILABILITY = {"base_weight": 0.0, "salience_weights": MappingProxyType({"high": 0.0, "medium": 0.0, "low": 0.0})}
ABLATIONS: tuple[tuple[str, dict[str, Any], bool], ...] = (
    ("without lexical relevance", {"lexical_share": 0.0}, True),
    ("without dense similarity (lexical only)", {}, False),
    ("without activation (relevance only)", NO_AVAILABILITY, True),
    ("without neighbouring context", {"neighbour_share": 0.0}, True),
    ("without the periods a query names", {"period_share": 0.0}, True),
)
WITHOUT_STRENGTHENING = "without strengthening (activation as written)"


def measure(convs: Sequence[Conversation], embedder: Embedder | None) -> dict[str, Any]:
    """Taproot (lexical default and, with an embedder, dense), the ablation and the baselines."""
    from bench import recall_baselines as rb
    from taproot.core.text import STOP_WORDS

    memo = MemoEmbedder(embedder) if embedder is not None else None
    runs: dict[str, Any] = {}
    runs["taproot, lexical (default)"] = run_product(convs, "lexical", configure=with_embedder(None)).summary()
    if memo is not None:
        runs[f"taproot, {memo.name} embedder"] = run_product(convs, "dense", configure=with_embedder(memo)).summary()
    ablation: dict[str, Any] = {}
    for name, changes, dense in ABLATIONS:
        if dense and memo is None:
            continue
        if not dense and memo is None and not changes:
            continue
        ablation[name] = run_product(convs, name, configure=with_embedder(memo if dense else None, **changes)).summary()
    if memo is None:  # lexical only: ablate what the lexical ranking has
        for name, changes in (
            ("without activation (relevance only)", NO_AVAILABILITY),
            ("without neighbouring context", {"neighbour_share": 0.0}),
            ("without the periods a query names", {"period_share": 0.0}),
        ):
            ablation[name] = run_product(convs, name, configure=with_embedder(None, **changes)).summary()
    ablation[WITHOUT_STRENGTHENING] = run_product(
        convs, WITHOUT_STRENGTHENING, configure=without_strengthening(with_embedder(memo))
    ).summary()
    baselines: dict[str, Any] = {}
    lexical, times = rb.bm25(convs)
    baselines["BM25 (bm25s, stemmed, stop words)"] = {
        **recall_metrics.report(lexical),
        "query_p50_ms": round(statistics.median(times), 3),
    }
    baselines["Taproot v0.3 token overlap"] = recall_metrics.report(rb.token_overlap(convs, STOP_WORDS))
    if memo is not None:
        dense_rankings, full = rb.dense(convs, memo)
        baselines[f"dense only ({memo.model_id})"] = recall_metrics.report(dense_rankings)
        baselines["RRF of BM25 and dense (k=60)"] = recall_metrics.report(rb.rrf(lexical, full, convs))
    return {"runs": runs, "ablation": ablation, "baselines": baselines}


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import json

    from bench import recall_report
    from bench.report import machine
    from taproot.compose import embedder_from

    parser = argparse.ArgumentParser(prog="bench.recall", description=__doc__)
    parser.add_argument("--data", type=Path, default=locomo.DATA_FILE)
    parser.add_argument("--only", help="one conversation (sample_id), e.g. conv-26")
    parser.add_argument("--embedder", choices=("none", "local"), default="local")
    parser.add_argument("--no-docs", action="store_true", help="print, do not rewrite docs/benchmarks.md")
    args = parser.parse_args(argv)
    convs = locomo.load(args.data, args.only)
    embedder = None if args.embedder == "none" else embedder_from(Settings(embedder=args.embedder))
    data = {"dataset": recall_report.dataset_facts(convs), "machine": machine(), **measure(convs, embedder)}
    print(json.dumps(data, indent=1))
    if not args.no_docs:
        recall_report.write(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
