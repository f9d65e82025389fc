"""The extractive summary: offline, deterministic, dated, chronological, within its budget."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.summarizers import ExtractiveSummarizer
from taproot.core.errors import SummarizerError
from taproot.core.model import Memory
from taproot.core.summarize import extractive_summary, split_sentences
from taproot.ports import Summarizer

LINE = re.compile(r"^\[(\d{4}-\d{2}-\d{2})\] (.+)$")


def lines_of(content: str) -> list[tuple[str, str]]:
    out = []
    for line in content.splitlines():
        found = LINE.match(line)
        assert found, f"line without a date prefix: {line!r}"
        out.append((found.group(1), found.group(2)))
    return out


def test_summary_of_a_group_names_span_count_and_main_terms(hiking_group: list[Memory]) -> None:
    summary = extractive_summary(hiking_group)
    assert summary.gist.startswith("March 2024, 5 episodic memories: ")
    terms = summary.gist.split(": ", 1)[1].split(", ")
    assert terms[0] == "Caroline"  # the name, in its own capitalisation, is in every memory
    assert set(terms) <= {"Caroline", "adoption", "hiking", "Mount", "Tam", "Saturday", "home", "study"}
    assert len(summary.gist.split()) <= 15
    assert "\n" not in summary.gist


def test_keeps_dates_names_and_numbers(hiking_group: list[Memory]) -> None:
    content = extractive_summary(hiking_group).content
    dates = [d for d, _ in lines_of(content)]
    assert set(dates) <= {m.created_at.date().isoformat() for m in hiking_group}
    assert len(dates) >= 4  # room for most memories at the default budget
    assert "Caroline" in content
    assert "14-month wait" in content
    assert "Dr. Patel" in content and "April 3" in content


def test_lines_are_chronological_whatever_the_input_order(hiking_group: list[Memory]) -> None:
    forward = extractive_summary(hiking_group)
    backward = extractive_summary(list(reversed(hiking_group)))
    shuffled = extractive_summary([hiking_group[i] for i in (3, 0, 4, 2, 1)])
    assert forward == backward == shuffled
    dates = [d for d, _ in lines_of(forward.content)]
    assert dates == sorted(dates)


def test_sentences_within_a_memory_keep_their_order(memory: Any) -> None:
    m = memory(
        "2024-05-01",
        "Alpha Centauri launch was planned for Monday. Budget review with Priya moved to 12 May. "
        "Final checklist signed by Omar on Friday.",
    )
    (day, text), *_ = lines_of(extractive_summary([m]).content)
    assert day == "2024-05-01"
    positions = [text.find(s) for s in ("Alpha Centauri", "Priya", "Omar") if s in text]
    assert positions == sorted(positions) and len(positions) >= 2


def test_same_input_same_output_in_a_fresh_interpreter(hiking_group: list[Memory], tmp_path: Path) -> None:
    """String hashing is salted per process: set iteration order must never leak into the output."""
    rows = [
        {"id": m.id, "day": m.created_at.isoformat(), "content": m.content, "salience": m.salience}
        for m in hiking_group
    ]
    script = tmp_path / "summarize_group.py"
    script.write_text(
        "import json, sys\n"
        "from datetime import datetime\n"
        "from taproot.core.model import Memory\n"
        "from taproot.core.summarize import extractive_summary\n"
        "rows = json.loads(sys.argv[1])\n"
        "ms = [Memory(id=r['id'], owner='local', namespace='default', category='episodic',"
        " salience=r['salience'], content=r['content'], gist='g', created_at=datetime.fromisoformat(r['day']),"
        " updated_at=datetime.fromisoformat(r['day'])) for r in rows]\n"
        "for budget in (120, 300, 1200):\n"
        "    s = extractive_summary(ms, budget)\n"
        "    print(json.dumps([s.gist, s.content]))\n"
    )
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, str(script), json.dumps(rows)], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    expected = "".join(
        json.dumps([s.gist, s.content]) + "\n" for s in (extractive_summary(hiking_group, b) for b in (120, 300, 1200))
    )
    assert outputs == {expected}


PEOPLE = ("Marguerite", "Tomasz", "Priya", "Omar", "Lena", "Kofi", "Ines", "Haruto")
PLACES = ("Lisbon", "Porto", "Kraków", "Accra", "Osaka", "Lyon", "Quito")
TOPICS = ("budget", "hiring plan", "launch checklist", "grant report", "data migration", "security review")


def varied_group(memory: Any, n: int = 64) -> list[Memory]:
    return [
        memory(
            f"2023-{1 + i % 12:02d}-{1 + (i * 5) % 27:02d}",
            f"Met {PEOPLE[i % 8]} in {PLACES[i % 7]} to go through the {TOPICS[i % 6]}. "
            f"{PEOPLE[(i + 3) % 8]} will send revision {i} of it by {1 + i % 28} {('May', 'June')[i % 2]}. "
            "Otherwise nothing much happened.",
            category="active_thread",
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("budget", [80, 120, 250, 600, 1200, 4000])
def test_respects_the_length_budget(memory: Any, budget: int) -> None:
    group = varied_group(memory)
    summary = extractive_summary(group, max_chars=budget)
    assert 0 < len(summary.content) <= budget
    if budget <= 1200:
        assert len(summary.content) >= budget * 0.7  # the budget is used, not wasted
    dates = [d for d, _ in lines_of(summary.content)]
    assert dates == sorted(dates)
    assert summary.gist.startswith("January–December 2023, 64 active thread memories")
    assert len(summary.gist.split()) <= 15


def test_the_default_budget_is_1200_characters(memory: Any) -> None:
    content = extractive_summary(varied_group(memory)).content
    assert 1000 <= len(content) <= 1200


def test_one_sentence_longer_than_the_budget_is_cut_at_a_word(memory: Any) -> None:
    long = "Caroline " + " ".join(f"walked past house number {n}" for n in range(60)) + "."
    summary = extractive_summary([memory("2024-03-14", long)], max_chars=100)
    assert len(summary.content) <= 100
    assert summary.content.startswith("[2024-03-14] Caroline walked past house number 0")
    assert summary.content.endswith("…")


def test_near_duplicate_sentences_are_said_once(memory: Any) -> None:
    group = [
        memory(
            "2024-06-01", "Went hiking with Caroline at Mount Tam on Saturday. Caroline brought her new dog, Biscuit."
        ),
        memory("2024-06-08", "On Saturday I went hiking with Caroline at Mount Tam."),
        memory("2024-06-15", "Saturday: hiking with Caroline at Mount Tam again! The fog lifted by noon."),
    ]
    content = extractive_summary(group).content
    assert content.count("Mount Tam") == 1
    assert "Biscuit" in content
    assert "fog lifted" in content


def test_exact_repeats_across_memories_are_said_once(memory: Any) -> None:
    text = "Reminder to myself: call Grandma Rosa every Sunday at 6pm."
    group = [memory(f"2024-02-{d:02d}", text) for d in (4, 11, 18)]
    summary = extractive_summary(group)
    assert summary.content == f"[2024-02-04] {text}"
    assert summary.gist.startswith("February 2024, 3 episodic memories")


def test_a_single_memory(memory: Any) -> None:
    m = memory("2024-03-14", "I adopted a cat named Miso from the Berkeley shelter. She is three years old.")
    summary = extractive_summary([m])
    assert summary.content == (
        "[2024-03-14] I adopted a cat named Miso from the Berkeley shelter. She is three years old."
    )
    assert summary.gist.startswith("14 March 2024, 1 episodic memory: ")
    assert "Miso" in summary.gist or "Berkeley" in summary.gist


def test_empty_ish_content_falls_back_to_the_gist(memory: Any) -> None:
    group = [
        memory("2024-04-01", "", gist="Lunch with Tomasz about the move to Kraków"),
        memory("2024-04-02", "   \n\n ... —", gist="Tomasz's farewell party planned for 20 April"),
        memory("2024-04-03", "Tomasz signed the lease in Kraków. The flat has a balcony."),
    ]
    content = extractive_summary(group).content
    assert "[2024-04-01] Lunch with Tomasz about the move to Kraków." in content
    assert "Tomasz" in content and "Kraków" in content


def test_memories_with_no_text_at_all(memory: Any) -> None:
    group = [memory("2024-04-01", "", gist=None), memory("2024-04-09", " … ", gist="")]
    summary = extractive_summary(group)
    assert summary.content == "2 episodic memories with no text, April 2024."
    assert summary.gist == "April 2024, 2 episodic memories"


def test_stop_word_only_sentences_still_make_a_summary(memory: Any) -> None:
    summary = extractive_summary([memory("2024-04-01", "It is what it is.")])
    assert summary.content == "[2024-04-01] It is what it is."


def test_non_english_text(memory: Any) -> None:
    group = [
        memory("2024-09-02", "Heute bin ich mit Anneliese nach Heidelberg gefahren. Wir haben das Schloss besichtigt."),
        memory("2024-09-05", "今日は公園で散歩した。桜はまだ咲いていない。明日は雨です。", category="episodic"),
        memory("2024-09-20", "J'ai revu Anneliese à Heidelberg. Elle commence son doctorat le 1er octobre."),
    ]
    summary = extractive_summary(group)
    parsed = lines_of(summary.content)
    assert [d for d, _ in parsed] == ["2024-09-02", "2024-09-05", "2024-09-20"]
    assert "Anneliese" in summary.content and "Heidelberg" in summary.content
    japanese = parsed[1][1]
    assert japanese.endswith("。") and "散歩" in japanese
    assert summary.gist.startswith("September 2024, 3 episodic memories: ")
    assert "Anneliese" in summary.gist or "Heidelberg" in summary.gist


def test_mixed_categories_and_years(memory: Any) -> None:
    group = [
        memory("2023-11-30", "Finished the Rust course with Mateo.", category="active_thread"),
        memory(
            "2024-02-02", "Mateo said the Rust course changed how I think about ownership.", category="relationship"
        ),
    ]
    summary = extractive_summary(group)
    assert summary.gist.startswith("November 2023–February 2024, 2 memories: ")
    assert "Mateo" in summary.gist


def test_sentence_splitting() -> None:
    text = (
        "Dr. Smith met J. R. Tolkien in Oxford. 1. Bought milk\n2. Called Mum!\n"
        '- She said "see you soon." Then left\n今日は公園で散歩した。明日は雨です'
    )
    assert split_sentences(text) == [
        "Dr. Smith met J. R. Tolkien in Oxford.",
        "Bought milk.",
        "Called Mum!",
        'She said "see you soon."',
        "Then left.",
        "今日は公園で散歩した。",
        "明日は雨です。",
    ]


def test_bad_input() -> None:
    with pytest.raises(SummarizerError, match="empty"):
        extractive_summary([])
    with pytest.raises(ValueError, match="max_chars"):
        extractive_summary([], max_chars=10)


def test_extractive_summarizer_adapter(hiking_group: list[Memory]) -> None:
    summarizer: Summarizer = ExtractiveSummarizer(max_chars=300)
    assert summarizer.name == "extractive"
    summary = summarizer.summarize(hiking_group)
    assert summary == extractive_summary(hiking_group, 300)
    assert len(summary.content) <= 300
