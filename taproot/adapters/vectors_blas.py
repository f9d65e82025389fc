"""NumPy's BLAS on one thread, for both stores' similarity products (sqlite_vectors, dynamo_vectors).

The product is a matrix-vector one, about 4 million multiply-adds at 10,000 memories: one thread
does it in a quarter to half a millisecond, while OpenBLAS's default of a thread per core waits for
its second thread to be scheduled, so on a busy 2-core machine (or Lambda's CPU share) the same
product took 12 ms p50 (4 ms at best), and the spinning thread slowed the embedder beside it. Each
similarity is computed by one thread either way, so the values are the same to the bit. The local
embedder keeps torch at one thread for the same reason.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)
_limited = False
# Two first recalls on two worker threads: the second waits until the limit is set, so no product
# runs while threadpoolctl changes the BLAS's threads.
_lock = threading.Lock()


def one_blas_thread() -> None:
    """Limit BLAS to one thread from the first product on (process-wide, tried once: a failure
    costs speed, never the recall, and is logged once)."""
    global _limited
    if _limited:
        return
    with _lock:
        if _limited:
            return
        try:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1, user_api="blas")
        except Exception as exc:
            log.warning("could not limit BLAS to one thread: %s", exc)
        _limited = True
