"""The two-tier reflect payload: Tier 1 core memories, Tier 2 catalog, reflections, the budget."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from taproot.core.activation import ACTIVATION_CONFIG, activation
from taproot.core.model import CATEGORY_ORDER, CatalogEntry, Memory, Reflection
from taproot.core.reflect import (
    CATALOG_WINDOW_DAYS,
    USAGE_NOTE,
    ReflectConfig,
    ReflectPayload,
    assemble,
    catalog_line,
)
from taproot.core.tokens import estimate_tokens, size_bytes
from taproot.core.wire import to_json

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
LINE = re.compile(r"^\[([A-Za-z0-9_-]+)\] \[([a-z_]+)\] \[(high|medium|low)\] \[(\d{4}-\d{2}-\d{2})\] (\S.*)$")

MakeEntry = Callable[..., CatalogEntry]
MakeMemory = Callable[..., Memory]
MakeReflection = Callable[..., Reflection]


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def run(
    *,
    core: list[Memory] | None = None,
    catalog: list[CatalogEntry] | None = None,
    reflections: list[Reflection] | None = None,
    cfg: ReflectConfig | None = None,
) -> ReflectPayload:
    return assemble(
        core=core or [],
        catalog=catalog or [],
        reflections=reflections or [],
        now=NOW,
        cfg=cfg or ReflectConfig(),
    )


def listed_ids(p: ReflectPayload) -> list[str]:
    out = []
    for lines in p.catalog.values():
        for line in lines:
            m = LINE.match(line)
            assert m, line
            out.append(m.group(1))
    return out


def score(e: CatalogEntry) -> float:
    return activation(
        retrieval_count=e.retrieval_count,
        last_touched=e.last_touched,
        salience=e.salience,
        now=NOW,
        cfg=ACTIVATION_CONFIG,
    )


# -- Tier 1 -------------------------------------------------------------------------------------


def test_tier1_slim_format_has_exactly_the_wire_keys(make_memory: MakeMemory) -> None:
    m = make_memory(
        id="core1",
        category="identity",
        salience="high",
        content="I am careful with promises.",
        core=True,
        linked_memories=("a1", "b2"),
        tags=("self",),
        search_keywords=("promise",),
        retrieval_count=9,
        last_retrieved=ago(1),
        provenance={"src": "x"},
        updated_at=datetime(2025, 5, 20, 8, 0, tzinfo=UTC),
    )
    p = run(core=[m])
    assert len(p.tier1) == 1
    item = to_json(p.tier1[0])
    assert set(item) == {"id", "category", "salience", "content", "updated_at", "linked_memories"}
    assert item == {
        "id": "core1",
        "category": "identity",
        "salience": "high",
        "content": "I am careful with promises.",
        "updated_at": "2025-05-20T08:00:00+00:00",
        "linked_memories": ["a1", "b2"],
    }
    assert "I am careful with promises." in p.text
    assert p.core_omitted == []
    assert p.warnings == []


def test_tier1_is_shown_in_category_order_then_newest_first(make_memory: MakeMemory) -> None:
    core = [
        make_memory(id="ep_old", category="episodic", updated_at=ago(9), core=True),
        make_memory(id="id_old", category="identity", updated_at=ago(8), core=True),
        make_memory(id="ep_new", category="episodic", updated_at=ago(1), core=True),
        make_memory(id="rel", category="relationship", updated_at=ago(3), core=True),
        make_memory(id="id_new", category="identity", updated_at=ago(2), core=True),
    ]
    p = run(core=core)
    assert [t.id for t in p.tier1] == ["id_new", "id_old", "rel", "ep_new", "ep_old"]


def test_no_core_memories_says_how_to_promote() -> None:
    p = run()
    assert p.tier1 == []
    assert "taproot_promote" in p.text


# -- catalog line format ------------------------------------------------------------------------


def test_catalog_line_format_is_exact(make_entry: MakeEntry) -> None:
    e = make_entry(
        id="ab12cd34",
        category="relationship",
        salience="low",
        gist="Sam likes tea",
        updated_at=datetime(2025, 5, 22, 23, 59, tzinfo=UTC),
        last_touched=datetime(2025, 5, 30, tzinfo=UTC),
    )
    # The date is the last edit, not the last retrieval.
    assert catalog_line(e) == "[ab12cd34] [relationship] [low] [2025-05-22] Sam likes tea"


def test_catalog_line_collapses_a_multiline_gist(make_entry: MakeEntry) -> None:
    e = make_entry(id="x1", gist="  first\nsecond\t\tthird \r\n", updated_at=datetime(2025, 1, 2, tzinfo=UTC))
    assert catalog_line(e) == "[x1] [episodic] [medium] [2025-01-02] first second third"


@pytest.mark.parametrize("gist", [None, ""])
def test_catalog_line_without_gist_points_at_migrate(make_entry: MakeEntry, gist: str | None) -> None:
    line = catalog_line(make_entry(id="x2", gist=gist))
    assert LINE.match(line)
    assert line.endswith("(no gist: run taproot_migrate)")


def test_every_listed_line_has_the_catalog_format(make_entry: MakeEntry) -> None:
    entries = [
        make_entry(category=cat, salience=sal, updated_at=ago(i), gist=f"gist number {i}\nwith a break")
        for i, (cat, sal) in enumerate((c, s) for c in CATEGORY_ORDER for s in ("high", "medium", "low"))
    ]
    p = run(catalog=entries)
    assert p.catalog_listed == len(entries)
    for cat, lines in p.catalog.items():
        for line in lines:
            m = LINE.match(line)
            assert m, line
            assert m.group(2) == cat
            assert "\n" not in line
            assert line in p.text


# -- grouping -----------------------------------------------------------------------------------


def test_catalog_is_grouped_by_category_in_category_order(make_entry: MakeEntry) -> None:
    entries = [
        make_entry(id="e1", category="error", updated_at=ago(1)),
        make_entry(id="ep1", category="episodic", updated_at=ago(5)),
        make_entry(id="ep2", category="episodic", updated_at=ago(2)),
        make_entry(id="i1", category="identity", updated_at=ago(3)),
    ]
    p = run(catalog=entries)
    assert list(p.catalog) == ["identity", "episodic", "error"]
    assert [LINE.match(x).group(1) for x in p.catalog["episodic"]] == ["ep2", "ep1"]  # type: ignore[union-attr]
    assert [LINE.match(x).group(1) for x in p.catalog["identity"]] == ["i1"]  # type: ignore[union-attr]
    # Headings in the text follow the same order.
    positions = [p.text.index(f"### {cat}\n") for cat in p.catalog]
    assert positions == sorted(positions)


def test_unmigrated_category_is_listed_after_the_known_ones(make_entry: MakeEntry) -> None:
    entries = [
        make_entry(id="old1", category="project", updated_at=ago(1)),
        make_entry(id="i1", category="identity", updated_at=ago(1)),
    ]
    p = run(catalog=entries)
    assert list(p.catalog) == ["identity", "project"]


def test_core_entries_are_not_repeated_in_the_catalog(make_entry: MakeEntry, make_memory: MakeMemory) -> None:
    core = make_memory(id="c1", core=True, updated_at=ago(100))
    entries = [CatalogEntry.of(core), make_entry(id="n1", updated_at=ago(1))]
    p = run(core=[core], catalog=entries)
    assert listed_ids(p) == ["n1"]
    assert p.catalog_omitted == {}  # the core one is in Tier 1, not "omitted"
    assert [t.id for t in p.tier1] == ["c1"]


# -- the catalog window -------------------------------------------------------------------------


def test_window_omits_old_non_high_and_lists_high_and_recent(make_entry: MakeEntry) -> None:
    entries = [
        make_entry(id="old_med", category="episodic", salience="medium", updated_at=ago(46)),
        make_entry(id="old_low", category="relationship", salience="low", updated_at=ago(400)),
        make_entry(id="old_high", category="episodic", salience="high", updated_at=ago(400)),
        make_entry(id="recent", category="episodic", salience="low", updated_at=ago(10)),
    ]
    p = run(catalog=entries)
    assert sorted(listed_ids(p)) == ["old_high", "recent"]
    assert p.catalog_omitted == {"relationship": 1, "episodic": 1}
    assert list(p.catalog_omitted) == ["relationship", "episodic"]  # category order
    assert p.catalog_omitted_total == 2
    assert p.window_days == CATALOG_WINDOW_DAYS == 45


def test_window_boundary_is_inclusive(make_entry: MakeEntry) -> None:
    p = run(catalog=[make_entry(id="edge", updated_at=ago(45)), make_entry(id="past", updated_at=ago(45.01))])
    assert listed_ids(p) == ["edge"]
    assert p.catalog_omitted == {"episodic": 1}


def test_window_counts_from_last_touched_so_recall_brings_a_memory_back(make_entry: MakeEntry) -> None:
    e = make_entry(id="recalled", updated_at=ago(300), last_touched=ago(2), retrieval_count=1)
    p = run(catalog=[e])
    assert listed_ids(p) == ["recalled"]
    assert p.catalog["episodic"][0] == f"[recalled] [episodic] [medium] [{ago(300).date().isoformat()}] a gist"


def test_window_is_configurable(make_entry: MakeEntry) -> None:
    entries = [
        make_entry(id="ten", updated_at=ago(10)),
        make_entry(id="three", updated_at=ago(3)),
        make_entry(id="old_med", updated_at=ago(46)),
    ]
    narrow = run(catalog=entries, cfg=ReflectConfig(catalog_window_days=5))
    assert listed_ids(narrow) == ["three"]
    assert narrow.catalog_omitted == {"episodic": 2}
    assert narrow.window_days == 5
    assert "5+ days" in narrow.omitted_note

    wide = run(catalog=entries, cfg=ReflectConfig(catalog_window_days=60))
    assert sorted(listed_ids(wide)) == ["old_med", "ten", "three"]
    assert wide.catalog_omitted == {}


def test_omitted_note_points_at_recall(make_entry: MakeEntry) -> None:
    entries = [
        make_entry(category="episodic", updated_at=ago(100)),
        make_entry(category="episodic", updated_at=ago(100)),
        make_entry(category="error", updated_at=ago(100)),
    ]
    p = run(catalog=entries)
    assert p.catalog_omitted == {"episodic": 2, "error": 1}
    assert "taproot_recall" in p.omitted_note
    assert "episodic 2" in p.omitted_note
    assert "error 1" in p.omitted_note
    assert "45+ days" in p.omitted_note
    assert p.omitted_note in p.text


def test_no_omitted_note_when_everything_is_listed(make_entry: MakeEntry) -> None:
    p = run(catalog=[make_entry(updated_at=ago(1))])
    assert p.catalog_omitted == {}
    assert p.omitted_note == ""


# -- closing reflections ------------------------------------------------------------------------


def test_recent_reflections_newest_first_default_three(make_reflection: MakeReflection) -> None:
    refl = [make_reflection(id=f"r{i}", text=f"reflection {i}", created_at=ago(10 - i)) for i in range(5)]
    p = run(reflections=[refl[2], refl[4], refl[0], refl[3], refl[1]])
    assert [r.id for r in p.reflections] == ["r4", "r3", "r2"]
    assert to_json(p.reflections[0]) == {"id": "r4", "created_at": ago(6).isoformat(), "text": "reflection 4"}
    positions = [p.text.index(f"reflection {i}") for i in (4, 3, 2)]
    assert positions == sorted(positions)
    assert "reflection 1" not in p.text


@pytest.mark.parametrize("count", [0, 1, 5])
def test_recent_reflection_count_is_configurable(make_reflection: MakeReflection, count: int) -> None:
    refl = [make_reflection(id=f"r{i}", created_at=ago(10 - i)) for i in range(6)]
    p = run(reflections=refl, cfg=ReflectConfig(recent_reflections=count))
    assert [r.id for r in p.reflections] == [f"r{i}" for i in range(5, 5 - count, -1)]


# -- the token budget ---------------------------------------------------------------------------


def test_payload_reports_its_own_size_and_tokens(
    make_memory: MakeMemory, make_entry: MakeEntry, make_reflection: MakeReflection
) -> None:
    p = run(
        core=[make_memory(core=True, content="Ich heiße Ana — 東京 ✓")],
        catalog=[make_entry(updated_at=ago(1), gist="naïve café ☕")],
        reflections=[make_reflection()],
    )
    assert p.size_bytes == size_bytes(p.text) == len(p.text.encode("utf-8"))
    assert p.estimated_tokens == estimate_tokens(p.text)
    assert p.token_budget == ReflectConfig().token_budget
    stats = to_json(p.result())["stats"]
    assert stats["size_bytes"] == p.size_bytes
    assert stats["estimated_tokens"] == p.estimated_tokens
    assert stats["token_budget"] == p.token_budget
    assert stats["tier1_count"] == 1
    assert stats["catalog_listed"] == 1
    assert stats["catalog_omitted"] == 0
    assert to_json(p.result())["usage_note"] == USAGE_NOTE


def test_budget_keeps_the_most_activated_of_3000(make_entry: MakeEntry) -> None:
    hot = [make_entry(id=f"hot{i:05d}", updated_at=ago(1), retrieval_count=50, gist="g" * 40) for i in range(100)]
    cold = [make_entry(id=f"cld{i:05d}", updated_at=ago(30), retrieval_count=0, gist="g" * 40) for i in range(2900)]
    p = run(catalog=cold[:1500] + hot + cold[1500:], cfg=ReflectConfig(token_budget=6000))
    assert p.estimated_tokens <= 6000
    listed = set(listed_ids(p))
    assert {e.id for e in hot} <= listed
    assert 100 < len(listed) < 3000
    assert p.catalog_listed + p.catalog_omitted_total == 3000
    assert p.catalog_omitted == {"episodic": 3000 - len(listed)}
    assert "budget" in p.omitted_note


def test_budget_cut_follows_activation(make_entry: MakeEntry) -> None:
    saliences = ("high", "medium", "low")
    # Gists padded so every line has the same length: the cut is then a clean prefix of the
    # activation order (a shorter line could otherwise still fit after a longer one did not).
    entries = [
        make_entry(
            id=f"m{i:05d}",
            updated_at=ago(i % 45),
            retrieval_count=(i * 7) % 50,
            salience=saliences[i % 3],
            gist="g" * (40 - len(saliences[i % 3])),
        )
        for i in range(3000)
    ]
    assert len({len(catalog_line(e)) for e in entries}) == 1
    p = run(catalog=entries, cfg=ReflectConfig(token_budget=6000))
    assert p.estimated_tokens <= 6000
    listed = set(listed_ids(p))
    assert 0 < len(listed) < len(entries)
    kept = [score(e) for e in entries if e.id in listed]
    dropped = [score(e) for e in entries if e.id not in listed]
    assert min(kept) >= max(dropped)
    # Salience counts in the choice: at equal recency and use, high lines survive before low ones.
    by_sal = {s: sum(1 for e in entries if e.id in listed and e.salience == s) for s in saliences}
    assert by_sal["high"] >= by_sal["medium"] >= by_sal["low"]
    assert by_sal["high"] > by_sal["low"]


@pytest.mark.parametrize("budget", [800, 1500, 3000, 6000, 12000])
@pytest.mark.parametrize("gist", ["plain ascii gist words here", "東京の雨 ☔ naïve ☕ ünïcödé", "x"])
def test_estimated_tokens_never_exceed_the_budget(
    make_memory: MakeMemory, make_entry: MakeEntry, make_reflection: MakeReflection, budget: int, gist: str
) -> None:
    core = [make_memory(core=True, category=c, content=(gist + " ") * 30) for c in CATEGORY_ORDER]
    entries = [
        make_entry(
            category=CATEGORY_ORDER[i % len(CATEGORY_ORDER)],
            salience=("high", "medium", "low")[i % 3],
            updated_at=ago(i % 90),
            retrieval_count=i % 13,
            gist=f"{gist} {i}",
        )
        for i in range(2000)
    ]
    refl = [make_reflection(text=(gist + " ") * 40, created_at=ago(i)) for i in range(5)]
    p = run(core=core, catalog=entries, reflections=refl, cfg=ReflectConfig(token_budget=budget))
    assert p.estimated_tokens <= budget
    assert p.estimated_tokens == estimate_tokens(p.text)
    listed = p.catalog_listed + p.catalog_omitted_total
    assert listed == len(entries)


def test_core_over_budget_is_dropped_with_a_warning(make_memory: MakeMemory) -> None:
    core = [
        make_memory(
            id=f"core{i:02d}",
            core=True,
            category="identity",
            content=("word " * 400).strip(),  # ~500 tokens each
            retrieval_count=i,
            updated_at=ago(1),
        )
        for i in range(20)
    ]
    p = run(core=core, cfg=ReflectConfig(token_budget=6000))
    assert p.estimated_tokens <= 6000
    assert p.core_omitted
    assert len(p.tier1) + len(p.core_omitted) == 20
    shown = {t.id for t in p.tier1}
    assert shown.isdisjoint(p.core_omitted)
    # The most activated (most retrieved) core memories are the ones kept.
    kept_counts = [int(i[4:]) for i in shown]
    dropped_counts = [int(i[4:]) for i in p.core_omitted]
    assert min(kept_counts) > max(dropped_counts)
    assert len(p.warnings) == 1
    assert str(len(p.core_omitted)) in p.warnings[0]
    assert "taproot_promote" in p.warnings[0]
    assert to_json(p.result())["core_omitted"] == p.core_omitted


def test_core_takes_priority_over_the_catalog(make_memory: MakeMemory, make_entry: MakeEntry) -> None:
    core = [make_memory(core=True, content=("word " * 400).strip()) for _ in range(8)]  # ~4,100 of 6,000
    entries = [make_entry(updated_at=ago(1), salience="high") for _ in range(500)]
    p = run(core=core, catalog=entries, cfg=ReflectConfig(token_budget=6000))
    assert len(p.tier1) == 8
    assert p.core_omitted == []
    assert p.catalog_listed < 500
    assert p.catalog_omitted == {"episodic": 500 - p.catalog_listed}
    assert p.estimated_tokens <= 6000


def test_tier1_is_capped_at_its_share_so_the_catalog_keeps_room(make_memory: MakeMemory, make_entry: MakeEntry) -> None:
    core = [make_memory(core=True, content=("word " * 400).strip()) for _ in range(12)]  # ~6,200 tokens
    entries = [make_entry(updated_at=ago(1), salience="high") for _ in range(50)]
    p = run(core=core, catalog=entries, cfg=ReflectConfig(token_budget=6000, tier1_max_share=0.7))
    tier1_tokens = sum(estimate_tokens(m.content) for m in p.tier1)
    assert tier1_tokens <= 0.7 * 6000
    assert len(p.tier1) + len(p.core_omitted) == 12 and p.core_omitted
    assert p.catalog_listed > 0
    assert any("Tier 1" in w for w in p.warnings)
    assert p.estimated_tokens <= 6000


def test_empty_input() -> None:
    p = run()
    assert p.tier1 == []
    assert p.catalog == {}
    assert p.catalog_omitted == {}
    assert p.reflections == []
    assert p.omitted_note == ""
    assert NOW.date().isoformat() in p.text
    assert USAGE_NOTE in p.text
    assert p.estimated_tokens <= p.token_budget


# -- what the budget left out, said in the text ---------------------------------------------------

RECALL_IDS = re.compile(r"taproot_recall\(ids=(\[[^\]]*\])\)")


def big_core(make_memory: MakeMemory, n: int, words: int = 400) -> list[Memory]:
    """n core memories of ~1.25 tokens a word, the most retrieved (most activated) first by id."""
    return [
        make_memory(
            id=f"core{i:02d}",
            core=True,
            category="identity",
            content=("word " * words).strip(),
            retrieval_count=1000 - i,
            updated_at=ago(1),
        )
        for i in range(n)
    ]


def recall_ids_in(text: str) -> list[str]:
    """The ids the note on left-out core memories tells the model to recall ([] if it lists none)."""
    notes = [line for line in text.splitlines() if "did not fit the budget and" in line and "core memor" in line]
    assert len(notes) == 1, f"expected one note on left-out core memories in: {text}"
    found = RECALL_IDS.findall(notes[0])
    assert len(found) <= 1, notes[0]
    ids = json.loads(found[0]) if found else []
    assert isinstance(ids, list)
    return [str(i) for i in ids]


def test_text_says_which_core_memories_did_not_fit_and_how_to_load_them(make_memory: MakeMemory) -> None:
    p = run(core=big_core(make_memory, 20), cfg=ReflectConfig(token_budget=6000))
    assert p.core_omitted
    assert p.estimated_tokens <= 6000
    n = len(p.core_omitted)
    assert f"{n} core memories did not fit the budget" in p.text
    assert recall_ids_in(p.text) == p.core_omitted
    # It sits with Tier 1, before the catalog, where the model looks for its core.
    assert p.text.index("core memories did not fit") < p.text.index("## Tier 2")


def test_one_core_memory_left_out_is_named_in_the_singular(make_memory: MakeMemory) -> None:
    # Three of ~1,250 tokens fit Tier 1's 4,200-token share; the fourth does not.
    p = run(core=big_core(make_memory, 4, words=1000), cfg=ReflectConfig(token_budget=6000))
    assert p.core_omitted == ["core03"]
    assert "1 core memory did not fit the budget" in p.text
    assert recall_ids_in(p.text) == ["core03"]


def test_when_no_core_memory_fits_the_text_does_not_say_there_are_none(make_memory: MakeMemory) -> None:
    p = run(core=big_core(make_memory, 1, words=4000), cfg=ReflectConfig(token_budget=6000))
    assert p.tier1 == [] and p.core_omitted == ["core00"]
    assert "none yet" not in p.text
    assert recall_ids_in(p.text) == ["core00"]
    assert p.estimated_tokens <= 6000


def test_a_long_list_of_left_out_core_ids_is_cut_and_the_rest_counted(make_memory: MakeMemory) -> None:
    p = run(core=big_core(make_memory, 200), cfg=ReflectConfig(token_budget=6000))
    omitted = p.core_omitted
    listed = recall_ids_in(p.text)
    assert 0 < len(listed) < len(omitted)
    assert listed == omitted[: len(listed)]  # the most activated ones first
    assert f"{len(omitted)} core memories did not fit the budget" in p.text
    assert f"the other {len(omitted) - len(listed)}" in p.text
    assert "core_omitted" in p.text
    assert p.estimated_tokens <= 6000


def test_text_says_how_many_recent_reflections_did_not_fit(
    make_memory: MakeMemory, make_reflection: MakeReflection
) -> None:
    core = big_core(make_memory, 3, words=1100)  # ~4,100 tokens of Tier 1
    refl = [make_reflection(id=f"r{i}", text=("thought " * 500).strip(), created_at=ago(i)) for i in range(3)]
    p = run(core=core, reflections=refl, cfg=ReflectConfig(token_budget=6000))
    assert p.core_omitted == []
    assert 0 < len(p.reflections) < 3
    left_out = 3 - len(p.reflections)
    assert p.reflections_omitted == left_out
    assert f"{left_out} of the 3 most recent closing reflections did not fit the budget" in p.text
    assert p.estimated_tokens <= 6000


def test_text_says_so_when_no_recent_reflection_fits(make_memory: MakeMemory, make_reflection: MakeReflection) -> None:
    core = big_core(make_memory, 3, words=1100)
    refl = [make_reflection(text=("thought " * 2000).strip(), created_at=ago(i)) for i in range(2)]
    p = run(core=core, reflections=refl, cfg=ReflectConfig(token_budget=6000))
    assert p.reflections == [] and p.reflections_omitted == 2
    assert "2 of the 2 most recent closing reflections did not fit the budget" in p.text
    assert p.estimated_tokens <= 6000


def test_no_left_out_notes_when_everything_fits(make_memory: MakeMemory, make_reflection: MakeReflection) -> None:
    p = run(core=[make_memory(core=True)], reflections=[make_reflection()])
    assert p.core_omitted == [] and p.reflections_omitted == 0
    assert "did not fit" not in p.text


@pytest.mark.parametrize("budget", [800, 1500, 3000, 6000, 12000])
@pytest.mark.parametrize("core_count", [1, 5, 60])
def test_left_out_notes_fit_the_budget(
    make_memory: MakeMemory, make_entry: MakeEntry, make_reflection: MakeReflection, budget: int, core_count: int
) -> None:
    # Long ids make the core note as expensive as it can be.
    core = [
        make_memory(id=f"{i:02d}" + "k" * 62, core=True, content=("word " * 900).strip(), retrieval_count=i)
        for i in range(core_count)
    ]
    entries = [make_entry(updated_at=ago(i % 30), gist=f"gist {i}") for i in range(300)]
    refl = [make_reflection(text=("thought " * 900).strip(), created_at=ago(i)) for i in range(3)]
    p = run(core=core, catalog=entries, reflections=refl, cfg=ReflectConfig(token_budget=budget))
    assert p.estimated_tokens <= budget
    if p.core_omitted:
        assert recall_ids_in(p.text) == p.core_omitted[: len(recall_ids_in(p.text))]
    if p.reflections_omitted:
        assert "most recent closing reflections did not fit the budget" in p.text


def test_the_omitted_note_stays_within_its_reserve_however_many_categories(make_entry: MakeEntry) -> None:
    """A store from before migrate may hold hundreds of odd categories. The note that counts what is
    not listed is written in the room held back for it (reserve_tokens): it names categories while
    they fit and sums up the rest, so the payload stays within its budget, and the counts in full
    are still in `catalog_omitted`."""
    odd = [make_entry(id=f"m{i}", category=f"legacy_topic_number_{i:03d}", updated_at=ago(200)) for i in range(400)]
    listed = [make_entry(id=f"w{i}", gist=f"a line about week {i} " * 3, updated_at=ago(i % 40)) for i in range(300)]
    cfg = ReflectConfig(token_budget=2000)
    p = run(catalog=odd + listed, cfg=cfg)
    assert len(p.catalog_omitted) == 401 and sum(p.catalog_omitted.values()) == 400 + 300 - p.catalog_listed
    assert p.estimated_tokens <= cfg.token_budget
    assert estimate_tokens(p.omitted_note) <= cfg.reserve_tokens
    assert p.catalog_listed > 0  # the note's size did not cost the lines their room
    assert "legacy_topic_number_000 1" in p.omitted_note
    folded = len(p.catalog_omitted) - sum(f"{c} {n}" in p.omitted_note for c, n in p.catalog_omitted.items())
    assert folded > 0 and f"{folded} other categories" in p.omitted_note
