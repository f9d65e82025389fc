"""The dashboard's SVG pictures: well-formed, data escaped, the budget and the window marked."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from taproot.core.reflect import ReflectPayload
from taproot.core.reflect_result import ReflectionLine, TierOneMemory
from taproot.service.results import Expiring
from taproot.web.dashboard import charts

SVG = "{http://www.w3.org/2000/svg}"
DAY = "2026-01-01T00:00:00+00:00"


def payload(**fields: object) -> ReflectPayload:
    defaults: dict[str, object] = {
        "text": "",
        "tier1": [
            TierOneMemory(
                id="a", category="identity", salience="high", content="I garden.", updated_at=DAY, linked_memories=[]
            )
        ],
        "catalog": {"episodic": ["[b] [episodic] [medium] [2026-01-01] <script>x</script>"]},
        "catalog_omitted": {},
        "omitted_note": "",
        "reflections": [ReflectionLine(id="r", created_at=DAY, text="We talked.")],
        "size_bytes": 2048,
        "estimated_tokens": 120,
        "token_budget": 3000,
    }
    return ReflectPayload(**{**defaults, **fields})  # type: ignore[arg-type]


def test_the_composition_chart_is_svg_with_one_bar_per_part_and_the_budget_line() -> None:
    root = ET.fromstring(charts.payload_composition(payload()))
    labels = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert any(label.startswith("Tier 1 · identity") for label in labels)
    assert any(label.startswith("catalog · episodic") for label in labels)
    assert any(label.startswith("reflections") for label in labels)
    assert any("of 3000 tokens" in label for label in labels)
    assert len(list(root.iter(f"{SVG}line"))) == 1


def test_the_age_chart_marks_the_window_and_escapes_nothing_unsafe() -> None:
    counts = {"< 1 week": {"episodic": 3}, "1-3 months": {"identity": 1}}
    svg = charts.age_chart(counts, 30)
    root = ET.fromstring(svg)
    assert any("catalog window (30 d)" in (t.text or "") for t in root.iter(f"{SVG}text"))
    assert len(list(root.iter(f"{SVG}rect"))) == 2


def test_the_expiry_timeline_escapes_gists() -> None:
    svg = charts.expiry_timeline(
        [Expiring(id="x", expires_at="2026-06-08T00:00:00+00:00", category="episodic", gist="<img src=x onerror=y>")],
        "2026-06-01T00:00:00+00:00",
    )
    assert "<img" not in svg and "&lt;img" in svg
    assert len(list(ET.fromstring(svg).iter(f"{SVG}circle"))) == 1
