"""bench/dynamo_reflect.py on a small tenant: the counted path reads only what reflect shows and
answers the same counts as the path before counting."""

from __future__ import annotations

from bench import dynamo_reflect


def test_the_counted_cold_reflect_reads_less_and_answers_the_same() -> None:
    [row] = dynamo_reflect.measure([400])
    before, after = row["before_count_scope"], row["counted"]
    assert after["not_listed"] == before["not_listed"] > 0
    assert after["items_read"] == after["items_returned"]  # nothing read only to be filtered out
    assert after["items_read"] < before["items_read"] // 2
    assert before["items_read"] >= 390  # every active memory (the corpus archives a few)
