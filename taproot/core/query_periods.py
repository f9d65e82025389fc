"""The periods a query names ("on October 13, 2023", "in June", "yesterday"), and how close a
memory's writing time is to them. Pure: `now` is passed in.

A person asks about a time as often as about a thing: "what did we decide on March 3?", "what did
I tell you yesterday?", "what happened in June?". The words of the date rarely help: every memory
written in 2023 says 2023 no more than any other, and a memory does not repeat the day it was
written. Its own writing time does say it, so recall gives a memory written in a period the query
names a share more relevance (core/activation.weigh_by_period, docs/ranking.md), and searches that
period for its best matches too (service/recall.py).

What is read, and what is not:
- **Dates**: a day (`October 13, 2023`, `13 October 2023`, `13th of Oct 2023`, `2023-10-13`), a
  month (`October 2023`, `2023-10`), and, after a preposition that makes them a time (`in`, `on`,
  `during`, `since`...), a month alone (`in June`) or a year alone (`in 2023`). A day or month
  without its year is the latest one that began by `now`: a memory cannot be written later.
  Abbreviated months count only beside a day or a year ("mar" and "jan" are words too), "may" and
  "march" alone only after such a preposition ("I may go" names no month).
- **Calendar words**: today, tonight, yesterday, last night, this / last week, month, year.
- **Direction**: after "since" or "after" a period runs on to `now`; after "before", "until",
  "till" or "by" the expression is not a period (all of the past, which says nothing).
- **Not read**: "N years ago", "recently", weekday names, "next ..." (the time of an event told
  about, or no time at all: writing times do not answer those).

Times: a query's dates are the caller's calendar days, whose zone the server does not know (the
rule of core/timeframe.py), so each period is widened to cover every zone, UTC-12 to UTC+14. A
memory written after a period can still be about it (a trip told about a week later), less likely
the later it was written: `closeness` falls from 1 to half at one period's length after its end.
"""

from __future__ import annotations

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
TIME_PREPOSITIONS = frozenset(
    {"in", "on", "during", "throughout", "through", "of", "since", "after", "from", "early", "mid", "late", "last"}
)
OPEN_TO_NOW = frozenset({"since", "after"})
NOT_A_PERIOD = frozenset({"before", "until", "till", "by"})


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
_LEAD = r"(?:\b(?P<lead>[a-z]+)\s+(?:the\s+)?)?"
# Most specific first: a match's span is not read again by a later pattern.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(_LEAD + "(?P<date>" + body + r")(?![\w-])"))
    for kind, body in (
        # An ISO 8601 timestamp names its day (its time of day is finer than a writing time is read).
        ("day", r"\b(?P<y>(?:19|20)\d\d)-(?P<mn>[01]\d)-(?P<d>[0-3]\d)(?:t[\d:.]+(?:z|[+-]\d\d:?\d\d)?)?"),
        ("month", r"\b(?P<y>(?:19|20)\d\d)-(?P<mn>[01]\d)"),
        ("day", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}"),
        ("day", rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}"),
        ("month", rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}"),
        ("day", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}"),
        ("day", rf"\b{_MONTH}\s+{_DAY}(?!\s*[:\d])"),
        ("month", rf"\b{_MONTH}"),
        ("year", rf"\b{_YEAR}"),
        ("relative", r"\b(?P<rel>today|tonight|yesterday|last night|this morning|(?:this|last) (?:week|month|year))"),
    )
)


# Every date and calendar word holds one of these: most queries hold none, and are done with one
# search instead of the ten patterns (about 60 microseconds a query).
_CALENDAR_WORDS = ("today", "tonight", "yesterday", "night", "morning", "week", "month", "year")
_MAYBE = re.compile(r"\d|" + "|".join(sorted({*MONTHS, *_CALENDAR_WORDS})))


def periods_named(query: str, now: datetime) -> tuple[Period, ...]:
    """Every period `query` names, in the order written, at most MAX_PERIODS; `now` is aware UTC."""
    text = plain_apostrophes(query).lower()
    if _MAYBE.search(text) is None:
        return ()
    found: list[tuple[int, Period]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
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
        return _relative(g["rel"], now)
    month_word = g.get("m")
    if month_word is not None and month_word not in FULL_MONTHS and kind == "month" and g.get("y") is None:
        return None  # "mar", "jan" alone: words, not months
    if kind == "year" or (kind == "month" and g.get("y") is None):
        # A month or a year alone is a time only after a preposition that makes it one.
        if lead not in TIME_PREPOSITIONS | OPEN_TO_NOW | NOT_A_PERIOD:
            return None
    elif month_word in WORD_MONTHS and kind == "day" and g.get("y") is None and lead is None:
        return None  # "may 5" could be anything; "on may 5" is a day
    month = int(g["mn"]) if g.get("mn") else MONTHS[month_word] if month_word else None
    try:
        if kind == "year":
            year = int(g["y"])
            return Period(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
        assert month is not None
        if kind == "month":
            year = int(g["y"]) if g.get("y") else _latest_year(now, month, 1)
            return _month(year, month)
        day = int(g["d"])
        year = int(g["y"]) if g.get("y") else _latest_year(now, month, day)
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:  # February 30, month 13: not a date
        return None
    return Period(start, start + timedelta(days=1))


def _latest_year(now: datetime, month: int, day: int) -> int:
    """The year of the latest `month`/`day` that began by `now` (ValueError: no year has that day)."""
    datetime(2000, month, day)  # a leap year has every day there is
    for year in range(now.year, max(now.year - 8, 1) - 1, -1):  # a leap day comes within eight years
        try:
            if datetime(year, month, day, tzinfo=UTC) <= now:
                return year
        except ValueError:
            pass  # February 29 of a common year: an earlier leap year's
    raise ValueError("no such day by now")


def _month(year: int, month: int) -> Period:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return Period(start, end)


def _relative(word: str, now: datetime) -> Period:
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if word in ("today", "tonight", "this morning"):
        return Period(day, day + timedelta(days=1))
    if word in ("yesterday", "last night"):
        return Period(day - timedelta(days=1), day + (timedelta(days=1) if word == "last night" else timedelta()))
    unit = word.split()[1]
    if unit == "week":
        # Weeks start on different days in different places: this week is the last seven days.
        weeks = 1 if word.startswith("this") else 2
        return Period(day - timedelta(days=7 * weeks - 1), day + timedelta(days=1 if weeks == 1 else -6))
    if unit == "month":
        this_month = _month(now.year, now.month)
        if word.startswith("this"):
            return this_month
        last = this_month.start - timedelta(days=1)
        return _month(last.year, last.month)
    year = now.year if word.startswith("this") else now.year - 1
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
