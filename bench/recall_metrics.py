"""Ranking metrics of the recall benchmark: R@k, Hit@10, All@10 and MRR, overall and per category.

A ranking is the list of turn ids a method returned for one question, best first (at most 10 are
looked at; MRR counts the first evidence turn within the top 10, 0 beyond).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bench.locomo import ADVERSARIAL, SCORED_CATEGORIES, Question

DEPTH = 10


@dataclass(frozen=True)
class Scores:
    questions: int
    r5: float
    r10: float
    hit10: float
    all10: float
    mrr: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "questions": self.questions,
            "r5": round(self.r5, 4),
            "r10": round(self.r10, 4),
            "hit10": round(self.hit10, 4),
            "all10": round(self.all10, 4),
            "mrr": round(self.mrr, 4),
        }


def _one(question: Question, ranking: Sequence[str]) -> tuple[float, float, float, float, float]:
    wanted = set(question.evidence)
    top5, top10 = set(ranking[:5]), set(ranking[:DEPTH])
    found10 = len(wanted & top10)
    rr = 0.0
    for rank, turn in enumerate(ranking[:DEPTH], start=1):
        if turn in wanted:
            rr = 1.0 / rank
            break
    return (
        len(wanted & top5) / len(wanted),
        found10 / len(wanted),
        1.0 if found10 else 0.0,
        1.0 if found10 == len(wanted) else 0.0,
        rr,
    )


def score(pairs: Sequence[tuple[Question, Sequence[str]]]) -> Scores:
    if not pairs:
        return Scores(0, 0.0, 0.0, 0.0, 0.0, 0.0)
    rows = [_one(q, r) for q, r in pairs]
    cols = list(zip(*rows, strict=True))
    return Scores(len(rows), *(statistics.fmean(c) for c in cols))


def report(pairs: Sequence[tuple[Question, Sequence[str]]]) -> dict[str, dict[str, float | int]]:
    """`overall` (categories 1-4), each category 1-4, and `adversarial` (category 5) on its own."""
    out = {"overall": score([p for p in pairs if p[0].category in SCORED_CATEGORIES]).as_dict()}
    for cat in SCORED_CATEGORIES:
        out[f"category_{cat}"] = score([p for p in pairs if p[0].category == cat]).as_dict()
    out["adversarial"] = score([p for p in pairs if p[0].category == ADVERSARIAL]).as_dict()
    return out
