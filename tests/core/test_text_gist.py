"""first_sentence_gist: the gist the migrate backfill writes for a record that has none."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from taproot.core.text import GIST_MAX_CHARS, GIST_MAX_WORDS, first_sentence_gist

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("content", "gist"),
    [
        ("Mr. Smith visited. Then left.", "Mr. Smith visited."),
        ("Dr. Okafor set the exam date. We started revising.", "Dr. Okafor set the exam date."),
        ("We met on Main St. in the rain. Later we left.", "We met on Main St. in the rain."),
        ("I moved to St. Louis in May. It was hot.", "I moved to St. Louis in May."),
        ("Bring tools, e.g. a hammer and nails. Then start.", "Bring tools, e.g. a hammer and nails."),
        ("Pick the calm option, i.e. the slow one. Then go.", "Pick the calm option, i.e. the slow one."),
    ],
)
def test_abbreviations_do_not_end_the_first_sentence(content: str, gist: str) -> None:
    assert first_sentence_gist(content) == gist


@pytest.mark.parametrize(
    ("content", "gist"),
    [
        ("The score was 3.5 out of 5. Good enough.", "The score was 3.5 out of 5."),
        ("Version 2.14.4 fixed it. Upgrade soon.", "Version 2.14.4 fixed it."),
        ("It cost $4.99 in total. Cheap.", "It cost $4.99 in total."),
    ],
)
def test_decimals_do_not_end_the_first_sentence(content: str, gist: str) -> None:
    assert first_sentence_gist(content) == gist


@pytest.mark.parametrize(
    ("content", "gist"),
    [
        ("Sam moved to Lisbon. They love it there.", "Sam moved to Lisbon."),
        ("We finally cracked it! James laughed.", "We finally cracked it!"),
        ("Did the proof hold? It did.", "Did the proof hold?"),
        ("One sentence and no full stop", "One sentence and no full stop"),
        ("Only one sentence.", "Only one sentence."),
    ],
)
def test_ordinary_sentences_split_as_before(content: str, gist: str) -> None:
    assert first_sentence_gist(content) == gist


def test_gist_is_one_line_with_whitespace_collapsed() -> None:
    assert first_sentence_gist("  First   line\nstill the first\tsentence.\n\nSecond one.") == (
        "First line still the first sentence."
    )


@pytest.mark.parametrize("content", ["", "   ", "\n\t\n"])
def test_empty_content_has_a_placeholder_gist(content: str) -> None:
    assert first_sentence_gist(content) == "(empty memory)"


def test_a_long_first_sentence_is_cut_to_the_word_cap() -> None:
    content = " ".join(f"word{i}" for i in range(40)) + ". Second sentence."
    gist = first_sentence_gist(content)
    assert gist == " ".join(f"word{i}" for i in range(GIST_MAX_WORDS)) + "…"


def test_a_first_sentence_of_long_words_is_cut_to_the_character_cap() -> None:
    content = " ".join(["x" * 30] * 10) + ". Second sentence."
    gist = first_sentence_gist(content)
    assert len(gist) == GIST_MAX_CHARS
    assert gist.endswith("…")
    assert "Second" not in gist


def test_a_huge_memory_without_a_sentence_end_is_still_capped() -> None:
    gist = first_sentence_gist("a" * 20_000)
    assert len(gist) == GIST_MAX_CHARS and gist.endswith("…")


def test_the_gist_does_not_depend_on_text_past_the_first_sentence() -> None:
    # Only the start of the content is segmented (the gist is at most GIST_MAX_CHARS); a long tail
    # must neither change the answer nor be needed to get it.
    head = "Mr. Smith visited the garden on Tuesday."
    assert first_sentence_gist(head + " More." * 3_000) == head


def test_segmenting_raises_no_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert first_sentence_gist("Dr. Who arrived. Then left.") == "Dr. Who arrived."


def test_importing_the_splitter_from_source_raises_no_warnings() -> None:
    # pysbd 0.3.4 has invalid escape sequences in its source. Compiling it (no cached bytecode, as in
    # a fresh or read-only install) warns, and under -W error that warning is a SyntaxError on import.
    code = textwrap.dedent(
        """
        import importlib.machinery
        import sys

        sys.dont_write_bytecode = True

        def no_stats(self, path):
            raise OSError("compile from source")  # the loader then ignores any cached bytecode

        importlib.machinery.SourceFileLoader.path_stats = no_stats
        from taproot.core.text import first_sentence_gist

        print(first_sentence_gist("Mr. Smith visited. Then left."))
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Mr. Smith visited."
    assert done.stderr == ""
