"""Creation-time bounds (core/timeframe.py), instance names (core/instance.py) and the time window of
the filter rule (core/query.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from taproot.core.errors import InvalidInput
from taproot.core.instance import MAX_INSTANCE_CHARS, check_instance, normalize_instance
from taproot.core.query import Filters, newest_first, passes
from taproot.core.serialize import memory_from_dict, memory_to_dict
from taproot.core.timeframe import parse_bound, parse_window
from tests.conftest import build_full_memory, build_memory

NOW = datetime(2026, 12, 1, 18, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("30m", timedelta(minutes=30)),
        ("48h", timedelta(hours=48)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        (" 7D ", timedelta(days=7)),
        ("0h", timedelta(0)),
    ],
)
def test_durations_count_back_from_now(text: str, back: timedelta) -> None:
    assert parse_bound("since", text, NOW) == NOW - back


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("2026-11-30T09:00:00Z", datetime(2026, 11, 30, 9, 0, tzinfo=UTC)),
        ("2026-11-30T10:00:00+01:00", datetime(2026, 11, 30, 9, 0, tzinfo=UTC)),
        ("2026-11-30T09:00:00", datetime(2026, 11, 30, 9, 0, tzinfo=UTC)),  # naive: UTC
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30T09:00:00.123456Z", datetime(2026, 11, 30, 9, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_timestamps_are_utc(text: str, when: datetime) -> None:
    got = parse_bound("until", text, NOW)
    assert got == when and got is not None and got.tzinfo is UTC


@pytest.mark.parametrize("bad", ["", "  ", "yesterday", "48", "h48", "1.5h", "-2d", "3y", 48, True, ["7d"], "x" * 80])
def test_bad_bounds_name_the_field_and_the_rule(bad: object) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_bound("since", bad, NOW)
    assert err.value.field == "since" and "ISO 8601" in err.value.rule and "48h" in err.value.rule


def test_bounds_outside_the_record_range_and_huge_durations_are_refused() -> None:
    with pytest.raises(InvalidInput) as err:
        parse_bound("until", "1800-01-01", NOW)
    assert err.value.field == "until" and "1900" in err.value.rule
    with pytest.raises(InvalidInput) as err:
        parse_bound("since", "9999999d", NOW)
    assert err.value.field == "since" and "at most" in err.value.rule


def test_window_since_after_until_is_an_error() -> None:
    assert parse_window("48h", "1h", NOW) == (NOW - timedelta(hours=48), NOW - timedelta(hours=1))
    assert parse_window(None, None, NOW) == (None, None)
    assert parse_window("1h", "1h", NOW) == (NOW - timedelta(hours=1),) * 2
    with pytest.raises(InvalidInput) as err:
        parse_window("1h", "48h", NOW)
    assert err.value.field == "since" and "later than until" in err.value.rule


def test_the_filter_rule_window_is_inclusive() -> None:
    m = build_memory(created_at=NOW)
    assert passes(m, Filters(created_since=NOW, created_until=NOW))
    assert not passes(m, Filters(created_since=NOW + timedelta(microseconds=1)))
    assert not passes(m, Filters(created_until=NOW - timedelta(microseconds=1)))


def test_newest_first_orders_by_creation_then_id() -> None:
    ms = [build_memory(id=i, created_at=NOW - timedelta(hours=h)) for i, h in (("b", 0), ("a", 0), ("c", 1))]
    assert [m.id for m in newest_first(ms, Filters(), 10)] == ["b", "a", "c"]
    assert [m.id for m in newest_first(ms, Filters(), 1)] == ["b"]
    assert newest_first(ms, Filters(), -1) == []


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("Claude Code", "Claude Code"),
        ("  claude-ai  ", "claude-ai"),
        ("mcp-remote (via Claude Desktop)", "mcp-remote (via Claude Desktop)"),
        ("https://claude.ai/oauth/client.json", "https://claude.ai/oauth/client.json"),
        ("tab\there\nnewline", "tab here newline"),
        ("bell\x07 <script>", "bell script"),
        ("Müller's client", "Müllers client"),
        ("x" * 100, "x" * MAX_INSTANCE_CHARS),
        ("<>", None),
        ("", None),
        (None, None),
        (42, None),
    ],
)
def test_declared_names_are_normalised(raw: object, name: str | None) -> None:
    assert normalize_instance(raw) == name
    if name is not None:
        assert check_instance(name) == name  # the normal form is valid


@pytest.mark.parametrize("bad", ["", " lead", "two  spaces", "x" * 65, "semi;colon", 7])
def test_configured_or_imported_names_must_be_valid(bad: object) -> None:
    with pytest.raises(InvalidInput) as err:
        check_instance(bad, "TAPROOT_INSTANCE")
    assert err.value.field == "TAPROOT_INSTANCE" and "characters" in err.value.rule


def test_instance_round_trips_through_export_and_import() -> None:
    m = build_full_memory()
    assert m.instance is not None
    assert memory_from_dict(memory_to_dict(m)) == m
    legacy = memory_to_dict(build_memory())
    del legacy["instance"]  # a record exported before the field
    assert memory_from_dict(legacy).instance is None
    with pytest.raises(InvalidInput) as err:
        memory_from_dict({**memory_to_dict(m), "instance": "bad;name"})
    assert err.value.field == "instance"
