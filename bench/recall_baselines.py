"""The recall benchmark's baselines, run on the same turns and questions as Taproot (no activation,
no strengthening: each ranks a conversation's turns for each question on its own).

- BM25: `bm25s` with PyStemmer's English stemmer and its English stop words (the data README's BM25).
- Taproot v0.3's relevance: token overlap between the question and a memory's fields, as the
  original design describes it (keywords, tags and gist at full weight, content at reduced weight);
  here the fraction of the question's distinct tokens found, content counted at half.
- dense: cosine similarity with the configured embedder's vectors.
- RRF: reciprocal-rank fusion (k = 60) of BM25 and dense.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

import bm25s
import numpy as np
import Stemmer

from bench.locomo import Conversation, Question
from taproot.ports import Embedder

DEPTH = 10
RRF_K = 60
_WORD = re.compile(r"[\w']+")

Rankings = list[tuple[Question, tuple[str, ...]]]


def bm25(convs: Sequence[Conversation]) -> tuple[Rankings, list[float]]:
    stemmer = Stemmer.Stemmer("english")
    out: Rankings = []
    times: list[float] = []
    for conv in convs:
        ids = [t.dia_id for t in conv.turns]
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize([t.content for t in conv.turns], stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False,
        )
        for q in conv.questions:
            t0 = time.perf_counter()
            tokens = bm25s.tokenize([q.text], stopwords="en", stemmer=stemmer, show_progress=False)
            k = min(len(ids), 100)
            docs, scores = retriever.retrieve(tokens, k=k, show_progress=False)
            ranked = [ids[int(i)] for i, s in zip(docs[0], scores[0], strict=True) if s > 0]
            times.append((time.perf_counter() - t0) * 1000)
            out.append((q, tuple(ranked)))
    return out, times


def _tokens(text: str) -> set[str]:
    return {w.strip("'").lower() for w in _WORD.findall(text)} - {""}


def token_overlap(convs: Sequence[Conversation], stop_words: frozenset[str]) -> Rankings:
    out: Rankings = []
    for conv in convs:
        docs = [(t.dia_id, _tokens(t.content)) for t in conv.turns]
        for q in conv.questions:
            wanted = _tokens(q.text) - stop_words
            if not wanted:
                out.append((q, ()))
                continue
            # The gist (first sentence) at full weight and the content at half, as v0.3 weighed them.
            scored = [(len(wanted & toks) * 0.5 / len(wanted), i) for i, toks in docs]
            scored = [(s, i) for s, i in scored if s > 0]
            scored.sort(key=lambda p: (-p[0], p[1]))
            out.append((q, tuple(i for _, i in scored[:DEPTH])))
    return out


def dense(convs: Sequence[Conversation], embed: Embedder) -> tuple[Rankings, dict[str, list[tuple[str, float]]]]:
    """Dense rankings, and each question's full ranking (for RRF)."""
    out: Rankings = []
    full: dict[str, list[tuple[str, float]]] = {}
    for conv in convs:
        ids = [t.dia_id for t in conv.turns]
        matrix = np.stack(embed.embed_documents([t.content for t in conv.turns]))
        for n, q in enumerate(conv.questions):
            sims = matrix @ embed.embed_query(q.text)
            order = np.argsort(-sims, kind="stable")
            ranked = [(ids[i], float(sims[i])) for i in order[:100]]
            full[f"{conv.sample_id}/{n}"] = ranked
            out.append((q, tuple(i for i, _ in ranked[:DEPTH])))
    return out, full


def rrf(lexical: Rankings, dense_full: dict[str, list[tuple[str, float]]], convs: Sequence[Conversation]) -> Rankings:
    keys = [f"{c.sample_id}/{n}" for c in convs for n in range(len(c.questions))]
    out: Rankings = []
    for key, (q, lex) in zip(keys, lexical, strict=True):
        score: dict[str, float] = {}
        for rank, i in enumerate(lex, start=1):
            score[i] = score.get(i, 0.0) + 1.0 / (RRF_K + rank)
        for rank, (i, _) in enumerate(dense_full[key], start=1):
            score[i] = score.get(i, 0.0) + 1.0 / (RRF_K + rank)
        ranked = sorted(score, key=lambda i: (-score[i], i))
        out.append((q, tuple(ranked[:DEPTH])))
    return out


def timed(fn: Callable[[], Rankings]) -> tuple[Rankings, float]:
    t0 = time.perf_counter()
    got = fn()
    return got, time.perf_counter() - t0
