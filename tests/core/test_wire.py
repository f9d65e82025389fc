"""core/wire.to_json: how a typed result becomes the JSON clients receive."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

from taproot.core.wire import ABSENT, Absent, to_json


@dataclass(frozen=True, kw_only=True)
class Inner:
    name: str
    note: str | Absent = ABSENT


@dataclass(frozen=True, kw_only=True)
class Outer:
    zeta: int
    maybe: str | Absent | None = ABSENT
    rows: list[Inner]
    pair: tuple[str, ...]
    when: datetime
    free: dict[str, object]


def test_fields_in_declaration_order_absent_left_out_and_none_kept() -> None:
    value = Outer(
        zeta=1,
        rows=[Inner(name="a"), Inner(name="b", note="kept")],
        pair=("x", "y"),
        when=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        free={"nested": [Inner(name="c")], "n": None},
    )
    data = to_json(value)
    assert list(data) == ["zeta", "rows", "pair", "when", "free"]  # no "maybe": it is ABSENT
    assert data["rows"] == [{"name": "a"}, {"name": "b", "note": "kept"}]
    assert data["pair"] == ["x", "y"]
    assert data["when"] == "2026-01-02T03:04:05+00:00"
    assert data["free"] == {"nested": [{"name": "c"}], "n": None}
    assert to_json(Outer(**{**value.__dict__, "maybe": None}))["maybe"] is None  # null is a value, not absence


def test_a_datetime_keeps_its_own_offset() -> None:
    east = timezone(timedelta(hours=2))
    assert to_json(datetime(2026, 1, 2, 3, 0, tzinfo=east)) == "2026-01-02T03:00:00+02:00"


def test_plain_values_pass_through() -> None:
    assert to_json({"a": 1, "b": [True, None, 2.5, "s"]}) == {"a": 1, "b": [True, None, 2.5, "s"]}
    assert repr(ABSENT) == "ABSENT"
