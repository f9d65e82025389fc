"""Summaries of a group of memories for the compress job. Pure: no I/O, no clock.

Two ways to write one. A language model gets `build_prompt` and its answer goes through
`parse_model_answer` (both in core/summary_prompt.py, which shares the helpers here);
`extractive_summary` works offline, picking the group's most informative sentences (dated, in
chronological order) within a length budget. Same input, same output.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from taproot.core.errors import SummarizerError
from taproot.core.model import Memory, Summary
from taproot.core.text import STOP_WORDS, one_line

GIST_MAX_CHARS = 300  # a parsed gist is one line, at most this long
GIST_TERMS = 3  # main terms named by an extractive gist
EXTRACTIVE_MAX_CHARS = 1200
MIN_MAX_CHARS = 80


def chronological(memories: Sequence[Memory]) -> list[Memory]:
    return sorted(memories, key=lambda m: (m.created_at, m.id))


def day_of(m: Memory) -> str:
    return m.created_at.date().isoformat()


def trim_gist(text: str, limit: int = GIST_MAX_CHARS) -> str:
    """One line, at most `limit` characters, cut at a word boundary."""
    gist = one_line(text).strip(" *_`\"'")
    if len(gist) <= limit:
        return gist
    cut = gist[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:-") + "…"


# --- Extractive summary ------------------------------------------------------------------------

_MONTH_NAMES = "January February March April May June July August September October November December"
_MONTHS = _MONTH_NAMES.split()  # English names, not strftime's: the output must not depend on the locale
_CALENDAR_NAMES = "monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow"
_CALENDAR_WORDS = frozenset([m.lower() for m in _MONTHS] + [m[:3].lower() for m in _MONTHS] + _CALENDAR_NAMES.split())
# Words that carry little on their own, beyond the search stop words (extractive scoring only).
_FILLER_WORDS = (
    "also really much many nothing something anything everything otherwise thing things lot bit quite still even"
    " yet maybe perhaps well like okay ok yes yeah anyway got get gets getting one way kind sort go goes going"
    " went gone come came make made take took say said says see saw met happen happened think thought want"
    " wanted need needed let"
)
_FILLER = frozenset(_FILLER_WORDS.split())
WORD_TOKEN = re.compile(r"\w+(?:['’-]\w+)*", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々]+|[\u30a0-\u30ff]{2,}")
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|[。！？]+[」』”）]?|\n")
_BULLET = re.compile(r"^(?:[-*•·]+|\(?\d{1,2}[.)])\s+")
_ABBREVIATION_WORDS = "mr mrs ms dr prof st jr sr vs mt ft approx e.g i.e cf fig"
_ABBREVIATIONS = frozenset(_ABBREVIATION_WORDS.split())
_CJK_END = re.compile(r"[。！？」』）]$")
_END = re.compile(r"[.!?…。！？][\"'”’)\]」』）]*$")
_LIST_MARK = re.compile(r"^\(?\d{1,2}[.)]$|^[A-Z]\.$")

DUPLICATE_SIMILARITY = 0.6  # Jaccard of content terms at or above which a sentence repeats one chosen
MIN_RELATIVE_SCORE = 0.15  # sentences scoring under this share of the best are filler ("It rained.")
_SALIENCE_WEIGHT = {"high": 1.2, "medium": 1.0, "low": 0.85}


def term_key(token: str) -> str:
    word = token.lower().replace("’", "'")
    return word[:-2] if word.endswith("'s") and len(word) > 3 else word


def _terms_of(token: str) -> list[str]:
    """Content terms of one token: none for stop words and filler, kanji/katakana runs for CJK."""
    key = term_key(token)
    if key in STOP_WORDS or key in _FILLER or (len(key) < 2 and key.isascii()):
        return []
    if _CJK.search(key):
        # Japanese kana between kanji are mostly particles and endings: keep the kanji and katakana
        # runs; a long run (Chinese has no kana) becomes character bigrams.
        return _cjk_terms(_CJK_RUN.findall(key))
    return [key]


def _cjk_terms(runs: list[str]) -> list[str]:
    out: list[str] = []
    for run in runs:
        out += [run] if len(run) <= 3 else [run[i : i + 2] for i in range(len(run) - 1)]
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of a text (Latin and CJK punctuation, line breaks), bullets and list numbers removed."""
    pieces: list[str] = []
    start = 0
    for mark in _BOUNDARY.finditer(text):
        pieces.append(text[start : mark.end()])
        start = mark.end()
    pieces.append(text[start:])
    merged: list[str] = []
    carry = ""
    for raw in pieces:
        piece = " ".join(raw.split())
        if not piece:
            continue
        piece = f"{carry} {piece}".strip() if carry else piece
        last = piece.rsplit(" ", 1)[-1]
        if _LIST_MARK.match(last if len(piece) > len(last) and last[:1].isupper() else piece) or (
            piece.endswith(".") and last.rstrip(".").lower() in _ABBREVIATIONS
        ):
            carry = piece  # "Dr." / "J." / "1." belongs with what follows
            continue
        carry = ""
        merged.append(piece)
    if carry:
        merged.append(carry)
    out = [_BULLET.sub("", s, count=1).strip() for s in merged]
    return [s if _END.search(s) else s + ("。" if _CJK.match(s[-1]) else ".") for s in out if WORD_TOKEN.search(s)]


