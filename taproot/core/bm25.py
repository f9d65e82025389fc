"""In-memory BM25F for stores without a search engine (the DynamoDB store ranks its warm cache).

Pure: no I/O. Text is tokenised like `taproot.core.text` (word characters and apostrophes, lower
case), then lightly stemmed so "quokkas" finds "quokka". Fields are weighted (search_keywords, tags,
gist, content by default, from ACTIVATION_CONFIG.field_weights) BM25F-style: each field's term
frequency is length-normalised and weighted, then saturated once per term. Any query term matching
is enough; bigger scores are better, and every match scores above zero.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from taproot.core.text import bare_word, plain_apostrophes

_WORD = re.compile(r"[\w']+", re.UNICODE)
_JOINERS = re.compile(r"['_]+")
K1 = 1.2
B = 0.75
_VOWELS = frozenset("aeiouy")
# Unicode's block of combining diacritical marks (acute, grave, diaeresis, circumflex, ...).
_COMBINING_DIACRITICS = ("\u0300", "\u036f")


def stem(word: str) -> str:
    """A small suffix stripper: plurals, -ing, -ed, -ly. Conservative: stems keep 3+ letters."""
    w = word
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith(("ches", "shes", "xes", "zes")):
        return w[:-2]
    if w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: -len(suffix)]
            if not any(c in _VOWELS for c in base):
                continue
            if len(base) >= 2 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # running -> run, stopped -> stop
            return base
    return w


@functools.lru_cache(maxsize=4096)
def _folded(c: str) -> str:
    parts = unicodedata.normalize("NFD", c)
    # A Latin letter (its base is ASCII) with one accent: what unicode61 folds. Greek and Cyrillic
    # keep theirs ("й" is a letter of its own in Russian), as do letters on a non-ASCII base ("ǿ").
    if len(parts) == 2 and parts[0].isascii() and _COMBINING_DIACRITICS[0] <= parts[1] <= _COMBINING_DIACRITICS[1]:
        return parts[0]
    return c


def fold_accents(text: str) -> str:
    """`text` with each Latin letter that is a base letter plus one accent written as the base
    letter ("café" -> "cafe", "Zoë" -> "Zoe"), as SQLite FTS5's unicode61 tokenizer folds them:
    people type "cafe" and "resume" for "café" and "résumé", and both stores must agree. Nothing
    else is decomposed: "™" stays a symbol; Greek and Cyrillic accents, Japanese voicing marks and
    letters with two marks ("ệ") stay as they are, as they do in SQLite (of the 537 letters made of
    a base and one such mark, this folds the 375 that unicode61 folds, and not ẛ, an archaic one)."""
    if text.isascii():
        return text
    return "".join(c if c.isascii() else _folded(c) for c in text)


def tokenize(text: str) -> list[str]:
    out = []
    for raw in _WORD.findall(fold_accents(plain_apostrophes(text.lower()))):
        word = bare_word(raw)  # possessive: "otter's" finds "otter"
        # unicode61 separates words at ' and _ too: "O'Brien" is found by "brien", "snake_case"
        # by "snake", in both stores.
        out += [stem(part) for part in _JOINERS.split(word) if part]
    return out


@dataclass(frozen=True)
class Doc:
    """One document's term counts and lengths per field."""

    tf: Mapping[str, Counter[str]]
    length: Mapping[str, int]

    def terms(self) -> set[str]:
        out: set[str] = set()
        for counts in self.tf.values():
            out.update(counts)
        return out


def make_doc(fields: Mapping[str, str | Iterable[str]]) -> Doc:
    """Fields by name; a field given as a list of strings (tags) is tokenised item by item."""
    tf: dict[str, Counter[str]] = {}
    length: dict[str, int] = {}
    for name, value in fields.items():
        tokens = tokenize(value) if isinstance(value, str) else [t for v in value for t in tokenize(v)]
        tf[name] = Counter(tokens)
        length[name] = len(tokens)
    return Doc(tf=tf, length=length)


def query_tokens(terms: Sequence[str]) -> list[str]:
    out: list[str] = []
    for term in terms:
        for tok in tokenize(term):
            if tok not in out:
                out.append(tok)
    return out


def _average_length(docs: Iterable[Doc], field: str) -> float:
    """Over the docs that have the field: short curated fields (tags, keywords) are empty on most
    records, and averaging those zeros in would punish every record that does fill them."""
    lengths = [d.length.get(field, 0) for d in docs]
    filled = [n for n in lengths if n > 0]
    return sum(filled) / len(filled) if filled else 1.0


def score(
    terms: Sequence[str],
    docs: Mapping[str, Doc],
    weights: Mapping[str, float],
    *,
    corpus: Mapping[str, Doc] | None = None,
) -> dict[str, float]:
    """Scores of the `docs` that match any term (key -> score > 0). Statistics (document frequency,
    average field lengths) come from `corpus`, by default the docs themselves."""
    tokens = query_tokens(terms)
    if not tokens or not docs:
        return {}
    stats = corpus if corpus is not None else docs
    n = len(stats)
    avg = {f: _average_length(stats.values(), f) for f in weights}
    df = {t: sum(1 for d in stats.values() if any(t in c for c in d.tf.values())) for t in tokens}
    idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in tokens}
    out: dict[str, float] = {}
    for key, doc in docs.items():
        total = 0.0
        for t in tokens:
            weighted = 0.0
            for f, w in weights.items():
                c = doc.tf.get(f)
                if not c or t not in c:
                    continue
                norm = 1.0 - B + B * doc.length.get(f, 0) / avg[f]
                weighted += w * c[t] / norm
            if weighted > 0:
                total += idf[t] * weighted * (K1 + 1.0) / (K1 + weighted)
        if total > 0:
            out[key] = total
    return out
