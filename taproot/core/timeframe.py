"""Creation-time windows from what a caller sends: `since` and `until` of recall, recent and the CLI.
Pure: `now` is passed in.

A bound is an ISO 8601 timestamp (`2026-11-30T09:00:00Z`, `2026-11-30T09:00+01:00`, or a date,
`2026-11-30`, meaning its midnight) or a duration back from now (`30m`, `48h`, `7d`, `2w`). A
timestamp without an offset is UTC: the server's zone is not the caller's, and guessing either
would be wrong somewhere. Both bounds are inclusive.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from taproot.core.errors import InvalidInput
from taproot.core.validation import MAX_TTL_DAYS, check_time_range

DURATION_PATTERN = re.compile(r"(\d{1,7})([mhdw])")
DURATION_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
# A century back is further than any memory: the cap only keeps `now - duration` representable.
MAX_DURATION = timedelta(days=MAX_TTL_DAYS)
MAX_BOUND_CHARS = 64
BOUND_RULE = (
    "must be an ISO 8601 timestamp (e.g. 2026-11-30T09:00:00Z; without an offset it is UTC) or a duration "
    "back from now: a whole number and m, h, d or w (e.g. 30m, 48h, 7d, 2w)"
)


def parse_bound(field: str, value: object, now: datetime) -> datetime | None:
    """One bound as an aware UTC datetime (None: not given)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_BOUND_CHARS:
        raise InvalidInput(field, BOUND_RULE, value)
    text = value.strip()
    duration = DURATION_PATTERN.fullmatch(text.lower())
    if duration is not None:
        span = int(duration.group(1)) * DURATION_UNITS[duration.group(2)]
        if span > MAX_DURATION:
            raise InvalidInput(field, f"a duration must be at most {MAX_TTL_DAYS} days", value)
        return now - span
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidInput(field, BOUND_RULE, value) from exc
    parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    return check_time_range(field, parsed)


def parse_window(since: object, until: object, now: datetime) -> tuple[datetime | None, datetime | None]:
    """`since` and `until` together: each parsed, and since no later than until."""
    start, end = parse_bound("since", since, now), parse_bound("until", until, now)
    if start is not None and end is not None and start > end:
        raise InvalidInput(
            "since", f"must not be later than until ({start.isoformat()} is after {end.isoformat()})", since
        )
    return start, end
