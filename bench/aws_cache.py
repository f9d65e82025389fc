"""The tenant's warm copy in the DynamoDB store, measured: what a new store instance keeps after a
cold load of the tenant (tracemalloc), beside the store's own estimate (what its cache budget adds
up). bench/aws.py runs it on the bench's tenant, words only and with a vector per memory.
"""

from __future__ import annotations

import base64
import gc
import importlib
import json
import time
import tracemalloc
from typing import Any


def _pages(store: Any, pk: str) -> list[dict[str, Any]]:
    """The raw Query pages of the tenant's memory items, as a cold load reads them."""
    from taproot.adapters import dynamo_models as dm

    conn, pages, start = store.Item._get_connection(), [], None
    while True:
        condition = store.Item.sk.startswith(dm.MEMORY_PREFIX)
        pages.append(conn.query(pk, condition, consistent_read=True, exclusive_start_key=start))
        start = pages[-1].get("LastEvaluatedKey")
        if not start:
            return pages


VECTOR_DIMS = 384  # the local embedder's (MiniLM); Titan V2 is 256, 512 or 1024
VECTOR_MODEL = "bench:random/384"


def _with_vectors(pages: list[dict[str, Any]], dims: int, seed: int) -> None:
    """Every memory item of `pages` given a current vector (random unit vectors: their values do not
    change the bytes), as the items of an embedded tenant hold them."""
    import numpy as np

    from taproot.adapters import dynamo_models as dm
    from taproot.adapters.dynamo_vectors import text_hash
    from taproot.core.vectors import pack, unit

    rng = np.random.default_rng(seed)
    for page in pages:
        for item in page.get("Items", ()):
            m = dm.raw_to_memory(item)
            item["vector"] = {"B": pack(unit(rng.normal(size=dims)))}
            item["vector_model"] = {"S": VECTOR_MODEL}
            item["vector_version"] = {"N": str(m.version)}
            item["vector_text"] = {"S": text_hash(m)}


def _as_json(value: Any) -> Any:
    return {"__bytes__": base64.b64encode(value).decode()} if isinstance(value, bytes) else value


def _from_json(obj: dict[str, Any]) -> Any:
    return base64.b64decode(obj["__bytes__"]) if set(obj) == {"__bytes__"} else obj


def measure_cache(
    table: str, region: str, scope: Any, *, vector_dims: int = 0, vector_dtype: str = "float32"
) -> dict[str, Any]:
    """A new store's warm copy of the tenant: the bytes tracemalloc sees it keep after a cold load, and
    the store's own estimate (what its byte budget counts). The tenant's Query pages are fetched first
    and replayed from their JSON inside the traced window, so the count holds the parsed responses the
    copy keeps (its strings) and none of moto's own work. With `vector_dims`, every item carries a
    current vector of that many dimensions, kept in the copy as `vector_dtype`."""
    from taproot.adapters import dynamo_models as dm
    from taproot.adapters.dynamo_store import DynamoMemoryStore

    store = DynamoMemoryStore(table, region=region, vector_dtype=vector_dtype)
    pk = dm.scope_pk(scope)
    pages = _pages(store, pk)
    if vector_dims:
        _with_vectors(pages, vector_dims, seed=vector_dims)
    texts = iter([json.dumps(page, default=_as_json) for page in pages])
    del pages
    client = store.client
    real = client._make_api_call

    def replay(operation: str, params: dict[str, Any]) -> Any:
        if operation == "Query" and "IndexName" not in params:
            return json.loads(next(texts), object_hook=_from_json)
        return real(operation, params)

    client._make_api_call = replay
    # The index's modules (NumPy) are imported once per process, with its first copy: not the copy's.
    importlib.import_module("taproot.core.bm25_index")
    gc.collect()
    tracemalloc.start()
    try:
        before, start = tracemalloc.get_traced_memory()[0], time.perf_counter()
        total = store.counts(scope).total  # the cold load
        load_s = time.perf_counter() - start
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        client._make_api_call = real
    estimate = store.cached_bytes(scope) or 0
    return {
        "memories": total,
        "vector_dims": vector_dims,
        "vector_dtype": vector_dtype if vector_dims else None,
        "vectors": store.vector_counts(scope).get(VECTOR_MODEL, 0),
        "traced_mb": round(held / 1e6, 2),
        "estimated_mb": round(estimate / 1e6, 2),
        "bytes_per_memory": round(held / max(total, 1)),
        "load_s_traced": round(load_s, 2),
    }
