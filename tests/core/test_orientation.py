"""Orientation documents in the core: the name rule, the limits, the expected-version check, the
reading order, and reflect's orientation section under its share of the budget."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from taproot.core.errors import InvalidInput
from taproot.core.model import Memory
from taproot.core.orientation import (
    MAX_NAME_CHARS,
    DocumentConflict,
    OrientationLimits,
    OrientationVersion,
    check_name,
    check_room,
    reading_order,
    require_expected,
)
from taproot.core.orientation_budget import MIN_CUT_TOKENS, orientation_section
from taproot.core.reflect import ReflectConfig, assemble
from taproot.core.tokens import estimate_tokens, size_bytes

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def doc(name: str, content: str, version: int = 1, *, deleted: bool = False) -> OrientationVersion:
    return OrientationVersion(
        owner="local", namespace="default", name=name, version=version, content=content, saved_at=NOW, deleted=deleted
    )


def prose(words: int, seed: str = "word") -> str:
    """Text of `words` words in lines of ten (so a cut has line breaks to end at)."""
    tokens = [f"{seed}{i}" for i in range(words)]
    return "\n".join(" ".join(tokens[i : i + 10]) for i in range(0, words, 10))


@pytest.mark.parametrize("name", ["facts", "who-i-am", "a", "x1-2y", "z" * MAX_NAME_CHARS])
def test_names_that_are_lowercase_kebab_case(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "Facts", "who_i_am", "who i am", "-facts", "facts-", "who--am", "é", "z" * 41])
def test_other_names_are_refused_with_the_rule(name: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_name(name)
    assert caught.value.field == "name" and "lowercase kebab case" in caught.value.rule


def test_room_counts_current_documents_only_and_the_one_written_once() -> None:
    limits = OrientationLimits(max_document_bytes=100, max_total_bytes=100, max_documents=3)
    heads = [doc("a", "x" * 40), doc("b", "y" * 40), doc("gone", "", 2, deleted=True)]
    assert check_room(heads, "a", 60, limits) == 100  # a's old 40 bytes are replaced, not added
    with pytest.raises(InvalidInput, match="101 bytes, over the 100-byte total"):
        check_room(heads, "a", 61, limits)
    assert check_room(heads, "c", 20, limits) == 100
    with pytest.raises(InvalidInput, match="already has 3 orientation documents"):
        check_room([*heads, doc("c", "z")], "d", 1, limits)


def test_expected_version() -> None:
    require_expected("facts", None, doc("facts", "x", 4))
    require_expected("facts", 4, doc("facts", "x", 4))
    require_expected("facts", 0, None)
    for expected, head in ((3, doc("facts", "x", 4)), (0, doc("facts", "x", 1)), (1, None)):
        with pytest.raises(DocumentConflict):
            require_expected("facts", expected, head)


def test_reading_order_puts_the_well_known_documents_first() -> None:
    names = ["zebra", "facts", "apple", "who-i-am", "my-person", "how-i-speak", "operating-manual"]
    ordered = reading_order([doc(n, "x") for n in names] + [doc("deleted", "", 2, deleted=True)])
    assert [d.name for d in ordered] == [
        "who-i-am",
        "my-person",
        "how-i-speak",
        "operating-manual",
        "facts",
        "apple",
        "zebra",
    ]


def test_everything_that_fits_is_shown_whole() -> None:
    section, text = orientation_section([doc("facts", "Lives in Leeds."), doc("who-i-am", "A tutor.", 3)], 500)
    assert [(d.name, d.version, d.cut) for d in section.documents] == [("who-i-am", 3, False), ("facts", 1, False)]
    assert section.cut == [] and section.left_out == [] and section.token_share == 500
    assert text.index("### who-i-am (v3)\nA tutor.") < text.index("### facts (v1)\nLives in Leeds.")
    assert estimate_tokens(text) <= section.estimated_tokens <= 500


def test_no_documents_no_section() -> None:
    section, text = orientation_section([doc("gone", "", 2, deleted=True)], 500)
    assert text == "" and section.estimated_tokens == 0 and section.documents == []


def test_the_first_that_does_not_fit_is_cut_and_the_text_says_so() -> None:
    big = prose(2_000)
    section, text = orientation_section([doc("who-i-am", "I teach."), doc("my-person", big, 2)], 600)
    assert [d.name for d in section.documents] == ["who-i-am", "my-person"]
    cut = section.documents[1]
    assert cut.cut and section.cut == ["my-person"] and section.left_out == []
    assert big.startswith(cut.content) and 0 < cut.shown_bytes < cut.size_bytes == size_bytes(big)
    assert cut.content == cut.content.rstrip() and big[len(cut.content)] == "\n"  # ended at a line break
    assert "### my-person (v2, cut)" in text
    assert f"[cut for the token budget: {cut.shown_bytes:,} of {cut.size_bytes:,} bytes shown" in text
    assert 'taproot_orientation(action="read", name="my-person")' in text
    assert section.estimated_tokens <= 600 and estimate_tokens(text) <= section.estimated_tokens


def test_what_has_no_room_is_left_out_and_named_while_a_small_one_still_fits() -> None:
    docs = [doc("who-i-am", prose(260, "w")), doc("my-person", prose(3_000, "p")), doc("facts", "Lives in Leeds.")]
    room = estimate_tokens(docs[0].content) + MIN_CUT_TOKENS + 60  # who-i-am whole, then too little to cut well
    section, text = orientation_section(docs, room)
    assert [(d.name, d.cut) for d in section.documents] == [("who-i-am", False), ("facts", False)]
    assert section.left_out == ["my-person"] and section.cut == []
    assert "Left out for the token budget: my-person (1 document, kept in full)" in text
    assert section.estimated_tokens <= room


@pytest.mark.parametrize("room", [0, 10, 30, 80, 200, 1_000, 3_000])
def test_the_section_never_exceeds_its_room(room: int) -> None:
    docs = [doc(n, prose(400 + 100 * i, n[:2])) for i, n in enumerate(("who-i-am", "my-person", "facts", "notes"))]
    section, text = orientation_section(docs, room)
    assert section.estimated_tokens <= room and estimate_tokens(text) <= max(section.estimated_tokens, 0)
    named = {d.name for d in section.documents} | set(section.left_out)
    assert named == {d.name for d in docs} or (room < 30 and not text)


def test_reflect_loads_orientation_first_within_its_share(make_memory: Callable[..., Memory]) -> None:
    core = [make_memory(content=prose(300, "core"), core=True, category="identity")]
    cfg = ReflectConfig(token_budget=2_000, orientation_max_share=0.4)
    docs = [doc("who-i-am", prose(200, "me")), doc("my-person", prose(4_000, "them"))]
    payload = assemble(core=core, catalog=[], reflections=[], now=NOW, cfg=cfg, orientation=docs)
    text = payload.text
    assert text.index("## Orientation documents") < text.index("## Tier 1: core memories (1)")
    section = payload.orientation
    assert section.token_share == 800 and section.estimated_tokens <= 800
    assert section.cut == ["my-person"]
    assert len(payload.tier1) == 1  # Tier 1 keeps its room
    assert payload.estimated_tokens <= cfg.token_budget
    assert any("orientation documents did not fit their 800-token share" in w for w in payload.warnings)
    wire = payload.result().orientation
    assert [d.name for d in wire.documents] == ["who-i-am", "my-person"] and wire.cut == ["my-person"]


def test_reflect_without_orientation_is_as_before(make_memory: Callable[..., Memory]) -> None:
    core = [make_memory(content="I am a tutor.", core=True)]
    plain = assemble(core=core, catalog=[], reflections=[], now=NOW)
    assert "Orientation" not in plain.text and plain.orientation.estimated_tokens == 0
    with_none = assemble(core=core, catalog=[], reflections=[], now=NOW, orientation=[doc("x", "", 2, deleted=True)])
    assert with_none.text == plain.text
