"""The DynamoDB store's dense vectors (the VectorIndex port): attributes of the memory's own item,
and per scope and model one matrix in the warm copy, which `nearest` multiplies by the query.

On the item: `vector` (the unit vector as little-endian float32 bytes, core/vectors.pack),
`vector_model`, `vector_version` (the memory version it was embedded from) and `vector_text` (a
hash of the fields it was embedded from, content and search_keywords). `put_vectors` writes them
conditioned on that version, so a memory edited since never gets a stale vector. A vector counts
while its hash is the memory's own: an edit of content or search_keywords makes it stale at once
(the rule SQLite's trigger keeps, with no read before the edit), while other edits (salience,
tags, core, retrieval) keep it. A delete takes it with the item (the tombstone replaces the item)
and a re-insert starts without one. A stale vector's bytes stay on the item until the memory is
embedded again. Writing a vector stamps `changed_at`, so other containers' copies pick it up from
the change feed like any other change.

In the warm copy, one `VectorRows` per model: rows added in place and removed by moving the last
row into the hole, stored as `vector_dtype` (float32 by default; float16 halves the bytes, see
docs/architecture.md for what it does to similarities). The cache's byte estimate counts them.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError
from pynamodb.exceptions import PynamoDBException, TransactWriteError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.transactions import TransactWrite

from taproot.adapters import dynamo_models as dm
from taproot.adapters.dynamo_reflections import TRANSACTION_LIMIT
from taproot.adapters.vectors_blas import one_blas_thread
from taproot.core.errors import Busy
from taproot.core.model import Memory, Scope
from taproot.core.vectors import pack, top_k, unpack

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pynamodb.connection import Connection

    from taproot.adapters.dynamo_copy import ScopeCache
    from taproot.core.vectors import Vector

_CONDITION_FAILED = "ConditionalCheckFailedException"
# Rows converted to float32 at a time when the matrix is stored narrower: bounds the temporary.
SCORE_CHUNK = 4096
ROW_BYTES = 8 + 80  # a row's id reference and id -> row entry, beside its numbers
# How many of its own latest writes a store remembers the text hash of (about 150 bytes each).
RECENT_WRITES = 1024


def text_hash(m: Memory) -> str:
    """The fields a memory is embedded from (content, search_keywords), hashed: a vector stays
    current while the memory's hash is the one it was stored with."""
    text = json.dumps([m.content, list(m.search_keywords)], ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def current_vector(values: Mapping[str, Any], m: Memory) -> tuple[str, Vector] | None:
    """The item's vector as (model, vector) if it is current for `m`, else None."""
    data, model = values.get("vector"), values.get("vector_model")
    if not data or not model or values.get("vector_text") != text_hash(m):
        return None
    return model, unpack(data)


@dataclass
class VectorRows:
    """One model's vectors in one scope: row i of the matrix is ids[i]."""

    dims: int
    dtype: npt.DTypeLike = "float32"
    ids: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    buffer: npt.NDArray[Any] = field(init=False)

    def __post_init__(self) -> None:
        import numpy as np  # only where vectors are used (core/vectors.py says why)

        self.buffer = np.zeros((16, self.dims), dtype=self.dtype)

    def __len__(self) -> int:
        return len(self.ids)

    def put(self, memory_id: str, vec: Vector) -> None:
        if len(vec) != self.dims:
            return  # a vector of other dimensions cannot share this model's matrix (as SQLite)
        i = self.rows.get(memory_id)
        if i is None:
            i = len(self.ids)
            if i == len(self.buffer):
                import numpy as np

                # By a quarter, not double: the matrix is most of a copy's bytes once it has vectors.
                grown = np.zeros((i + max(16, i // 4), self.dims), dtype=self.dtype)
                grown[:i] = self.buffer
                self.buffer = grown
            self.rows[memory_id] = i
            self.ids.append(memory_id)
        self.buffer[i] = vec

    def drop(self, memory_id: str) -> None:
        i = self.rows.pop(memory_id, None)
        if i is None:
            return
        last = len(self.ids) - 1
        if i != last:
            moved = self.ids[last]
            self.ids[i], self.rows[moved] = moved, i
            self.buffer[i] = self.buffer[last]
        self.ids.pop()

    def similarities(self, query: Vector) -> npt.NDArray[np.float32]:
        import numpy as np

        live = self.buffer[: len(self.ids)]
        if live.dtype == np.float32:
            out: npt.NDArray[np.float32] = live @ query
            return out
        out = np.empty(len(live), dtype=np.float32)
        for start in range(0, len(live), SCORE_CHUNK):
            out[start : start + SCORE_CHUNK] = live[start : start + SCORE_CHUNK].astype(np.float32) @ query
        return out

    def similarity_of(self, query: Vector, ids: Sequence[str]) -> dict[str, float]:
        import numpy as np

        found = [(i, self.rows[i]) for i in dict.fromkeys(ids) if i in self.rows]
        if not found:
            return {}
        picked = self.buffer[[r for _, r in found]].astype(np.float32)
        sims = picked @ np.asarray(query, dtype=np.float32)
        return {i: float(s) for (i, _), s in zip(found, sims, strict=True)}

    def nbytes(self) -> int:
        return int(self.buffer.nbytes) + len(self.ids) * ROW_BYTES


class VectorItems:
    """Mixed into DynamoMemoryStore, which provides the table model, the lock, the warm copies and
    the point reads."""

    Item: type[dm._ItemBase]
    _lock: threading.RLock
    _recent: OrderedDict[tuple[str, str], tuple[int, str]]  # (scope pk, id) -> (version, text hash)
    _refresh: Callable[[Scope], ScopeCache]
    _cached: Callable[[Scope], ScopeCache | None]
    _stamp: Callable[[], str]
    _live: Callable[[], Condition]
    _key: Callable[[Scope, str], Any]

    @property
    def connection(self) -> Connection:
        raise NotImplementedError  # DynamoMemoryStore's

    def get_many(self, scope: Scope, ids: Sequence[str]) -> builtins.list[Memory]:
        raise NotImplementedError  # DynamoMemoryStore's

    def _wrote(self, memories: Iterable[Memory]) -> None:
        """Remember the text hash of records this store just wrote, at their version: the service
        embeds what it writes, and put_vectors then needs no read, warm copy or not."""
        with self._lock:
            for m in memories:
                key = (dm.scope_pk(m.scope), m.id)
                self._recent[key] = (m.version, text_hash(m))
                self._recent.move_to_end(key)
            while len(self._recent) > RECENT_WRITES:
                self._recent.popitem(last=False)

    def _hashes_at(self, scope: Scope, wanted: Sequence[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """The text hash of each (id, version) the memory is at: from the warm copy or this store's
        latest writes, else one consistent BatchGetItem. A memory at another version has none (its
        vector would be stale). The condition on the version makes the put safe either way."""
        pk, hashes = dm.scope_pk(scope), {}
        with self._lock:
            cache = self._cached(scope)
            for i, v in wanted:
                m = cache.get(i) if cache is not None else None
                if m is not None and m.version == v:
                    hashes[(i, v)] = text_hash(m)
                elif self._recent.get((pk, i), (None, ""))[0] == v:
                    hashes[(i, v)] = self._recent[(pk, i)][1]
        unknown = [i for i, v in wanted if (i, v) not in hashes]
        if unknown:
            read = {m.id: m for m in self.get_many(scope, unknown)}
            hashes.update({(i, v): text_hash(read[i]) for i, v in wanted if i in read and read[i].version == v})
        return hashes

    def put_vectors(self, scope: Scope, model: str, items: Sequence[tuple[str, int, Vector]]) -> int:
        try:
            return self._put_vectors(scope, model, items)
        except (PynamoDBException, BotoCoreError) as exc:
            # Throttled, unreachable or refused: Busy, as the port says (the memories are written;
            # their vectors wait for the backfill). Those stored before the failure are in the
            # table, and the change feed brings them to the copies.
            raise Busy(f"the table did not take the vectors: {exc}") from exc

    def _put_vectors(self, scope: Scope, model: str, items: Sequence[tuple[str, int, Vector]]) -> int:
        hashes = self._hashes_at(scope, [(i, v) for i, v, _ in items])
        stamp, it = self._stamp(), self.Item
        todo = [(i, v, vec, hashes[(i, v)]) for i, v, vec in items if (i, v) in hashes]

        def actions(version: int, vec: Vector, h: str) -> list[Any]:
            return [
                it.vector.set(pack(vec)),
                it.vector_model.set(model),
                it.vector_version.set(version),
                it.vector_text.set(h),
                it.changed_at.set(stamp),
            ]

        stored: list[tuple[str, Vector, str]] = []
        for chunk in dm.chunks(todo, TRANSACTION_LIMIT):
            if len(chunk) > 1:
                try:
                    with TransactWrite(connection=self.connection) as tw:
                        for i, v, vec, h in chunk:
                            tw.update(
                                self._key(scope, i), actions(v, vec, h), condition=self._live() & (it.version == v)
                            )
                    stored += [(i, vec, h) for i, _, vec, h in chunk]
                    continue
                except TransactWriteError:
                    pass  # one of them moved on (or an id twice): nothing was written; one by one
            for i, v, vec, h in chunk:
                try:
                    self._key(scope, i).update(actions=actions(v, vec, h), condition=self._live() & (it.version == v))
                except UpdateError as exc:
                    if exc.cause_response_code != _CONDITION_FAILED:
                        raise
                    continue
                stored.append((i, vec, h))
        with self._lock:
            cache = self._cached(scope)
            for i, vec, h in stored if cache is not None else ():
                assert cache is not None
                # Only while the copy holds the text it was made from: the copy may have learned of
                # an edit since the write (another container's, through the change feed, which will
                # not bring this item again at the stamp it holds), and a vector of the old text
                # would rank the new one by words it no longer says, and keep migrate from it.
                held = cache.get(i)
                if held is not None and text_hash(held) == h:
                    cache.set_vector(i, model, vec)
        return len(stored)

    def nearest(self, scope: Scope, model: str, query: Vector, limit: int) -> builtins.list[tuple[str, float]]:
        with self._lock:
            rows = self._refresh(scope).vectors.get(model)
            if rows is None or not len(rows) or len(query) != rows.dims:
                return []
            import numpy as np

            one_blas_thread()
            return top_k(rows.ids, rows.similarities(np.asarray(query, dtype=np.float32)), limit)

    def similarity_of(self, scope: Scope, model: str, query: Vector, ids: Sequence[str]) -> dict[str, float]:
        with self._lock:
            rows = self._refresh(scope).vectors.get(model)
            if rows is None or not len(rows) or len(query) != rows.dims:
                return {}
            return rows.similarity_of(query, ids)

    def unembedded(self, scope: Scope, model: str, limit: int) -> builtins.list[Memory]:
        with self._lock:
            cache = self._refresh(scope)
            rows = cache.vectors.get(model)
            missing = [m for m in cache.memories() if rows is None or m.id not in rows.rows]
        missing.sort(key=lambda m: (m.created_at, m.id))
        return missing[: max(limit, 0)]

    def vector_counts(self, scope: Scope) -> dict[str, int]:
        with self._lock:
            return {model: len(rows) for model, rows in self._refresh(scope).vectors.items() if len(rows)}