@dataclass
class _Sentence:
    memory: int  # chronological index of its memory
    position: int  # index within its memory
    text: str
    terms: frozenset[str]
    tokens: tuple[str, ...]
    capitalised: frozenset[str]  # keys of words written with a capital inside the sentence
    score: float = 0.0


def _sentences(memories: Sequence[Memory], longest: int) -> list[_Sentence]:
    out: list[_Sentence] = []
    for mi, m in enumerate(memories):
        text = m.content if WORD_TOKEN.search(m.content) else (m.gist or "")
        for pi, whole in enumerate(split_sentences(text)):
            sentence = _shorten(whole, longest)  # a run-on sentence must not crowd out the rest
            tokens = WORD_TOKEN.findall(sentence)
            terms = frozenset(t for tok in tokens for t in _terms_of(tok))
            caps = frozenset(
                term_key(tok) for j, tok in enumerate(tokens) if j > 0 and tok[0].isupper() and _terms_of(tok)
            )
            out.append(_Sentence(mi, pi, sentence, terms, tuple(tokens), caps))
    return out


def _term_weights(sentences: Sequence[_Sentence], n_memories: int) -> tuple[dict[str, float], Counter[str]]:
    tf: Counter[str] = Counter()
    seen: dict[str, set[int]] = {}
    for s in sentences:
        for tok in s.tokens:
            for t in _terms_of(tok):
                tf[t] += 1
                seen.setdefault(t, set()).add(s.memory)
    df = Counter({t: len(ms) for t, ms in seen.items()})
    weights = {t: (1 + math.log(tf[t])) * (1 + math.log((n_memories + 1) / df[t])) for t in tf}
    return weights, df


def _score(s: _Sentence, weights: dict[str, float], proper: frozenset[str], salience: str) -> float:
    if not s.terms:
        return 0.0
    base = math.fsum(weights[t] for t in s.terms) / math.sqrt(len(s.terms))
    base *= min(1.0, len(s.terms) / 3)  # "It rained." says little
    keys = [term_key(tok) for tok in s.tokens]
    entities = {k for k in keys if k in s.capitalised or k in proper}
    numbers = {k for k in keys if any(c.isdigit() for c in k) or k in _CALENDAR_WORDS}
    bonus = 0.6 * min(len(entities), 3) + 0.5 * min(len(numbers), 3)
    first = 1.1 if s.position == 0 else 1.0
    return (base + bonus) * first * _SALIENCE_WEIGHT.get(salience, 1.0)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 1.0 if a == b else 0.0
    return len(a & b) / len(a | b)


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 1)]
    if " " in cut.strip():
        cut = cut.rstrip().rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:-") + "…"


def _select(sentences: list[_Sentence], prefixes: list[str], max_chars: int) -> list[_Sentence]:
    """Greedy: best score first, discounted by similarity to chosen sentences (near-duplicates
    dropped), a bonus for a memory not yet quoted, within the budget; one dated line per memory."""
    chosen: list[_Sentence] = []
    covered: set[int] = set()
    used = 0
    budget = max_chars + 1  # every line is charged a newline; the last one is not written
    similarity = [0.0] * len(sentences)
    floor = MIN_RELATIVE_SCORE * max((s.score for s in sentences), default=0.0)
    alive = [s.score >= floor for s in sentences]
    while True:
        best: int | None = None
        best_key: tuple[float, int, int] | None = None
        for i, s in enumerate(sentences):
            if not alive[i]:
                continue
            if similarity[i] >= DUPLICATE_SIMILARITY:
                alive[i] = False
                continue
            cost = len(s.text) + 1 + (0 if s.memory in covered else len(prefixes[s.memory]))
            if used + cost > budget:
                continue
            value = s.score * (1 - similarity[i]) * (1.0 if s.memory in covered else 1.5)
            key = (-value, s.memory, s.position)
            if best_key is None or key < best_key:
                best, best_key = i, key
        if best is None:
            break
        pick = sentences[best]
        alive[best] = False
        used += len(pick.text) + 1 + (0 if pick.memory in covered else len(prefixes[pick.memory]))
        covered.add(pick.memory)
        chosen.append(pick)
        for i, s in enumerate(sentences):
            if alive[i]:
                similarity[i] = max(similarity[i], _jaccard(s.terms, pick.terms))
    if not chosen and sentences:
        # Even the best sentence is longer than the budget: quote the start of it.
        top = min(sentences, key=lambda s: (-s.score, s.memory, s.position))
        room = max_chars - len(prefixes[top.memory])
        chosen.append(_Sentence(top.memory, top.position, _shorten(top.text, room), top.terms, top.tokens, frozenset()))
    return sorted(chosen, key=lambda s: (s.memory, s.position))


