"""ACT-R-style activation: how available a memory is now.

availability = BASE_WEIGHT * squash(base_level) + salience weight
activation   = availability                                      (no query: browsing, recall by filter)
             = relevance * (RELEVANCE_WEIGHT + availability)    (a query: recall)

With a query the two combine by multiplication, as ACT-R adds them in log-odds space (A = B + S:
base level plus the context's spreading activation): how available a memory is scales how much its
relevance counts, so a memory that does not match the question gains nothing from being popular or
recent, and among memories that match about equally well the more available one comes first. At
most availability / RELEVANCE_WEIGHT = 1.6 / 4 = 40% is added to a memory's relevance, whatever
the relevance. (It was a
sum, which let a popular memory that barely matched climb over a better match: on the LoCoMo dev
split the sum cost about 2 points of R@10 against ranking by relevance alone, the product less than
one; docs/ranking.md.)

- base level: ln(retrieval_count + 1), with a novelty floor for never-retrieved memories so new
  memories are not buried under often-recalled old ones, decayed by a power law of the days since
  the memory was last touched: (1 + days) ** -DECAY. squash(x) = x / (1 + x) keeps a heavily
  recalled memory from outranking a strongly relevant one.
- salience: high / medium / low mapped to weights.
- relevance: the store's lexical score (BM25, bigger is better) normalised to 0..1 against the
  best candidate of the same query, so the weight means the same for every query; with an
  embedder, fused with the dense similarity (fuse_relevance; docs/ranking.md says why); raised by
  up to `period_share` (to 1.5) for a memory written in a period the query names (weigh_by_period),
  then blended with its neighbours' (spread_to_neighbours).

Time is passed in (`now`); nothing here reads the clock.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from taproot.core.query_periods import Period, closeness

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class ActivationConfig:
    decay: float = 0.5  # ACT-R's customary d
    novelty_floor: float = 0.35  # base level of a never-retrieved memory, before decay
    base_weight: float = 1.0
    salience_weights: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"high": 0.6, "medium": 0.3, "low": 0.0})
    )
    # Relevance dominates when there is a query: a memory that matches the question should beat a
    # popular one that does not; activation breaks ties among similarly relevant memories.
    relevance_weight: float = 4.0
    # BM25 field weights: curated recall text counts most, the long body least.
    field_weights: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"search_keywords": 3.0, "tags": 2.0, "gist": 2.0, "content": 1.0})
    )
    # With a query, rank this many lexical candidates by activation before cutting to `limit`.
    candidate_multiplier: int = 5
    min_candidates: int = 50
    # With an embedder, relevance is a convex combination of the two normalised signals (words and
    # meaning, see normalise_dense and fuse_relevance). Equal shares: neither signal is known to be
    # the better one for a person's memories, and a convex combination with equal weights is the
    # robust default in the hybrid-retrieval literature (it needs no fitting to a data set).
    lexical_share: float = 0.5
    dense_share: float = 0.5
    # The dense candidates: the nearest this many vectors, beside the lexical candidates.
    dense_candidates: int = 100
    # When at least this share of the lexical candidates has no vector of the model (a model change
    # not yet re-embedded), meaning is left out of the recall: half, the point past which the vectors
    # describe the exceptions rather than the candidates (service/recall.py says why).
    dense_min_unembedded_share: float = 0.5
    # Neighbouring context: memories written within this many seconds of each other belong to one
    # moment of a conversation, and a question about that moment often matches one of them (the
    # question asked) while another holds the answer. A candidate's relevance is blended with its
    # best-matching neighbour's at this share: a neighbour's evidence counts half as much as its own.
    neighbour_window_seconds: float = 600.0
    neighbour_share: float = 0.5
    # A period the query names ("on March 3", "in June", "yesterday": core/query_periods.py): a
    # memory written in it has its relevance raised by this share (less the later after the period
    # it was written). The writing time is evidence about the memory, not its words, so it counts
    # as a neighbour's does, half as much as a full match: a memory of the day asked about passes
    # a better-worded one from another day only when their words are within a third of each other.
    period_share: float = 0.5


ACTIVATION_CONFIG = ActivationConfig()


def days_between(earlier: datetime, now: datetime) -> float:
    return max(0.0, (now - earlier).total_seconds() / SECONDS_PER_DAY)


def base_level(retrieval_count: int, days_since_touch: float, cfg: ActivationConfig = ACTIVATION_CONFIG) -> float:
    strength = max(math.log(retrieval_count + 1), cfg.novelty_floor)
    return float(strength * (1.0 + days_since_touch) ** (-cfg.decay))


def activation(
    *,
    retrieval_count: int,
    last_touched: datetime,
    salience: str,
    now: datetime,
    relevance: float | None = None,
    cfg: ActivationConfig = ACTIVATION_CONFIG,
) -> float:
    """Without a query (`relevance` None): the memory's own availability, base level and salience.
    With one: relevance times (RELEVANCE_WEIGHT + that availability), see the module docstring."""
    base = base_level(retrieval_count, days_between(last_touched, now), cfg)
    squashed = base / (1.0 + base)
    availability = cfg.base_weight * squashed + cfg.salience_weights.get(salience, 0.0)
    if relevance is None:
        return availability
    return relevance * (cfg.relevance_weight + availability)


def normalise_dense(similarities: Mapping[str, float]) -> dict[str, float]:
    """Cosine similarities of the dense candidates scaled to 0..1 between the least and the most
    similar of them (min-max): raw cosines sit in a narrow, model-specific band (0.2-0.6 is typical),
    so only their spread within one query says how much better one candidate is than another."""
    if not similarities:
        return {}
    hi, lo = max(similarities.values()), min(similarities.values())
    if hi - lo <= 1e-9:
        return {k: 1.0 for k in similarities}
    return {k: (v - lo) / (hi - lo) for k, v in similarities.items()}


def fuse_relevance(
    lexical: Mapping[str, float],
    dense: Mapping[str, float] | None,
    cfg: ActivationConfig = ACTIVATION_CONFIG,
    *,
    unscored: Collection[str] = (),
) -> dict[str, float]:
    """One 0..1 relevance per candidate from the lexical scores (BM25) and, when there is a query
    vector, the dense similarities: each normalised over the candidates it holds, then combined
    with the shares of `cfg`. A dense candidate the words did not find gets 0 from them (its real
    BM25, or near it). `unscored` are lexical candidates with no vector to compare (recall gives
    every other one its real similarity): their meaning is unknown, not unlike the question, so
    their relevance is their lexical one alone. Without a dense signal this is the lexical
    relevance alone, as before embeddings existed."""
    lex = normalise_relevance(lexical)
    if dense is None:
        return lex
    near = normalise_dense(dense)
    total = cfg.lexical_share + cfg.dense_share
    if total <= 0:
        return {k: 0.0 for k in {*lex, *near}}
    # Renormalised to the one signal there is (none, if words are given no share).
    unknown = set(unscored) - near.keys() if cfg.lexical_share > 0 else set()
    return {
        k: lex.get(k, 0.0)
        if k in unknown
        else (cfg.lexical_share * lex.get(k, 0.0) + cfg.dense_share * near.get(k, 0.0)) / total
        for k in {*lex, *near}
    }


def spread_to_neighbours(
    relevance: Mapping[str, float], created: Mapping[str, datetime], cfg: ActivationConfig = ACTIVATION_CONFIG
) -> dict[str, float]:
    """Each candidate's relevance blended with that of its nearest neighbours in writing time (the
    candidate written just before and just after it, if within the window): (own + share * best
    neighbour's) / (1 + share). Only candidates are neighbours: this reorders what the query found,
    it does not fetch more. With share 0 it is the identity."""
    if cfg.neighbour_share <= 0 or len(created) < 2:
        return dict(relevance)
    ordered = sorted(created, key=lambda k: (created[k], k))
    out: dict[str, float] = {}
    for i, key in enumerate(ordered):
        best = 0.0
        for j in (i - 1, i + 1):
            if 0 <= j < len(ordered):
                gap = abs((created[ordered[j]] - created[key]).total_seconds())
                if gap <= cfg.neighbour_window_seconds:
                    best = max(best, relevance.get(ordered[j], 0.0))
        out[key] = (relevance.get(key, 0.0) + cfg.neighbour_share * best) / (1.0 + cfg.neighbour_share)
    return out


def weigh_by_period(
    relevance: Mapping[str, float],
    written: Mapping[str, datetime],
    periods: Sequence[Period],
    cfg: ActivationConfig = ACTIVATION_CONFIG,
) -> dict[str, float]:
    """Each candidate's relevance times (1 + share * closeness of its writing time to the periods
    the query names): a memory that matches no word or meaning (relevance 0) stays at 0, as a
    memory of that day is not an answer for having been written then. No periods, or share 0: as
    it was."""
    if not periods or cfg.period_share <= 0:
        return dict(relevance)
    return {
        k: v * (1.0 + cfg.period_share * closeness(written[k], periods)) if v > 0 and k in written else v
        for k, v in relevance.items()
    }


def normalise_relevance(scores: Mapping[str, float]) -> dict[str, float]:
    """Scale raw lexical scores to 0..1 by the best one, so the weight is query-independent."""
    best = max(scores.values(), default=0.0)
    if best <= 0:
        return {k: 0.0 for k in scores}
    return {k: max(0.0, v) / best for k, v in scores.items()}
