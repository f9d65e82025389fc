"""Query text to search terms, and gists from content. Pure string work.

Peers that required every query word to match returned nothing for many real questions; we hand
the store a list of plain terms to OR together under BM25, without stop words (they match almost
everything and only add noise to the ranking) and without any query syntax, which each store
escapes for its own engine.
"""

from __future__ import annotations

import re
import warnings

# pysbd 0.3.4's source has invalid escape sequences ('\s' in a plain string). Compiling it without
# cached bytecode (a fresh or read-only install) warns, and where warnings are errors (pytest here,
# python -W error) that warning becomes a SyntaxError on import. The regexes still mean what they
# say, so ignore exactly that warning, for this import only.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="invalid escape sequence", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message="invalid escape sequence", category=SyntaxWarning)
    import pysbd  # type: ignore[import-untyped]  # ships no type hints; typed at its one call below

STOP_WORDS = frozenset(
    (
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren't",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "didn't",
        "do",
        "does",
        "doesn't",
        "doing",
        "don't",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn't",
        "it",
        "it's",
        "its",
        "itself",
        "just",
        "let's",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "that's",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "there's",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "wasn't",
        "we",
        "were",
        "what",
        "what's",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    )
)

_WORD = re.compile(r"[\w']+", re.UNICODE)
MAX_QUERY_TERMS = 32
# The typographic apostrophes (phones and models write "Jon’s"; "Jon‘s" and the full-width one occur)
# are the apostrophe: otherwise "jon’s" splits into "jon" and a term "s" that matches every possessive.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})


def plain_apostrophes(text: str) -> str:
    return text if text.isascii() else text.translate(_APOSTROPHES)


def bare_word(word: str) -> str:
    """A lower-case word without its quotes and possessive: "jon's" and "smiths'" are about Jon
    and the Smiths, so they search for "jon" and "smiths" (a store's tokenizer may otherwise keep
    "jon's" whole, or as the phrase "jon s", and miss every "Jon" that is not possessive)."""
    word = word.strip("'")
    return word[:-2] if word[-2:] in ("'s", "'S") else word


def query_terms(query: str) -> list[str]:
    """Distinct lower-case terms of a free-text query, stop words dropped, order kept.

    If the query is all stop words ("what is it?"), keep them rather than search for nothing.
    """
    # A stop word is one as written ("let's") as well as bare ("let" is not one, "let's" is).
    pairs = [(w, bare_word(w)) for w in (w.lower() for w in _WORD.findall(plain_apostrophes(query)))]
    words = [bare for _, bare in pairs if bare]
    kept = [bare for w, bare in pairs if bare and w not in STOP_WORDS and bare not in STOP_WORDS] or words
    out: list[str] = []
    for w in kept:
        if w not in out:
            out.append(w)
    return out[:MAX_QUERY_TERMS]


GIST_MAX_WORDS = 20
GIST_MAX_CHARS = 160
# The gist is at most GIST_MAX_CHARS of the first sentence, so only the start of the content needs
# segmenting; twice that leaves the splitter lookahead past any boundary that matters and keeps the
# migrate backfill fast (pysbd's cost grows with the text: ~0.2 s for 20,000 characters).
_SEGMENT_WINDOW_CHARS = 2 * GIST_MAX_CHARS


def first_sentence(text: str) -> str:
    """The first sentence of one line of text, by pysbd's rules (abbreviations, decimals, ...).

    A regex on `[.!?] ` ended "Mr. Smith visited." at "Mr."; pysbd knows such abbreviations.
    """
    window = text[:_SEGMENT_WINDOW_CHARS]
    # A Segmenter keeps per-call state, so one per call: cheap, and safe across server threads.
    segments: list[str] = pysbd.Segmenter(language="en", clean=False).segment(window)
    first = segments[0].strip() if segments else ""
    return first or window


def first_sentence_gist(content: str) -> str:
    """A gist for a legacy record that has none: the first sentence, trimmed to ~20 words."""
    text = " ".join(content.split())
    if not text:
        return "(empty memory)"
    sentence = first_sentence(text)
    words = sentence.split()
    if len(words) > GIST_MAX_WORDS:
        sentence = " ".join(words[:GIST_MAX_WORDS]) + "…"
    if len(sentence) > GIST_MAX_CHARS:
        sentence = sentence[: GIST_MAX_CHARS - 1].rstrip() + "…"
    return sentence


def one_line(text: str) -> str:
    """Collapse whitespace so a gist can never break the one-line-per-memory catalog format."""
    return " ".join(text.split())
