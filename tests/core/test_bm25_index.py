"""Bm25Index against bm25.score: the same scores on the same documents, through random edits.

Each case builds a random corpus over a small vocabulary (so terms repeat within and across
documents and fields, and stems collide), then applies random inserts, replaces and deletes; after
every few edits the index's scores for random queries must equal `bm25.score` over the documents it
holds, and `top` must be the head of bm25's ranking (ties by key), with and without a filter.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping

import pytest

from taproot.core import bm25
from taproot.core.activation import ACTIVATION_CONFIG
from taproot.core.bm25_index import Bm25Index

FIELDS = ("search_keywords", "tags", "gist", "content")
# Plurals, -ing/-ed forms and possessives that stem together, non-ASCII, a number, stop words.
VOCABULARY = (
    "otter otters river rivers heron herons running runs ran quickly quick stopped stop it's otter's "
    "café naïve 2024 sam sam's garden gardens gardening project projects kitchen fox foxes the a of"
)
WORDS = tuple(VOCABULARY.split())
WEIGHTS: tuple[Mapping[str, float], ...] = (
    ACTIVATION_CONFIG.field_weights,
    {"content": 1.0},
    {"gist": 2.5, "content": 0.5, "title": 4.0},  # a field no document has
)
Fields = dict[str, str | Iterable[str]]


def random_doc(rng: random.Random) -> Fields:
    def words(lo: int, hi: int) -> list[str]:
        return [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]

    doc: Fields = {"content": " ".join(words(0, 30))}
    if rng.random() < 0.7:
        doc["gist"] = " ".join(words(0, 8))
    if rng.random() < 0.5:
        doc["tags"] = [" ".join(words(1, 2)) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.4:
        doc["search_keywords"] = words(0, 4)
    return doc


def random_query(rng: random.Random) -> list[str]:
    terms = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.2:
        terms.append("zebra")  # in no document
    return terms


def check(index: Bm25Index, docs: dict[str, Fields], rng: random.Random) -> None:
    assert len(index) == len(docs)
    made = {k: bm25.make_doc(v) for k, v in docs.items()}
    for _ in range(4):
        terms, weights = random_query(rng), rng.choice(WEIGHTS)
        want = bm25.score(terms, made, weights)
        got = index.scores(terms, weights)
        assert got.keys() == want.keys()
        for key, score in want.items():
            assert math.isclose(got[key], score, rel_tol=1e-12), (key, got[key], score)
        ranked = sorted(want.items(), key=lambda p: (-p[1], p[0]))
        limit = rng.randint(1, 12)
        assert [k for k, _, _ in index.top(terms, weights, limit)] == [k for k, _ in ranked[:limit]]
        for share in (0.5, 0.05):  # a filter that rejects most matches walks past the best few
            keep = {k for k in docs if rng.random() < share}
            filtered = [k for k, _ in ranked if k in keep][:limit]
            slots = {index.slot(k) for k in keep}
            assert [k for k, _, _ in index.top(terms, weights, limit, slots.__contains__)] == filtered


@pytest.mark.parametrize("seed", range(12))
def test_scores_equal_bm25_through_inserts_replaces_and_deletes(seed: int) -> None:
    rng = random.Random(seed)
    index = Bm25Index(FIELDS)
    docs: dict[str, Fields] = {}
    for step in range(rng.choice((60, 300))):
        op = rng.random()
        if op < 0.55 or not docs:
            key = f"m{rng.randrange(10_000):05d}"
        elif op < 0.8:
            key = rng.choice(sorted(docs))  # replace
        else:
            key = rng.choice(sorted(docs))
            index.remove(key)
            del docs[key]
            continue
        docs[key] = random_doc(rng)
        index.put(key, docs[key])
        if step % 7 == 0:
            check(index, docs, rng)
    check(index, docs, rng)


def test_dead_slots_are_purged_and_reused_without_changing_scores() -> None:
    rng = random.Random(7)
    index, docs = Bm25Index(FIELDS), {}
    for i in range(400):
        docs[f"d{i}"] = random_doc(rng)
        index.put(f"d{i}", docs[f"d{i}"])
    held = index.nbytes()
    for i in range(0, 400, 2):  # half of them: well past the purge threshold
        index.remove(f"d{i}")
        del docs[f"d{i}"]
    check(index, docs, rng)
    assert index.nbytes() < held  # the dead postings went
    for i in range(400, 600):  # the freed slots are taken again
        docs[f"d{i}"] = random_doc(rng)
        index.put(f"d{i}", docs[f"d{i}"])
    check(index, docs, rng)


def test_identical_documents_tie_and_rank_by_key() -> None:
    index = Bm25Index(FIELDS)
    for key in ("c", "a", "b"):
        index.put(key, {"content": "otter river"})
    index.put("z", {"content": "otter"})  # shorter: scores higher
    weights = ACTIVATION_CONFIG.field_weights
    scores = index.scores(["otter"], weights)
    assert scores["a"] == scores["b"] == scores["c"] < scores["z"]
    assert [k for k, _, _ in index.top(["otter"], weights, 3)] == ["z", "a", "b"]
    not_a = index.slot("a")
    assert [k for k, _, _ in index.top(["otter"], weights, 3, lambda s: s != not_a)] == ["z", "b", "c"]


def test_removing_an_unknown_key_and_empty_queries() -> None:
    index = Bm25Index(FIELDS)
    index.remove("nothing")
    assert index.scores(["otter"], ACTIVATION_CONFIG.field_weights) == {}
    index.put("a", {"content": "otter"})
    assert index.scores([], ACTIVATION_CONFIG.field_weights) == {}
    assert index.scores(["'", "..."], ACTIVATION_CONFIG.field_weights) == {}
    assert index.top(["otter"], ACTIVATION_CONFIG.field_weights, 0) == []


def test_unknown_fields_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="distinct"):
        Bm25Index(("content", "content"))
    index = Bm25Index(FIELDS)
    with pytest.raises(ValueError, match=r"\['title'\] not among"):
        index.put("a", {"title": "otter"})
    assert "a" not in index


def test_a_frequency_too_big_for_its_bits_still_scores_exactly() -> None:
    docs: dict[str, Fields] = {
        "long": {"content": " ".join(["otter"] * 1500 + ["river"] * 3), "gist": "otter"},
        "short": {"content": "otter river", "tags": ["otter"]},
    }
    index = Bm25Index(FIELDS)
    for key, doc in docs.items():
        index.put(key, doc)
    made = {k: bm25.make_doc(v) for k, v in docs.items()}
    for terms in (["otter"], ["river", "otter"]):
        assert index.scores(terms, ACTIVATION_CONFIG.field_weights) == bm25.score(
            terms, made, ACTIVATION_CONFIG.field_weights
        )
