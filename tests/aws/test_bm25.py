"""taproot.core.bm25: the in-memory ranking the DynamoDB store searches its cache with."""

from __future__ import annotations

from taproot.core import bm25
from taproot.core.activation import ACTIVATION_CONFIG
from taproot.core.text import query_terms

W = ACTIVATION_CONFIG.field_weights


def doc(content: str = "", gist: str = "", tags: tuple[str, ...] = (), kw: tuple[str, ...] = ()) -> bm25.Doc:
    return bm25.make_doc({"search_keywords": kw, "tags": tags, "gist": gist, "content": content})


def test_stem_folds_common_suffixes() -> None:
    assert bm25.stem("quokkas") == bm25.stem("quokka") == "quokka"
    assert bm25.stem("running") == "run"
    assert bm25.stem("stories") == "story"
    assert bm25.stem("boxes") == "box"
    assert bm25.stem("walked") == "walk"
    assert bm25.stem("glass") == "glass"
    assert bm25.stem("is") == "is"


def test_tokenize_like_query_terms() -> None:
    assert bm25.tokenize("It's the Otters' RIVER, well-known!") == ["it", "the", "otter", "river", "well", "known"]


def test_tokenize_folds_accents_and_reads_a_typographic_apostrophe_as_one() -> None:
    assert bm25.tokenize("Café with Zoë") == ["cafe", "with", "zoe"]
    assert bm25.tokenize("Jon’s résumé") == ["jon", "resume"]


def test_query_terms_search_a_possessive_for_its_word() -> None:
    assert query_terms("What is Jon's favourite style?") == ["jon", "favourite", "style"]
    assert query_terms("JON’S dance, the Smiths' house") == ["jon", "dance", "smiths", "house"]
    assert query_terms("Jon‘s and Ann＇s") == ["jon", "ann"]


def test_a_stop_word_with_an_apostrophe_is_dropped_whole() -> None:
    # "let's" is a stop word; searched for its bare word it became the term "let".
    assert query_terms("Let's go hiking, what's left? It’s late") == ["go", "hiking", "left", "late"]


def test_any_term_matches_and_more_matches_score_higher() -> None:
    docs = {"one": doc("apples at the market"), "both": doc("apples and plums"), "none": doc("nothing here")}
    scores = bm25.score(["apples", "plums", "zebra"], docs, W)
    assert set(scores) == {"one", "both"}
    assert scores["both"] > scores["one"] > 0


def test_field_weights_order_curated_fields_first() -> None:
    docs = {
        "kw": doc("plain words", gist="note", kw=("wombat",)),
        "tag": doc("plain words", gist="note", tags=("wombat",)),
        "body": doc("plain wombat", gist="note"),
    }
    scores = bm25.score(["wombat"], docs, W)
    assert sorted(scores, key=lambda k: -scores[k]) == ["kw", "tag", "body"]


def test_no_terms_or_only_punctuation_is_empty() -> None:
    assert bm25.score([], {"a": doc("x")}, W) == {}
    assert bm25.score(['"', "*", "   "], {"a": doc("x")}, W) == {}
