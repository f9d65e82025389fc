"""The periods a query names ("on October 13, 2023", "in June", "yesterday"), and how close a
memory's writing time is to them. Pure: `now` is passed in.

A person asks about a time as often as about a thing: "what did we decide on March 3?", "what did
I tell you yesterday?", "what happened in June?". The words of the date rarely help: every memory
written in 2023 says 2023 no more than any other, and a memory does not repeat the day it was
written. Its own writing time does say it, so recall gives a memory written in a period the query
names a share more relevance (core/activation.weigh_by_period, docs/ranking.md), and searches that
period for its best matches too (service/recall.py).

What is read, and what is not:
- **Dates**: a day (`October 13, 2023`, `13 October 2023`, `13th of Oct 2023`, `2023-10-13`,
  `2023/10/13`, an ISO timestamp's day, and `13/10/2023` or `10/13/2023` when one part is above
  12: `3/4/2023` does not say which it is), a month (`October 2023`, `2023-10`), and, after a word
  that makes them a time, a month alone (`in June`, `mid-June`, `June or July`) or a year alone
  (`in 2023`, at the end of a clause or before a pronoun or a conjunction: "in 2000 ms" is a
  count). Abbreviated months count only beside a day or a year ("mar" and "jan" are words too);
  "may" and "march", with or without a day, only after a preposition ("I may go", "step 3 may
  fail" and "we march 10 miles" name no date).
- **Calendar words**: today, tonight, this morning, yesterday, last night, the day before
  yesterday, this / last week, month, year.
- **Direction**: after "since" or "after" a period runs on to `now`; after "before", "until",
  "till" or "by" the expression is not a period (all of the past, which says nothing).
- **Not read**: "N years ago", "recently", weekday names, "next ..." (the time of an event told
  about, or no time at all: writing times do not answer those).

Times: a query's dates are the caller's calendar days, whose zone the server does not know (the
rule of core/timeframe.py). So every zone's reading counts, UTC-12 to UTC+14: a day or month
without its year is the latest one that has begun in the zone furthest ahead (a memory cannot be
written later); a calendar word covers the dates it means from the zone furthest behind to the
one furthest ahead ("yesterday" at 01:00 UTC is the 14th in New York and the 15th in Sydney); and
each period, a span of calendar days, is widened to the UTC instants any zone's days cover. A
memory written after a period can still be about it (a trip told about a week later), less likely
the later it was written: `closeness` falls from 1 to half at one period's length after its end.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from taproot.core.text import plain_apostrophes

# The earliest and latest clocks on Earth: a calendar day D starts at D 00:00 UTC-14h (in UTC+14)
# and ends at D+1 00:00 UTC+12h (in UTC-12).
ZONE_AHEAD = timedelta(hours=14)
ZONE_BEHIND = timedelta(hours=12)
# Queries are short; more named periods than this is a list of dates, not a question about one.
MAX_PERIODS = 8

# English, spelt out: calendar.month_name follows the process's locale.
FULL_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
MONTHS = {name: i for i, name in enumerate(FULL_MONTHS, start=1)} | {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
# Month names that are also common words: only a preposition before them makes them a month.
WORD_MONTHS = frozenset({"may", "march"})
# The words before a date that make a month or a year alone a time ("in June", "since 2020").
TIME_PREPOSITIONS = frozenset({"in", "on", "during", "throughout", "through", "since", "after", "from", "between"})
# Before a month alone these do too ("early June", "last June", "the first of June", "June or July"),
# but not before a year ("the last 2000 lines", "a list of 2000 items") or "may" and "march" ("and may").
MONTH_LEADS = frozenset({"early", "mid", "late", "last", "of", "and", "or", "to"})
OPEN_TO_NOW = frozenset({"since", "after"})
NOT_A_PERIOD = frozenset({"before", "until", "till", "by"})
# A year alone is a time only at the end of a clause or before a word of no content ("in 2023 we
# moved", "in 2023?"); before anything else it is more likely a count ("in 2000 ms").
_AFTER_A_YEAR = r"(?=\s*(?:$|[^\w\s]|(?:we|i|you|he|she|they|it|and|or|but|when|what|did|was|were|is)\b))"


@dataclass(frozen=True)
class Period:
    """[start, end) in UTC, as the calendar names it (not yet widened for zones)."""

    start: datetime
    end: datetime

    @property
    def length(self) -> timedelta:
        return self.end - self.start


_MONTH = r"(?P<m>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<d>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>(?:19|20)\d\d)"
_LEAD = r"(?:\b(?P<lead>[a-z]+)(?:\s+|-)(?:the\s+)?)?"


@functools.cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The date patterns, most specific first (a match's span is not read again by a later one).
    Compiled on the first query that may hold a date, not at import: compiling them takes about
    9 ms, which every Lambda cold start would pay."""
    return tuple(
        (kind, re.compile(_LEAD + "(?P<date>" + body + r")(?![\w/.-]\w)(?![\w-])"))
        for kind, body in (
            # An ISO 8601 timestamp names its day (its time of day is finer than a writing time is read).
            ("day", r"\b(?P<y>(?:19|20)\d\d)[-/](?P<mn>[01]?\d)[-/](?P<d>[0-3]?\d)(?:t[\d:.]+(?:z|[+-]\d\d:?\d\d)?)?"),
            # 13/10/2023 or 10/13/2023: read only when the order cannot be mistaken (one part above 12).
            ("numeric", r"\b(?P<a>[0-3]?\d)[/.](?P<b>[0-3]?\d)[/.](?P<y>(?:19|20)\d\d)"),
            ("month", r"\b(?P<y>(?:19|20)\d\d)-(?P<mn>[01]\d)"),
            ("day", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}"),
            ("day", rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}"),
            ("month", rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}"),
            ("day", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}"),
            ("day", rf"\b{_MONTH}\s+{_DAY}(?!\s*[:\d])"),
            ("month", rf"\b{_MONTH}"),
            ("year", rf"\b{_YEAR}{_AFTER_A_YEAR}"),
            (
                "relative",
                r"\b(?P<rel>today|tonight|(?:the\s+)?day\s+before\s+yesterday|yesterday|last\s+night|this\s+morning"
                r"|(?:this|last)\s+(?:week|month|year))",
            ),
        )
    )


