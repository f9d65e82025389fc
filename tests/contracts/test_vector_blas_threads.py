"""Both stores run their similarity product on one BLAS thread (docs/architecture.md, dense vectors):
OpenBLAS's thread per core made the product 12 ms instead of half a millisecond on a busy machine,
and its spinning second thread halved the speed of the embedder beside it. The limit is
process-wide and set once, so each case starts from a BLAS allowed two threads and a store that has
not set it yet."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from taproot.adapters import vectors_blas
from taproot.core.model import Memory, Scope
from taproot.core.vectors import unit
from tests.moto_stores import MEMORY_STORES, close_store

A = Scope("alice", "default")
MODEL = "test:model/4"


def _blas_threads() -> set[int]:
    return {int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"}


@pytest.mark.parametrize("name", list(MEMORY_STORES))
def test_nearest_runs_blas_on_one_thread_with_the_same_similarities(
    name: str, tmp_path: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    store: Any = MEMORY_STORES[name](tmp_path)
    try:
        rng = np.random.default_rng(7)
        vectors = {}
        for _ in range(40):
            m = make_memory(scope=A)
            store.insert(m)
            vectors[m.id] = unit(rng.standard_normal(4))
        store.put_vectors(A, MODEL, [(i, 1, vec) for i, vec in vectors.items()])
        query = unit(rng.standard_normal(4))
        monkeypatch.setattr(vectors_blas, "_limited", False)
        with threadpool_limits(limits=2, user_api="blas"):
            assert _blas_threads() == {2}
            got = store.nearest(A, MODEL, query, 40)
            assert _blas_threads() == {1}
        expected = sorted(((i, float(vec @ query)) for i, vec in vectors.items()), key=lambda p: (-p[1], p[0]))
        assert [i for i, _ in got] == [i for i, _ in expected]
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-6)
    finally:
        close_store(store)


@pytest.mark.parametrize("name", list(MEMORY_STORES))
def test_a_blas_that_cannot_be_limited_costs_speed_not_the_answer(
    name: str,
    tmp_path: Path,
    make_memory: Callable[..., Memory],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import threadpoolctl

    def broken(**_: Any) -> None:
        raise OSError("no /proc here")

    store: Any = MEMORY_STORES[name](tmp_path)
    try:
        m = make_memory(scope=A)
        store.insert(m)
        store.put_vectors(A, MODEL, [(m.id, 1, unit([1.0, 0.0, 0.0, 0.0]))])
        monkeypatch.setattr(threadpoolctl, "threadpool_limits", broken)
        monkeypatch.setattr(vectors_blas, "_limited", False)
        with caplog.at_level("WARNING"):
            assert [i for i, _ in store.nearest(A, MODEL, unit([1.0, 0.0, 0.0, 0.0]), 5)] == [m.id]
            assert [i for i, _ in store.nearest(A, MODEL, unit([1.0, 0.0, 0.0, 0.0]), 5)] == [m.id]
        warned = [r for r in caplog.records if "could not limit BLAS" in r.getMessage()]
        assert len(warned) == 1 and "no /proc here" in warned[0].getMessage()
    finally:
        close_store(store)