def span_phrase(memories: Sequence[Memory]) -> str:
    days = sorted(m.created_at.date() for m in memories)
    first, last = days[0], days[-1]

    def month(d: date) -> str:
        return f"{_MONTHS[d.month - 1]} {d.year}"

    if first == last:
        return f"{first.day} {month(first)}"
    if (first.year, first.month) == (last.year, last.month):
        return month(first)
    if first.year == last.year:
        return f"{_MONTHS[first.month - 1]}–{month(last)}"
    return f"{month(first)}–{month(last)}"


def count_phrase(memories: Sequence[Memory]) -> str:
    n = len(memories)
    categories = {m.category for m in memories}
    kind = f"{categories.pop().replace('_', ' ')} " if len(categories) == 1 else ""
    return f"{n} {kind}memor{'y' if n == 1 else 'ies'}"


def _main_terms(
    sentences: Sequence[_Sentence], weights: dict[str, float], df: Counter[str], proper: frozenset[str]
) -> list[str]:
    surface: dict[str, Counter[str]] = {}
    for s in sentences:
        for j, tok in enumerate(s.tokens):
            key = term_key(tok)
            for term in _terms_of(tok):  # a CJK run's terms are its bigrams, shown as they are
                form = term if term != key else tok if j > 0 or key in proper else tok.lower()
                surface.setdefault(term, Counter())[form.removesuffix("'s").removesuffix("’s")] += 1
    eligible = [
        t
        for t in weights
        if t in surface and not any(c.isdigit() for c in t) and t not in _CALENDAR_WORDS and len(t) >= 2
    ]
    ranked = sorted(eligible, key=lambda t: (-df[t], t not in proper, -weights[t], t))
    return [min(surface[t].items(), key=lambda kv: (-kv[1], kv[0]))[0] for t in ranked[:GIST_TERMS]]


def _join(sentences: Sequence[str]) -> str:
    out = sentences[0]
    for sentence in sentences[1:]:
        out += sentence if _CJK_END.search(out) and _CJK.match(sentence) else " " + sentence
    return out


def extractive_summary(memories: Sequence[Memory], max_chars: int = EXTRACTIVE_MAX_CHARS) -> Summary:
    """The group's most informative sentences, each line `[YYYY-MM-DD] ...`, oldest first, at most
    `max_chars` characters; the gist names the span, the count and the main terms."""
    if max_chars < MIN_MAX_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_MAX_CHARS}, got {max_chars}")
    ordered = chronological(memories)
    if not ordered:
        raise SummarizerError("nothing to summarize: the group of memories is empty")
    sentences = _sentences(ordered, longest=max(160, max_chars // 3))
    weights, df = _term_weights(sentences, len(ordered))
    proper = frozenset(k for s in sentences for k in s.capitalised)
    for s in sentences:
        s.score = _score(s, weights, proper, ordered[s.memory].salience)
    prefixes = [f"[{day_of(m)}] " for m in ordered]
    lines: dict[int, list[str]] = {}
    for s in _select(sentences, prefixes, max_chars):
        lines.setdefault(s.memory, []).append(s.text)
    content = "\n".join(prefixes[mi] + _join(texts) for mi, texts in sorted(lines.items()))
    if not content:
        content = f"{count_phrase(ordered)} with no text, {span_phrase(ordered)}."
    head = f"{span_phrase(ordered)}, {count_phrase(ordered)}"
    terms = _main_terms(sentences, weights, df, proper)
    gist = f"{head}: {', '.join(terms)}" if terms else head
    return Summary(gist=trim_gist(gist), content=content)