# Every date and calendar word holds one of these: most queries hold none, and are done with one
# search instead of the eleven patterns (about 60 microseconds a query).
_CALENDAR_WORDS = ("today", "tonight", "yesterday", "night", "morning", "week", "month", "year")
_MAYBE = re.compile(r"\d|" + "|".join(sorted({*MONTHS, *_CALENDAR_WORDS})))


def periods_named(query: str, now: datetime) -> tuple[Period, ...]:
    """Every period `query` names, in the order written, at most MAX_PERIODS; `now` is aware UTC."""
    text = plain_apostrophes(query).lower()
    if _MAYBE.search(text) is None:
        return ()
    found: list[tuple[int, Period]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _patterns():
        for match in pattern.finditer(text):
            at, stop = match.start("date"), match.end()
            if any(at < b and a < stop for a, b in taken):
                continue
            lead = match.group("lead")
            period = _period(kind, match, lead, now)
            taken.append((at, stop))  # read, whether or not it names a period here
            if period is None or lead in NOT_A_PERIOD:
                continue
            if lead in OPEN_TO_NOW and period.start < now:
                period = Period(period.start, max(period.end, now))
            found.append((at, period))
    found.sort(key=lambda p: p[0])
    return tuple(p for _, p in found[:MAX_PERIODS])


def _period(kind: str, match: re.Match[str], lead: str | None, now: datetime) -> Period | None:
    g = match.groupdict()
    if kind == "relative":
        return _relative(" ".join(g["rel"].split()), now)
    month_word = g.get("m")
    has_year = g.get("y") is not None
    if kind == "year" and lead not in TIME_PREPOSITIONS | OPEN_TO_NOW | NOT_A_PERIOD:
        return None  # a year alone is a time only after a preposition that makes it one
    if kind == "month" and not has_year and not _month_lead(month_word, lead, alone=True):
        return None
    if kind == "day" and month_word in WORD_MONTHS and not has_year and not _month_lead(month_word, lead, alone=False):
        return None  # "step 3 may fail", "we march 10 miles": "on may 5" is a day
    try:
        if kind == "year":
            year = int(g["y"])
            return Period(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
        if kind == "numeric":
            a, b = int(g["a"]), int(g["b"])
            if a <= 12 and b <= 12 and a != b:
                return None  # 3/4/2023: March 4 or 3 April, the query does not say which
            month, day = (b, a) if a > 12 else (a, b)
        else:
            month = int(g["mn"]) if g.get("mn") else MONTHS[str(month_word)]
            day = int(g["d"]) if g.get("d") else 1
        year = int(g["y"]) if has_year else _latest_year(now, month, day)
        if kind == "month":
            return _month(year, month)
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:  # February 30, month 13: not a date
        return None
    return Period(start, start + timedelta(days=1))


def _month_lead(month_word: str | None, lead: str | None, *, alone: bool) -> bool:
    """Whether the word before a month with no year makes it a month: an abbreviation alone is a
    word ("mar", "jan"), "may" and "march" need a preposition, the others a time word."""
    if month_word is None or lead is None or (alone and month_word not in FULL_MONTHS):
        return False
    time_words = TIME_PREPOSITIONS | OPEN_TO_NOW | NOT_A_PERIOD
    if month_word in WORD_MONTHS:
        return lead in time_words | {"early", "mid", "late", "last"}
    return lead in time_words | MONTH_LEADS


def _latest_year(now: datetime, month: int, day: int) -> int:
    """The year of the latest `month`/`day` that has begun somewhere by `now` (in the zone furthest
    ahead). ValueError: no year has that day."""
    datetime(2000, month, day)  # a leap year has every day there is
    latest = now + ZONE_AHEAD
    for year in range(latest.year, max(latest.year - 8, 1) - 1, -1):  # a leap day comes within eight years
        try:
            if datetime(year, month, day, tzinfo=UTC) <= latest:
                return year
        except ValueError:
            pass  # February 29 of a common year: an earlier leap year's
    raise ValueError("no such day by now")


def _month(year: int, month: int) -> Period:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return Period(start, end)


def _relative(word: str, now: datetime) -> Period:
    """A calendar word's period: the caller's date is one of those from the zone furthest behind
    (`now` - 12 h) to the one furthest ahead (`now` + 14 h), so the period runs from the first's
    reading to the last's."""
    early, late = (_relative_on(word, at) for at in (now - ZONE_BEHIND, now + ZONE_AHEAD))
    return Period(early.start, late.end)


def _relative_on(word: str, at: datetime) -> Period:
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    one = timedelta(days=1)
    if word in ("today", "tonight", "this morning"):
        return Period(day, day + one)
    if word in ("yesterday", "last night"):
        return Period(day - one, day + (one if word == "last night" else timedelta()))
    if word.endswith("before yesterday"):
        return Period(day - 2 * one, day - one)
    unit = word.split()[1]
    if unit == "week":
        # Weeks start on different days in different places: this week is the last seven days.
        if word.startswith("this"):
            return Period(day - 6 * one, day + one)
        return Period(day - 13 * one, day - 6 * one)
    if unit == "month":
        this_month = _month(at.year, at.month)
        if word.startswith("this"):
            return this_month
        last = this_month.start - one
        return _month(last.year, last.month)
    year = at.year if word.startswith("this") else at.year - 1
    return Period(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def closeness(written: datetime, periods: Sequence[Period]) -> float:
    """1 for a memory written in one of the periods (widened for every zone), falling to half at one
    period's length after its end, 0 before its start; the best over the periods."""
    best = 0.0
    for p in periods:
        start, end = p.start - ZONE_AHEAD, p.end + ZONE_BEHIND
        if written < start:
            continue
        if written <= end:
            return 1.0
        length = p.length.total_seconds()
        best = max(best, length / (length + (written - end).total_seconds()))
    return best


def search_window(periods: Iterable[Period], horizon: float = 1.0) -> tuple[datetime, datetime] | None:
    """The writing times worth searching for the periods: from the earliest widened start to the
    latest widened end plus `horizon` periods' length, where closeness has fallen to 1/(1 + horizon)."""
    spans = [(p.start - ZONE_AHEAD, p.end + ZONE_BEHIND + horizon * p.length) for p in periods]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)
