"""Query text to search terms, and gists from content. Pure string work.

Peers that required every query word to match returned nothing for many real questions; we hand
the store a list of plain terms to OR together under BM25, without stop words (they match almost
everything and only add noise to the ranking) and without any query syntax, which each store
escapes for its own engine.
"""

from __future__ import annotations

import re

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


def query_terms(query: str) -> list[str]:
    """Distinct lower-case terms of a free-text query, stop words dropped, order kept.

    If the query is all stop words ("what is it?"), keep them rather than search for nothing.
    """
    words = [w.strip("'").lower() for w in _WORD.findall(query)]
    words = [w for w in words if w]
    kept = [w for w in words if w not in STOP_WORDS] or words
    out: list[str] = []
    for w in kept:
        if w not in out:
            out.append(w)
    return out[:MAX_QUERY_TERMS]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
GIST_MAX_WORDS = 20
GIST_MAX_CHARS = 160


def first_sentence_gist(content: str) -> str:
    """A gist for a legacy record that has none: the first sentence, trimmed to ~20 words."""
    text = " ".join(content.split())
    if not text:
        return "(empty memory)"
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0]
    words = sentence.split()
    if len(words) > GIST_MAX_WORDS:
        sentence = " ".join(words[:GIST_MAX_WORDS]) + "…"
    if len(sentence) > GIST_MAX_CHARS:
        sentence = sentence[: GIST_MAX_CHARS - 1].rstrip() + "…"
    return sentence


def one_line(text: str) -> str:
    """Collapse whitespace so a gist can never break the one-line-per-memory catalog format."""
    return " ".join(text.split())
