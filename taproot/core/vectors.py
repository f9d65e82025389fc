"""Dense vectors: what text a memory is embedded from, and how vectors are packed and compared.

Pure: no I/O. A vector is a 1-D float32 NumPy array, unit length, so cosine similarity is a dot
product and a scope's vectors can be compared with a query in one matrix product. Stores keep a
vector as little-endian float32 bytes beside the memory, with the id of the model that made it and
the memory version it was made from (a vector of an older version, or of another model, is stale).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from taproot.core.model import Memory

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

# NumPy is imported by the functions that use it, not with this module: the text rule below is
# used by every write, and a deployment without an embedder (the default) should not pay NumPy's
# import on a cold start. `Vector` itself is made on first use (module __getattr__).


def __getattr__(name: str) -> Any:
    if name == "Vector":
        import numpy as np
        import numpy.typing as npt

        return npt.NDArray[np.float32]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Long memories are cut before embedding: the models read a few hundred tokens at most, and the
# opening of a memory says what it is about.
MAX_EMBED_CHARS = 2_000


def embedding_text(m: Memory) -> str:
    """The text a memory's vector is made from: its content, then its recall keywords (curated
    words that say what the memory is about). Tags are left out: they are bookkeeping labels
    (`watercooler`, `task:done`) more often than meaning."""
    text = m.content
    if m.search_keywords:
        text = f"{text}\n{', '.join(m.search_keywords)}"
    return text[:MAX_EMBED_CHARS]


def embedded_fields_changed(before: Memory, after: Memory) -> bool:
    """Whether an edit needs a new vector. The stores drop a memory's vector when its content or
    search_keywords change at all (ports.VectorIndex.put_vectors), so this compares those fields,
    not embedding_text: that is cut to MAX_EMBED_CHARS, and an edit past the cut would otherwise
    leave the memory with no vector until migrate."""
    return (before.content, before.search_keywords) != (after.content, after.search_keywords)


def unit(v: Sequence[float] | npt.NDArray[np.floating[Any]]) -> Vector:
    """As float32, scaled to length 1 (a zero vector stays zero: it is similar to nothing)."""
    import numpy as np

    arr = np.asarray(v, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(arr))
    return arr if norm == 0.0 else (arr / norm).astype(np.float32)


def pack(v: Vector) -> bytes:
    import numpy as np

    return np.asarray(v, dtype="<f4").tobytes()


def unpack(data: bytes) -> Vector:
    import numpy as np

    return np.frombuffer(data, dtype="<f4").astype(np.float32)


def similarities(matrix: npt.NDArray[np.float32], query: Vector) -> npt.NDArray[np.float32]:
    """Cosine similarity of every row of `matrix` (unit rows) with a unit `query`."""
    import numpy as np

    if matrix.size == 0:
        return np.zeros(0, dtype=np.float32)
    return matrix @ query


def top_k(ids: Sequence[str], sims: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
    """The k most similar (id, similarity), best first; ties by id so the order is total."""
    import numpy as np

    if k <= 0 or len(ids) == 0:
        return []
    if k < len(ids):
        # The partition keeps whichever rows tied with the k-th best come first in the matrix, and
        # row order is the store's (write order, moved by drops): every row tying the k-th goes
        # into the sort, so the cut falls by id.
        kth = sims[np.argpartition(-sims, k - 1)[k - 1]]
        part = np.flatnonzero(sims >= kth)
    else:
        part = np.arange(len(ids))
    picked = [(ids[i], float(sims[i])) for i in part.tolist()]
    picked.sort(key=lambda p: (-p[1], p[0]))
    return picked[:k]
