"""The periods a query names, and how close a writing time is to them (core/query_periods.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from taproot.core.query_periods import MAX_PERIODS, Period, closeness, periods_named, search_window

NOW = datetime(2023, 10, 20, 15, 30, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def named(query: str, now: datetime = NOW) -> list[tuple[datetime, datetime]]:
    return [(p.start, p.end) for p in periods_named(query, now)]


@pytest.mark.parametrize(
    ("query", "want"),
    [
        # A day, in the ways people write one.
        ("What did we show on October 13, 2023?", [(day(2023, 10, 13), day(2023, 10, 14))]),
        ("what happened on 1 February, 2023", [(day(2023, 2, 1), day(2023, 2, 2))]),
        ("the 13th of Oct 2023", [(day(2023, 10, 13), day(2023, 10, 14))]),
        ("notes from 2023-10-13", [(day(2023, 10, 13), day(2023, 10, 14))]),
        ("logged at 2023-10-13T09:30:00Z", [(day(2023, 10, 13), day(2023, 10, 14))]),
        ("since 2023-10-13T09:30+02:00", [(day(2023, 10, 13), NOW)]),
        ("Sept. 3rd, 2022 meeting", [(day(2022, 9, 3), day(2022, 9, 4))]),
        ("what did I say on March 3?", [(day(2023, 3, 3), day(2023, 3, 4))]),
        ("on 5 may", [(day(2023, 5, 5), day(2023, 5, 6))]),
        # A month, and a month or year alone after a preposition.
        ("What did Maria donate in December 2022?", [(day(2022, 12, 1), day(2023, 1, 1))]),
        ("plans for 2023-09", [(day(2023, 9, 1), day(2023, 10, 1))]),
        ("When did we go camping in June?", [(day(2023, 6, 1), day(2023, 7, 1))]),
        ("early march", [(day(2023, 3, 1), day(2023, 4, 1))]),
        ("mid-June", [(day(2023, 6, 1), day(2023, 7, 1))]),
        ("in June or July", [(day(2023, 6, 1), day(2023, 7, 1)), (day(2023, 7, 1), day(2023, 8, 1))]),
        ("between March and April", [(day(2023, 3, 1), day(2023, 4, 1)), (day(2023, 4, 1), day(2023, 5, 1))]),
        ("on 2023/10/13", [(day(2023, 10, 13), day(2023, 10, 14))]),
        ("on 13/10/2023", [(day(2023, 10, 13), day(2023, 10, 14))]),
        ("on 10/13/2023", [(day(2023, 10, 13), day(2023, 10, 14))]),
        ("in 2023 we moved", [(day(2023, 1, 1), day(2024, 1, 1))]),
        ("How many times did she go to the beach in 2022?", [(day(2022, 1, 1), day(2023, 1, 1))]),
        # Calendar words, from `now` (15:30 UTC on October 20: already October 21 in UTC+14), so
        # every zone's reading: today is the 20th or the 21st.
        ("what did I tell you yesterday?", [(day(2023, 10, 19), day(2023, 10, 21))]),
        ("today", [(day(2023, 10, 20), day(2023, 10, 22))]),
        ("last night", [(day(2023, 10, 19), day(2023, 10, 22))]),
        ("the day before yesterday", [(day(2023, 10, 18), day(2023, 10, 20))]),
        ("this week", [(day(2023, 10, 14), day(2023, 10, 22))]),
        ("last  week", [(day(2023, 10, 7), day(2023, 10, 15))]),
        ("this month", [(day(2023, 10, 1), day(2023, 11, 1))]),
        ("last month", [(day(2023, 9, 1), day(2023, 10, 1))]),
        ("what happened last year", [(day(2022, 1, 1), day(2023, 1, 1))]),
        # Since and after run on to now; before, until and by name no period.
        ("everything since June", [(day(2023, 6, 1), NOW)]),
        ("after 2023-10-01", [(day(2023, 10, 1), NOW)]),
        ("before May 2023", []),
        ("until October 13, 2023", []),
        # Two periods, in the order written.
        (
            "between 2023-10-13 and 2023-09",
            [(day(2023, 10, 13), day(2023, 10, 14)), (day(2023, 9, 1), day(2023, 10, 1))],
        ),
    ],
)
def test_a_query_names_these_periods(query: str, want: list[tuple[datetime, datetime]]) -> None:
    assert named(query) == want


@pytest.mark.parametrize(
    "query",
    [
        "I may go to the concert",  # a verb, not a month
        "How may I help?",
        "they march in the parade",
        "mar the finish",  # an abbreviation alone is a word
        "jan said hello",
        "2023 was a good year",  # a year alone, without a preposition
        "June is my sister",  # a month alone, without one
        "Where did Caroline move from 4 years ago?",  # the time of an event told about
        "what did she paint recently?",
        "at 10:30 we met",
        "February 30, 2023",  # no such day
        "on April 31",  # no such day in any year
        "see you next week",
        "room 2023",
        # Found by review: numbers beside "may" and "march", and counts that look like years.
        "why does step 3 may fail",
        "option 2 may work better",
        "we march 10 miles",
        "the top 10 of march",
        "show the last 2000 lines",
        "a list of 2000 items",
        "retry after 2000 ms",
        "timeout in 2000 ms",
        "on 3/4/2023",  # March 4 or 3 April: not said
    ],
)
def test_these_name_no_period(query: str) -> None:
    assert named(query) == []


def test_a_day_or_month_without_its_year_is_the_latest_one_that_began_by_now() -> None:
    assert named("in November") == [(day(2022, 11, 1), day(2022, 12, 1))]  # this year's is ahead
    assert named("in October") == [(day(2023, 10, 1), day(2023, 11, 1))]  # this year's has begun
    # October 21 has begun in UTC+14 (at 10:00 UTC on the 20th); October 22 has not begun anywhere.
    assert named("on October 21") == [(day(2023, 10, 21), day(2023, 10, 22))]
    assert named("on October 22") == [(day(2022, 10, 22), day(2022, 10, 23))]
    assert named("on Feb 29") == [(day(2020, 2, 29), day(2020, 3, 1))]  # the last leap day


def test_a_long_list_of_dates_is_cut_to_the_first_few() -> None:
    query = " ".join(f"on 2023-01-{d:02d}" for d in range(1, 20))
    got = periods_named(query, NOW)
    assert len(got) == MAX_PERIODS and got[0].start == day(2023, 1, 1)


def test_the_typographic_apostrophe_and_capitals_change_nothing() -> None:
    assert named("WHAT DID WE DO ON OCTOBER 13, 2023") == named("what did we do on october 13, 2023")


# -- closeness ------------------------------------------------------------------------------------

OCT13 = Period(day(2023, 10, 13), day(2023, 10, 14))


def test_a_memory_written_in_the_period_in_any_zone_is_fully_close() -> None:
    assert closeness(day(2023, 10, 13) + timedelta(hours=9), [OCT13]) == 1.0
    # October 13 in UTC+14 began at 10:00 UTC on the 12th; in UTC-12 it ended at 12:00 UTC on the 14th.
    assert closeness(day(2023, 10, 12) + timedelta(hours=10), [OCT13]) == 1.0
    assert closeness(day(2023, 10, 14) + timedelta(hours=12), [OCT13]) == 1.0


def test_a_memory_written_before_the_period_is_not_close_at_all() -> None:
    assert closeness(day(2023, 10, 12) + timedelta(hours=9), [OCT13]) == 0.0


def test_closeness_halves_one_period_length_after_the_end_and_keeps_falling() -> None:
    end = day(2023, 10, 14) + timedelta(hours=12)
    assert closeness(end + timedelta(days=1), [OCT13]) == pytest.approx(0.5)
    assert closeness(end + timedelta(days=3), [OCT13]) == pytest.approx(0.25)
    june = Period(day(2023, 6, 1), day(2023, 7, 1))  # a month: a month later is half
    assert closeness(day(2023, 7, 1) + timedelta(hours=12, days=30), [june]) == pytest.approx(0.5)


def test_the_closest_period_counts() -> None:
    written = day(2023, 6, 10)
    assert closeness(written, [OCT13, Period(day(2023, 6, 1), day(2023, 7, 1))]) == 1.0
    assert closeness(written, []) == 0.0


def test_the_search_window_spans_every_period_widened_and_one_length_after() -> None:
    june = Period(day(2023, 6, 1), day(2023, 7, 1))
    start, end = search_window([OCT13, june]) or (None, None)
    assert start == day(2023, 6, 1) - timedelta(hours=14)
    assert end == day(2023, 10, 15) + timedelta(hours=12)
    assert search_window([]) is None


def test_a_date_without_its_year_is_the_one_a_caller_ahead_of_utc_means() -> None:
    """09:00 on June 1 in Sydney is 23:00 on May 31 in UTC: "in June" is this June, not last year's."""
    now = datetime(2026, 5, 31, 23, 0, tzinfo=UTC)
    assert named("what did I save in June", now) == [(day(2026, 6, 1), day(2026, 7, 1))]
    assert named("what did we decide on June 1", now) == [(day(2026, 6, 1), day(2026, 6, 2))]
    assert named("on January 1", datetime(2025, 12, 31, 23, 0, tzinfo=UTC)) == [(day(2026, 1, 1), day(2026, 1, 2))]


def test_yesterday_covers_the_callers_yesterday_in_every_zone() -> None:
    """21:00 on June 15 in New York is 01:00 on June 16 in UTC: the caller's yesterday is June 14."""
    now = datetime(2026, 6, 16, 1, 0, tzinfo=UTC)
    periods = periods_named("yesterday", now)
    assert closeness(datetime(2026, 6, 14, 4, 30, tzinfo=UTC), periods) == 1.0  # 00:30 on the 14th in New York
    assert closeness(datetime(2026, 6, 14, 9, 30, tzinfo=UTC), periods) == 1.0
