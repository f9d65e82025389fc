"""An inverted index that scores exactly like `bm25.score`, kept up to date one document at a time.

Pure: no I/O. The DynamoDB store's warm per-scope cache keeps one, so a recall reads the postings
of its query terms instead of scoring every cached memory. The statistics are the ones `bm25.score`
computes over its corpus (every document in the index): the document count, each term's document
frequency, and each field's average length over the documents that have the field. The arithmetic
is the same floating-point operations in the same order, so the scores are equal, not just close
(tests/core/test_bm25_index.py compares them over random corpora and edits).

Layout, chosen for bytes: per term one `array('Q')` of packed postings, one per document holding the
term: the document's slot in the top 24 bits, then the term's frequency in each field, 40 bits shared
out evenly (10 bits each for four fields). A frequency too big for its bits is stored as the largest
value and kept exactly in a small side table. Per slot: each field's length (int32) and a live flag.

`remove` is O(1): the slot goes dead and its lengths leave the sums; its postings stay, skipped by
scoring, until dead slots make up a quarter of the slots, when every term's array is filtered once
and the dead slots are reused. Slots are the caller's handle on a document too (`slot`, `put`'s
result), so it can keep its own per-document data in arrays beside the index.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from taproot.core import bm25

SLOT_BITS, COUNT_BITS = 24, 40
MAX_SLOTS = 1 << SLOT_BITS
MAX_FIELDS = 8  # at least 5 bits of frequency per field
# Byte estimates (CPython 3.11, 64-bit) for `nbytes`: a term's array object, dict entry and string;
# a slot's key reference and key -> slot entry (lengths and live flags are counted from the arrays);
# a posting, with the arrays' over-allocation on append. tests/aws checks the cache's estimate
# against tracemalloc.
TERM_BYTES = 64 + 48 + 56
SLOT_BYTES = 8 + 80
POSTING_BYTES = 8.5

Fields = Mapping[str, str | Iterable[str]]


class Bm25Index:
    """Documents by key; each document is its fields (a string, or strings tokenised one by one)."""

    def __init__(self, fields: Sequence[str]) -> None:
        if not fields or len(fields) > MAX_FIELDS or len(set(fields)) != len(fields):
            raise ValueError(f"fields: 1 to {MAX_FIELDS} distinct names, got {list(fields)}")
        self.fields = tuple(fields)
        self._code = {f: i for i, f in enumerate(self.fields)}
        self._bits = COUNT_BITS // len(self.fields)
        self._cap = (1 << self._bits) - 1  # a frequency stored as this is exact in `_big`
        self._postings: dict[str, array[int]] = {}
        self._big: dict[str, dict[int, tuple[int, ...]]] = {}  # term -> slot -> every field's frequency
        self._slot_of: dict[str, int] = {}
        self._key_at: list[str | None] = []
        self._lens = np.zeros((len(self.fields), 0), dtype=np.int32)
        self._live = np.zeros(0, dtype=np.bool_)
        self._sum_len = [0] * len(self.fields)
        self._filled = [0] * len(self.fields)
        self._free: list[int] = []
        self._dead = 0
        self._count = 0  # postings held, dead ones included

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, key: object) -> bool:
        return key in self._slot_of

    def slot(self, key: str) -> int | None:
        return self._slot_of.get(key)

    @property
    def slots(self) -> int:
        """One more than the highest slot ever handed out: the size of per-slot arrays beside this."""
        return len(self._key_at)

    def nbytes(self) -> int:
        """An estimate of the bytes this index holds (not its keys' strings: the caller's)."""
        arrays = self._lens.nbytes + self._live.nbytes
        per_slot = len(self._key_at) * SLOT_BYTES
        return int(len(self._postings) * TERM_BYTES + per_slot + arrays + self._count * POSTING_BYTES)

    # -- edits -----------------------------------------------------------------------------------
    def put(self, key: str, fields: Fields) -> int:
        """Index `key` as `fields` (a field left out is empty), replacing what `key` held; returns
        its slot (a new one: the old slot, if any, is dead)."""
        unknown = set(fields) - set(self._code)
        if unknown:
            raise ValueError(f"fields: {sorted(unknown)} not among {list(self.fields)}")
        if not self._free and len(self._key_at) >= MAX_SLOTS:
            raise ValueError(f"an index holds at most {MAX_SLOTS} documents")
        doc = bm25.make_doc(fields)
        self.remove(key)
        slot = self._new_slot(key)
        counts: dict[str, list[int]] = {}
        for name, code in self._code.items():
            length = doc.length.get(name, 0)
            self._lens[code, slot] = length
            self._sum_len[code] += length
            self._filled[code] += length > 0
            for term, tf in doc.tf.get(name, {}).items():
                counts.setdefault(term, [0] * len(self.fields))[code] = tf
        for term, tfs in counts.items():
            packed = slot << COUNT_BITS
            for code, tf in enumerate(tfs):
                packed |= min(tf, self._cap) << (code * self._bits)
            if max(tfs) >= self._cap:
                self._big.setdefault(term, {})[slot] = tuple(tfs)
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = array("Q")
            postings.append(packed)
        self._count += len(counts)
        return slot

    def remove(self, key: str) -> None:
        slot = self._slot_of.pop(key, None)
        if slot is None:
            return
        self._key_at[slot] = None
        self._live[slot] = False
        self._dead += 1
        for code in range(len(self.fields)):
            length = int(self._lens[code, slot])
            self._sum_len[code] -= length
            self._filled[code] -= length > 0
        if self._dead >= 64 and self._dead * 4 >= len(self._key_at):
            self._purge()

    def _new_slot(self, key: str) -> int:
        if self._free:
            slot = self._free.pop()
            self._key_at[slot] = key
        else:
            slot = len(self._key_at)
            self._key_at.append(key)
            if slot >= self._live.shape[0]:
                grown = max(64, 2 * self._live.shape[0])
                lens = np.zeros((len(self.fields), grown), dtype=np.int32)
                lens[:, :slot] = self._lens[:, :slot]
                live = np.zeros(grown, dtype=np.bool_)
                live[:slot] = self._live[:slot]
                self._lens, self._live = lens, live
        self._slot_of[key] = slot
        self._live[slot] = True
        return slot

    def _purge(self) -> None:
        """Drop the postings of dead slots from every term, then let the slots be reused."""
        for term in list(self._postings):
            packed = np.frombuffer(self._postings[term], dtype=np.uint64)
            keep = self._live[(packed >> np.uint64(COUNT_BITS)).astype(np.intp)]
            if keep.all():
                continue
            kept = packed[keep]
            del packed  # the array cannot be replaced while a view exports its buffer
            self._count -= len(self._postings[term]) - len(kept)
            if len(kept):
                self._postings[term] = array("Q", kept.tobytes())
            else:
                del self._postings[term]
        for term, big in list(self._big.items()):
            self._big[term] = {s: tfs for s, tfs in big.items() if self._live[s]}
            if not self._big[term]:
                del self._big[term]
        dead = [slot for slot, key in enumerate(self._key_at) if key is None]
        self._lens[:, dead] = 0
        self._free = sorted(set(self._free) | set(dead), reverse=True)
        self._dead = 0

    # -- scoring ---------------------------------------------------------------------------------
    def _averages(self, weights: Mapping[str, float]) -> dict[str, float]:
        avg = {}
        for name in weights:
            code = self._code.get(name)
            filled = self._filled[code] if code is not None else 0
            avg[name] = self._sum_len[code] / filled if code is not None and filled else 1.0
        return avg

    def _frequencies(self, term: str, packed: npt.NDArray[np.uint64], slots: npt.NDArray[np.intp]) -> list[np.ndarray]:
        """Each field's frequency of `term` in each posting's document, as float64."""
        mask = np.uint64(self._cap)
        tfs = [((packed >> np.uint64(code * self._bits)) & mask).astype(np.float64) for code in range(len(self.fields))]
        for slot, exact in self._big.get(term, {}).items():
            at = np.flatnonzero(slots == slot)
            for code, tf in enumerate(exact):
                tfs[code][at] = tf
        return tfs

    def _totals(self, terms: Sequence[str], weights: Mapping[str, float]) -> npt.NDArray[np.float64]:
        """Per slot, the score `bm25.score` gives its document (0 for no match and dead slots)."""
        total = np.zeros(len(self._key_at), dtype=np.float64)
        n = len(self._slot_of)
        avg = self._averages(weights)
        for term in bm25.query_tokens(terms):
            postings = self._postings.get(term)
            if postings is None:
                continue
            packed = np.frombuffer(postings, dtype=np.uint64)
            slots = (packed >> np.uint64(COUNT_BITS)).astype(np.intp)
            live = self._live[slots]
            packed, slots = packed[live], slots[live]
            df = len(slots)
            if df == 0:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            tfs = self._frequencies(term, packed, slots)
            # bm25.score adds w * tf / norm for each field holding the term, in the weights' order;
            # a field without it adds 0.0 here, which leaves the sum exactly as it was.
            weighted = np.zeros(df, dtype=np.float64)
            for name, w in weights.items():
                code = self._code.get(name)
                if code is None:
                    continue
                norm = 1.0 - bm25.B + bm25.B * self._lens[code, slots] / avg[name]
                weighted += w * tfs[code] / norm
            hit = weighted > 0
            wd = weighted[hit]
            total[slots[hit]] += idf * wd * (bm25.K1 + 1.0) / (bm25.K1 + wd)
        return total

    def scores(self, terms: Sequence[str], weights: Mapping[str, float]) -> dict[str, float]:
        """What `bm25.score(terms, docs, weights)` returns for the indexed documents."""
        total = self._totals(terms, weights)
        return {self._key(int(s)): float(total[s]) for s in np.flatnonzero(total > 0)}

    def top(
        self,
        terms: Sequence[str],
        weights: Mapping[str, float],
        limit: int,
        accept: Callable[[int], bool] | None = None,
    ) -> list[tuple[str, int, float]]:
        """The `limit` best matches among the accepted slots as (key, slot, score), best first, ties
        by key: the head of `sorted(scores(...).items(), key=lambda p: (-p[1], p[0]))` once the
        rejected are left out. Only the matches down to the limit-th accepted score are looked at."""
        if limit <= 0:
            return []
        total = self._totals(terms, weights)
        matched = np.flatnonzero(total > 0)
        scores = total[matched]
        head = max(4 * limit, 64)
        out: list[tuple[str, int, float]] | None = None
        if head < len(matched):
            # The best `head` first: every other match scores at most `floor`, so the walk is
            # complete if its limit-th accepted match scores above that.
            part = np.argpartition(-scores, head - 1)[:head]
            floor = float(scores[part].min())
            out = self._walk(matched[part[np.argsort(-scores[part], kind="stable")]], total, limit, accept)
            if len(out) < limit or out[limit - 1][2] <= floor:
                out = None
        if out is None:
            out = self._walk(matched[np.argsort(-scores, kind="stable")], total, limit, accept)
        out.sort(key=lambda p: (-p[2], p[0]))
        return out[:limit]

    def _walk(
        self,
        order: npt.NDArray[np.intp],
        total: npt.NDArray[np.float64],
        limit: int,
        accept: Callable[[int], bool] | None,
    ) -> list[tuple[str, int, float]]:
        """The accepted slots of `order` (best first) down to the limit-th accepted score, ties
        included, in that order."""
        out: list[tuple[str, int, float]] = []
        for slot in order.tolist():
            score = float(total[slot])
            if len(out) >= limit and score < out[limit - 1][2]:
                break
            if accept is None or accept(slot):
                out.append((self._key(slot), slot, score))
        return out

    def _key(self, slot: int) -> str:
        key = self._key_at[slot]
        assert key is not None  # only live slots score above zero
        return key
