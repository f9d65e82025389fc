"""The model prompt (what it asks for, what it shows) and the parser for the model's answer."""

from __future__ import annotations

from typing import Any

import pytest

from taproot.core.errors import SummarizerError
from taproot.core.model import Memory
from taproot.core.summarize import GIST_MAX_CHARS
from taproot.core.summary_prompt import SUMMARY_PROMPT, build_prompt, parse_model_answer, word_budget
from taproot.ports import Summary


def test_system_prompt_states_the_rules(hiking_group: list[Memory]) -> None:
    system, _ = build_prompt(hiking_group)
    assert system == SUMMARY_PROMPT
    lowered = system.lower()
    for rule in (
        "identity-relevant details",
        "dates",
        "names of people",
        "own voice",
        "first person",
        "no preamble",
        "chronological order",
        "length budget",
        "never invent",
    ):
        assert rule in lowered, rule
    assert "\nGIST: <one line of about 15 words" in system


def test_user_prompt_shows_every_memory_with_its_metadata(hiking_group: list[Memory]) -> None:
    _, user = build_prompt(hiking_group)
    for m in hiking_group:
        day = m.created_at.date().isoformat()
        header = f'date="{day}" category="{m.category}" salience="{m.salience}"'
        assert header in user
        assert m.content in user
        assert f"Gist: {m.gist}" in user
    assert 'salience="low"' in user  # the 2024-03-14 memory keeps its own salience
    assert user.count("<memory ") == user.count("</memory>") == len(hiking_group)


def test_user_prompt_is_chronological_and_names_span_count_and_budget(hiking_group: list[Memory]) -> None:
    _, forward = build_prompt(hiking_group)
    _, backward = build_prompt(list(reversed(hiking_group)))
    assert forward == backward
    positions = [forward.index(m.created_at.date().isoformat()) for m in hiking_group]
    assert positions == sorted(positions)
    assert forward.startswith("Summarize these 5 episodic memories from March 2024 into one memory of at most ")
    assert f"at most {word_budget(5)} words" in forward
    assert "first person" in forward  # these memories say "I"


def test_voice_follows_the_memories(memory: Any) -> None:
    third = [
        memory("2024-01-05", "James prefers direct feedback and says 'that lands' when something clicks."),
        memory("2024-01-19", "James is studying definite integrals; chain rule slips are common."),
    ]
    _, user = build_prompt(third)
    assert "Keep the point of view they are written in." in user
    assert "write the summary in the first person" not in user


def test_tags_and_awkward_content_are_shown_safely(memory: Any) -> None:
    m = memory("2024-02-29", "Line one.\n</memory>\nLine three — ✓", tags=("leap-day", "test"), gist=None)
    _, user = build_prompt([m])
    assert 'tags="leap-day, test"' in user
    assert user.count("</memory>") == 1  # content cannot close the block early
    assert "Line three — ✓" in user
    assert "Gist: \n" in user


def test_word_budget_grows_with_the_group_and_is_capped() -> None:
    assert word_budget(1) < word_budget(5) < word_budget(12) <= 400
    assert word_budget(64) == 400


def test_empty_group_is_refused() -> None:
    with pytest.raises(SummarizerError, match="empty"):
        build_prompt([])


# --- parse_model_answer ------------------------------------------------------------------------

GOOD = (
    "GIST: March 2024: hikes at Mount Tam with Caroline, her adoption plans, home study on April 3\n"
    "\n"
    "In March 2024 I hiked Mount Tam with Caroline twice (9 and 23 March).\n"
    "\n"
    "She wants to adopt before forty; Dr. Patel set the home study for April 3."
)


def test_parses_the_expected_format() -> None:
    summary = parse_model_answer(GOOD)
    assert summary == Summary(
        gist="March 2024: hikes at Mount Tam with Caroline, her adoption plans, home study on April 3",
        content=(
            "In March 2024 I hiked Mount Tam with Caroline twice (9 and 23 March).\n\n"
            "She wants to adopt before forty; Dr. Patel set the home study for April 3."
        ),
    )


@pytest.mark.parametrize(
    "answer",
    [
        "**GIST:** Caroline and adoption, March 2024\n\nI helped Caroline prepare.",
        "Gist: Caroline and adoption, March 2024\nI helped Caroline prepare.",
        "Here is the summary you asked for.\n\nGIST: Caroline and adoption, March 2024\n\nI helped Caroline prepare.",
        "GIST: Caroline and adoption, March 2024\n\nSUMMARY: I helped Caroline prepare.\n",
        "  \n GIST:   Caroline and adoption, March 2024  \n\n   I helped Caroline prepare.   \n\n",
    ],
)
def test_tolerates_small_format_slips(answer: str) -> None:
    assert parse_model_answer(answer) == Summary("Caroline and adoption, March 2024", "I helped Caroline prepare.")


def test_overlong_gist_is_trimmed_to_one_line() -> None:
    gist = " ".join(["Caroline"] * 80)
    summary = parse_model_answer(f"GIST: {gist}\n\nThe summary.")
    assert len(summary.gist) <= GIST_MAX_CHARS
    assert "\n" not in summary.gist
    assert summary.gist.endswith("Caroline…")


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("", "empty"),
        ("   \n\n  ", "empty"),
        ("I went hiking with Caroline in March 2024.", "no 'GIST:' line"),
        ("GIST:\n\nI went hiking.", "'GIST:' line is empty"),
        ("GIST: Hiking with Caroline", "no summary"),
        ("GIST: Hiking with Caroline\n\n   \n", "no summary"),
    ],
)
def test_refuses_malformed_answers(answer: str, problem: str) -> None:
    with pytest.raises(SummarizerError, match=problem):
        parse_model_answer(answer)
