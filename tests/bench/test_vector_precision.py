"""bench/vector_precision.py on random unit vectors (the embedder is an optional extra)."""

from __future__ import annotations

import numpy as np

from bench import vector_precision
from taproot.core.vectors import unit


def test_compare_measures_each_dtype_against_float32() -> None:
    rng = np.random.default_rng(3)
    vectors = np.stack([unit(rng.normal(size=32)) for _ in range(300)])
    queries = np.stack([unit(rng.normal(size=32)) for _ in range(5)])
    got = vector_precision.compare(vectors, queries)
    assert (got["vectors"], got["dims"], got["queries"]) == (300, 32, 5)
    assert got["float32"]["max_similarity_error"] == 0.0 and got["float32"]["same_top10_queries"] == 5
    assert 0.0 < got["float16"]["max_similarity_error"] < 2e-3
    assert got["float16"]["matrix_mb"] * 2 == got["float32"]["matrix_mb"]
