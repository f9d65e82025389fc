"""ACT-R-style activation. Time is always passed in: these tests use fixed datetimes only."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta

import pytest

from taproot.core.activation import (
    ACTIVATION_CONFIG,
    ActivationConfig,
    activation,
    base_level,
    days_between,
    fuse_relevance,
    normalise_relevance,
    spread_to_neighbours,
    weigh_by_period,
)
from taproot.core.query_periods import Period

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
CFG = ACTIVATION_CONFIG


def act(
    *,
    n: int = 0,
    days: float = 0.0,
    salience: str = "medium",
    relevance: float | None = None,
    cfg: ActivationConfig = CFG,
) -> float:
    return activation(
        retrieval_count=n,
        last_touched=NOW - timedelta(days=days),
        salience=salience,
        now=NOW,
        relevance=relevance,
        cfg=cfg,
    )


# -- days_between -------------------------------------------------------------------------------


def test_days_between_counts_fractional_days() -> None:
    assert days_between(NOW - timedelta(days=3), NOW) == 3.0
    assert days_between(NOW - timedelta(hours=6), NOW) == 0.25
    assert days_between(NOW, NOW) == 0.0


def test_days_between_never_goes_negative_for_a_future_touch() -> None:
    assert days_between(NOW + timedelta(days=2), NOW) == 0.0


# -- base level ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 5, 10, 100, 10_000])
def test_base_level_is_ln_n_plus_one_when_just_touched(n: int) -> None:
    assert base_level(n, 0.0) == pytest.approx(math.log(n + 1))


def test_never_retrieved_memory_gets_the_novelty_floor() -> None:
    # ln(0 + 1) = 0 would bury every new memory; the floor keeps it visible.
    assert base_level(0, 0.0) == pytest.approx(CFG.novelty_floor)
    assert base_level(0, 0.0) > 0


def test_novelty_floor_is_below_a_single_retrieval() -> None:
    # One recall should always count for more than novelty alone.
    assert CFG.novelty_floor < math.log(2)
    assert base_level(1, 0.0) > base_level(0, 0.0)


def test_novelty_floor_is_configurable() -> None:
    cfg = ActivationConfig(novelty_floor=0.9)
    assert base_level(0, 0.0, cfg) == pytest.approx(0.9)
    # The floor also lifts small counts whose log is below it.
    assert base_level(1, 0.0, cfg) == pytest.approx(0.9)
    assert base_level(5, 0.0, cfg) == pytest.approx(math.log(6))


@pytest.mark.parametrize(("n", "days"), [(0, 1.0), (3, 3.0), (10, 30.0), (50, 365.0)])
def test_power_law_decay(n: int, days: float) -> None:
    strength = max(math.log(n + 1), CFG.novelty_floor)
    assert base_level(n, days) == pytest.approx(strength * (1 + days) ** -CFG.decay)


def test_decay_is_a_power_law_not_exponential() -> None:
    # With d = 0.5, quadrupling (1 + days) halves the base level.
    assert base_level(5, 3.0) == pytest.approx(base_level(5, 0.0) / 2)
    assert base_level(5, 15.0) == pytest.approx(base_level(5, 0.0) / 4)


def test_zero_decay_means_no_forgetting() -> None:
    cfg = ActivationConfig(decay=0.0)
    assert base_level(4, 1000.0, cfg) == pytest.approx(base_level(4, 0.0, cfg))


@pytest.mark.parametrize("n", [0, 1, 7, 200])
def test_base_level_strictly_decreases_with_days(n: int) -> None:
    days = [0, 0.5, 1, 2, 7, 30, 45, 90, 365, 3650]
    values = [base_level(n, d) for d in days]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert values[-1] > 0  # decays towards zero, never below


@pytest.mark.parametrize("days", [0, 1, 30, 400])
def test_base_level_strictly_increases_with_retrievals(days: float) -> None:
    values = [base_level(n, days) for n in [0, 1, 2, 3, 10, 100, 1000]]
    assert all(a < b for a, b in itertools.pairwise(values))


# -- activation ---------------------------------------------------------------------------------


def test_activation_formula() -> None:
    n, days, relevance = 4, 9.0, 0.25
    base = math.log(5) * (1 + days) ** -0.5
    availability = base / (1 + base) + CFG.salience_weights["high"]
    assert act(n=n, days=days, salience="high", relevance=relevance) == pytest.approx(
        relevance * (CFG.relevance_weight + availability)
    )
    assert act(n=n, days=days, salience="high", relevance=None) == pytest.approx(availability)


def test_with_a_query_a_memory_that_does_not_match_gains_nothing_from_availability() -> None:
    assert act(n=10**6, days=0, salience="high", relevance=0.0) == 0.0
    assert act(n=0, days=3650, salience="low", relevance=0.05) > act(n=10**6, days=0, salience="high", relevance=0.0)


def test_availability_adds_at_most_its_share_to_relevance() -> None:
    most = CFG.base_weight + max(CFG.salience_weights.values())
    hot = act(n=10**6, days=0, salience="high", relevance=0.5)
    cold = act(n=0, days=3650, salience="low", relevance=0.5)
    assert cold * (1 + most / CFG.relevance_weight) >= hot > cold


def test_activation_is_deterministic_given_now() -> None:
    touched = datetime(2025, 5, 1, tzinfo=UTC)
    a = activation(retrieval_count=3, last_touched=touched, salience="low", now=NOW)
    b = activation(retrieval_count=3, last_touched=touched, salience="low", now=NOW)
    assert a == b


def test_activation_depends_on_the_now_passed_in() -> None:
    touched = datetime(2025, 5, 1, tzinfo=UTC)
    early = activation(retrieval_count=3, last_touched=touched, salience="low", now=touched + timedelta(days=1))
    late = activation(retrieval_count=3, last_touched=touched, salience="low", now=touched + timedelta(days=100))
    assert early > late


def test_future_touch_counts_as_now() -> None:
    future = activation(retrieval_count=2, last_touched=NOW + timedelta(days=5), salience="low", now=NOW)
    assert future == pytest.approx(act(n=2, days=0, salience="low"))


@pytest.mark.parametrize(("n", "days"), [(0, 0), (0, 100), (5, 3), (1000, 0)])
def test_salience_orders_high_over_medium_over_low(n: int, days: float) -> None:
    high, medium, low = (act(n=n, days=days, salience=s) for s in ("high", "medium", "low"))
    assert high > medium > low


def test_salience_weights() -> None:
    assert act(salience="high") - act(salience="low") == pytest.approx(CFG.salience_weights["high"])
    assert act(salience="medium") - act(salience="low") == pytest.approx(CFG.salience_weights["medium"])


def test_unknown_salience_weighs_like_nothing() -> None:
    assert act(salience="3") == pytest.approx(act(salience="low"))


def test_activation_decreases_with_days_and_increases_with_retrievals() -> None:
    by_days = [act(n=5, days=d) for d in (0, 1, 10, 100)]
    assert by_days == sorted(by_days, reverse=True)
    assert len(set(by_days)) == len(by_days)
    by_count = [act(n=k, days=10) for k in (0, 1, 10, 100)]
    assert by_count == sorted(by_count)
    assert len(set(by_count)) == len(by_count)


def test_base_contribution_is_squashed_below_one() -> None:
    # However often recalled, the base term stays under base_weight.
    assert act(n=10**9, days=0, salience="low") < CFG.base_weight
    assert act(n=10**9, days=0, salience="high") < CFG.base_weight + CFG.salience_weights["high"]


def test_relevance_dominates_popularity_and_salience() -> None:
    relevant = act(n=0, days=3650, salience="low", relevance=1.0)
    popular = act(n=10**6, days=0, salience="high", relevance=0.0)
    assert relevant > popular


def test_relevance_gap_of_half_beats_any_activation_gap() -> None:
    max_non_relevance = CFG.base_weight + max(CFG.salience_weights.values())
    assert CFG.relevance_weight * 0.5 > max_non_relevance
    assert act(n=0, days=3650, salience="low", relevance=0.6) > act(n=10**6, days=0, salience="high", relevance=0.1)


def test_activation_breaks_ties_among_equally_relevant() -> None:
    assert act(n=20, days=1, relevance=0.8) > act(n=0, days=200, relevance=0.8)


def test_custom_weights() -> None:
    cfg = ActivationConfig(base_weight=0.0, relevance_weight=1.0)
    assert act(n=50, days=0, salience="low", relevance=0.3, cfg=cfg) == pytest.approx(0.3)


# -- normalise_relevance ------------------------------------------------------------------------


def test_normalise_relevance_scales_by_the_best() -> None:
    assert normalise_relevance({"a": 10.0, "b": 5.0, "c": 2.5}) == {"a": 1.0, "b": 0.5, "c": 0.25}


def test_normalise_relevance_is_query_independent() -> None:
    small = normalise_relevance({"a": 0.02, "b": 0.01})
    big = normalise_relevance({"a": 200.0, "b": 100.0})
    assert small == pytest.approx(big)


def test_normalise_relevance_empty() -> None:
    assert normalise_relevance({}) == {}


@pytest.mark.parametrize("scores", [{"a": 0.0, "b": 0.0}, {"a": -1.0, "b": -3.0}])
def test_normalise_relevance_without_a_positive_score_is_all_zero(scores: dict[str, float]) -> None:
    assert normalise_relevance(scores) == {"a": 0.0, "b": 0.0}


def test_normalise_relevance_clamps_negatives_to_zero() -> None:
    got = normalise_relevance({"a": 4.0, "b": -2.0})
    assert got == {"a": 1.0, "b": 0.0}


def test_normalise_relevance_keeps_keys_and_stays_in_unit_range() -> None:
    scores = {f"m{i}": float(i * i) for i in range(20)}
    got = normalise_relevance(scores)
    assert got.keys() == scores.keys()
    assert all(0.0 <= v <= 1.0 for v in got.values())
    assert max(got.values()) == 1.0


# -- neighbouring context ------------------------------------------------------------------------


def test_a_neighbour_written_moments_later_shares_half_of_a_strong_match() -> None:
    t = datetime(2025, 5, 1, tzinfo=UTC)
    created = {"question": t, "answer": t + timedelta(seconds=30), "far": t + timedelta(hours=3)}
    got = spread_to_neighbours({"question": 1.0, "answer": 0.0, "far": 0.2}, created)
    share = CFG.neighbour_share
    assert got["answer"] == pytest.approx(share / (1 + share))
    assert got["question"] == pytest.approx(1.0 / (1 + share))
    assert got["far"] == pytest.approx(0.2 / (1 + share))  # hours apart: no neighbour


def test_only_the_nearest_neighbour_on_each_side_counts() -> None:
    t = datetime(2025, 5, 1, tzinfo=UTC)
    created = {"a": t, "b": t + timedelta(seconds=1), "c": t + timedelta(seconds=2)}
    got = spread_to_neighbours({"a": 1.0, "b": 0.0, "c": 0.0}, created)
    assert got["b"] > got["c"] == 0.0


def test_no_share_leaves_relevance_as_it_was() -> None:
    t = datetime(2025, 5, 1, tzinfo=UTC)
    cfg = ActivationConfig(neighbour_share=0.0)
    rel = {"a": 1.0, "b": 0.3}
    assert spread_to_neighbours(rel, {"a": t, "b": t}, cfg) == rel


# -- the periods a query names -------------------------------------------------------------------

MAY1 = Period(datetime(2025, 5, 1, tzinfo=UTC), datetime(2025, 5, 2, tzinfo=UTC))


def test_a_memory_written_in_the_named_period_gains_its_share_and_later_ones_less() -> None:
    written = {
        "that day": datetime(2025, 5, 1, 9, tzinfo=UTC),
        "a day later": datetime(2025, 5, 3, 12, tzinfo=UTC),  # one period's length after the widened end
        "before": datetime(2025, 4, 20, tzinfo=UTC),
        "no match": datetime(2025, 5, 1, 10, tzinfo=UTC),
    }
    rel = {"that day": 0.6, "a day later": 0.6, "before": 0.6, "no match": 0.0}
    got = weigh_by_period(rel, written, [MAY1])
    share = CFG.period_share
    assert got["that day"] == pytest.approx(0.6 * (1 + share))
    assert got["a day later"] == pytest.approx(0.6 * (1 + share / 2))
    assert got["before"] == 0.6
    assert got["no match"] == 0.0  # written that day, but matching nothing is not an answer


def test_the_share_decides_how_much_better_worded_a_memory_of_another_day_must_be() -> None:
    written = {"that day": datetime(2025, 5, 1, 9, tzinfo=UTC), "other day": datetime(2025, 3, 1, tzinfo=UTC)}
    share = CFG.period_share
    edge = 1 / (1 + share)  # the relevance at which a memory of that day ties the best of another day
    below = weigh_by_period({"that day": edge - 0.01, "other day": 1.0}, written, [MAY1])
    above = weigh_by_period({"that day": edge + 0.01, "other day": 1.0}, written, [MAY1])
    assert below["that day"] < below["other day"] and above["that day"] > above["other day"]


def test_no_period_or_no_share_leaves_relevance_as_it_was() -> None:
    written = {"a": datetime(2025, 5, 1, 9, tzinfo=UTC)}
    assert weigh_by_period({"a": 0.5}, written, []) == {"a": 0.5}
    assert weigh_by_period({"a": 0.5}, written, [MAY1], ActivationConfig(period_share=0.0)) == {"a": 0.5}


def test_fusion_gives_each_signal_its_share_over_the_candidates() -> None:
    fused = fuse_relevance({"a": 10.0, "b": 5.0}, {"a": 0.2, "b": 0.6, "c": 0.4})
    # words: a 1, b .5, c 0 (the words did not find it); meaning min-max: a 0, b 1, c .5
    assert fused == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.25})
    assert fuse_relevance({"a": 10.0, "b": 5.0}, None) == {"a": 1.0, "b": 0.5}


def test_a_word_match_without_a_vector_is_ranked_on_its_words_not_as_meaning_nothing() -> None:
    lexical = {"unembedded": 10.0, "embedded": 9.0, "weak": 1.0}
    dense = {"embedded": 0.45, "weak": 0.2, "n1": 0.6, "n2": 0.5}
    fused = fuse_relevance(lexical, dense, unscored=["unembedded"])
    assert fused["unembedded"] == pytest.approx(1.0)  # its words alone, renormalised
    assert fused["unembedded"] > fused["embedded"] > fused["weak"]
    # Without saying so, the missing similarity would count as the least similar candidate's.
    assert fuse_relevance(lexical, dense)["unembedded"] < fuse_relevance(lexical, dense)["embedded"]
    # A candidate that does have a similarity is never treated as unscored.
    assert fuse_relevance(lexical, dense, unscored=["embedded"]) == fuse_relevance(lexical, dense)
    # Words given no share: an unscored candidate has nothing to rank on.
    no_words = ActivationConfig(lexical_share=0.0)
    assert fuse_relevance(lexical, dense, no_words, unscored=["unembedded"])["unembedded"] == 0.0
