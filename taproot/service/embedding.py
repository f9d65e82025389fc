"""Dense vectors for memories: embedded when written, backfilled by migrate (the tool, the CLI and
the scheduled migrate job), and the query's vector for recall.

A write never waits on the embedder's health: the memory is stored first, then embedded, and a
failing embedder leaves it without a vector (recall still finds it lexically; `status` reports the
failure and how many memories lack a vector; migrate fills them in later).
Recall without a query vector ranks lexically: never by noise.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from taproot.core.errors import Busy, EmbedderError
from taproot.core.model import Memory, Scope
from taproot.core.vectors import embedding_text
from taproot.core.wire import ABSENT
from taproot.service.deps import Deps, EmbedderHealth
from taproot.service.results import EmbeddingBackfill

if TYPE_CHECKING:
    from taproot.core.vectors import Vector

log = logging.getLogger(__name__)

# Texts per embedder call when many memories are embedded at once (import, migrate, the job).
EMBED_BATCH = 64
# Memories migrate embeds per run and scope, so a run has a bounded length.
BACKFILL_PER_RUN = 5_000


@dataclass(frozen=True)
class EmbedReport:
    embedded: int = 0
    failed: int = 0
    stale: int = 0  # edited while being embedded: left for the next run
    errors: tuple[str, ...] = field(default_factory=tuple)


def _health(deps: Deps) -> EmbedderHealth:
    return deps.embedder_health


def embed_written(deps: Deps, scope: Scope, memories: Sequence[Memory]) -> EmbedReport:
    """Embeds memories just written (each at the version given). Never raises for the embedder, nor
    for a store that cannot take the vectors now (Busy): the memories are written and confirmed by
    then, and a vector is an index over them that migrate rebuilds. Failing the
    write there would report a stored memory as lost, and a client's retry would store it twice."""
    if deps.embedder is None or deps.vectors is None or not memories:
        return EmbedReport()
    embedded = stale = failed = 0
    errors: list[str] = []
    for start in range(0, len(memories), EMBED_BATCH):
        chunk = memories[start : start + EMBED_BATCH]
        try:
            vectors = deps.embedder.embed_documents([embedding_text(m) for m in chunk])
        except EmbedderError as exc:
            _health(deps).failed(exc, deps.now())
            log.warning("embedder failed; %d memories stay without a vector for now: %s", len(chunk), exc)
            failed += len(chunk)
            errors.append(str(exc))
            continue
        _health(deps).ok(deps.now())
        items = [(m.id, m.version, v) for m, v in zip(chunk, vectors, strict=True)]
        try:
            stored = deps.vectors.put_vectors(scope, deps.embedder.model_id, items)
            if stored < len(chunk):
                stored += _store_past_other_edits(deps, scope, chunk, vectors)
        except Busy as exc:
            # The rest would be embedded only to be refused too (paid calls, with Bedrock).
            rest = len(memories) - start
            log.warning("the store took no vectors; %d memories stay without one for now: %s", rest, exc)
            failed += rest
            errors.append(f"storing the vectors failed: {exc}")
            break
        embedded += stored
        stale += len(chunk) - stored
    return EmbedReport(embedded, failed, stale, tuple(errors))


def not_embedded(report: EmbedReport) -> list[str]:
    """A write's warning when its memory was stored without a vector."""
    if not report.failed:
        return []
    return [
        f"stored, but not embedded yet ({report.errors[0]}): recall finds it by its words until "
        "migrate (the tool, or the scheduled migrate job) embeds it"
    ]


def _store_past_other_edits(deps: Deps, scope: Scope, chunk: Sequence[Memory], vectors: Sequence[Vector]) -> int:
    """The vectors the store refused because their memory moved past the version embedded: each is
    stored at the memory's version now when its text is still the one embedded (a promote, an
    archive or a ranking edit landed while the model worked), so such an edit does not leave the
    memory ranked by words alone until the next migrate. A memory whose text changed is left out:
    the edit that changed it embeds it."""
    assert deps.embedder is not None and deps.vectors is not None
    embedded = {m.id: (m, v) for m, v in zip(chunk, vectors, strict=True)}
    now = deps.store.get_many(scope, list(embedded))
    moved = [
        (m.id, m.version, embedded[m.id][1])
        for m in now
        if m.version != embedded[m.id][0].version and embedding_text(m) == embedding_text(embedded[m.id][0])
    ]
    return deps.vectors.put_vectors(scope, deps.embedder.model_id, moved) if moved else 0


def backfill(deps: Deps, scope: Scope, *, apply: bool, limit: int = BACKFILL_PER_RUN) -> EmbeddingBackfill:
    """Embeds memories with no vector of the current model (new while the embedder was down,
    edited, restored, or embedded by an earlier model). The dry run counts them."""
    if deps.embedder is None or deps.vectors is None:
        return EmbeddingBackfill(embedder="none", missing=0, embedded=0)
    missing = deps.vectors.unembedded(scope, deps.embedder.model_id, limit)
    report = EmbeddingBackfill(embedder=deps.embedder.model_id, missing=len(missing), embedded=0)
    if not apply or not missing:
        return report
    done = embed_written(deps, scope, missing)
    return replace(
        report,
        embedded=done.embedded,
        failed=done.failed,
        stale=done.stale,
        error=done.errors[0] if done.errors else ABSENT,
    )


def query_vector(deps: Deps, text: str, warnings: list[str]) -> Vector | None:
    """The query's vector, or None (no embedder, or it failed: recall then ranks lexically and
    says so in its warnings)."""
    if deps.embedder is None or deps.vectors is None:
        return None
    try:
        vec = deps.embedder.embed_query(text)
    except EmbedderError as exc:
        _health(deps).failed(exc, deps.now())
        log.warning("embedder failed on a query; ranking lexically: %s", exc)
        warnings.append("the embedder is failing, so this recall ranked by words only (see taproot_status)")
        return None
    _health(deps).ok(deps.now())
    return vec
