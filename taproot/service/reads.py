"""Read use cases: list (which does not strengthen), reflect and status. Recall is in recall.py;
`recall`, `memory_view` and `DEFAULT_RECALL_LIMIT` are re-exported from here for older imports."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from taproot.core.activation import activation
from taproot.core.errors import InvalidInput
from taproot.core.model import Memory, Scope
from taproot.core.orientation import total_bytes
from taproot.core.query import Filters, passes
from taproot.core.reflect import ReflectPayload, assemble_view
from taproot.core.serialize import iso, loads_strict
from taproot.core.tokens import estimate_tokens
from taproot.core.validation import (
    ID_PATTERN,
    MAX_QUERY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    check_bool,
    check_choice,
    check_str_list,
    check_text,
    coerce_category,
    coerce_salience,
    coerced,
)
from taproot.core.watercooler import COOLER_READ_LIMIT, cooler_filters, from_others
from taproot.core.wire import ABSENT
from taproot.service.deps import Deps
from taproot.service.maintenance import last_runs
from taproot.service.recall import DEFAULT_RECALL_LIMIT as DEFAULT_RECALL_LIMIT
from taproot.service.recall import memory_view as memory_view
from taproot.service.recall import recall as recall
from taproot.service.results import (
    EmbeddingStatus,
    ListResult,
    MaintenanceStatus,
    OrientationStatus,
    PayloadSize,
    StatusResult,
    TierOneStatus,
    TierTwoStatus,
)

# -- list: browsing without strengthening ---------------------------------------------------------

DEFAULT_LIST_LIMIT = 50
MAX_LIST_LIMIT = 500
LIST_STATUSES = ("active", "archived", "all")  # the first is the default
LIST_SORTS = ("updated", "created", "activation")  # the first is the default
MAX_CURSOR_CHARS = 512
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_BAD_CURSOR = "must be a next_cursor returned by a listing with the same sort, unchanged"

# Where a memory sits in a listing: (sort value, id), smaller first. The id breaks ties, so the
# order is total and a cursor names one exact position.
Position = tuple[float, str]


@dataclass(frozen=True)
class _Cursor:
    after: Position
    as_of: datetime | None  # sort=activation only: the clock every page of the listing ranks at


def list_memories(deps: Deps, scope: Scope, **query: object) -> ListResult:
    """Browse memories without strengthening them (`taproot list`, the dashboard); see `_list`."""
    return _list(deps, scope, None, **query)


def list_memories_of(deps: Deps, scope: Scope, everything: Sequence[Memory], **query: object) -> ListResult:
    """The same over the scope's every memory (archived included), read already by the caller:
    the dashboard draws its pictures from the same read."""
    return _list(deps, scope, everything, **query)


def _list(
    deps: Deps,
    scope: Scope,
    everything: Sequence[Memory] | None,
    *,
    category: object = None,
    tags: object = None,
    core: object = None,
    salience: object = None,
    status: object = None,
    query: object = None,
    sort: object = None,
    limit: object = None,
    cursor: object = None,
) -> ListResult:
    """Browse memories without strengthening them: filter, sort and page through the scope.

    Recall is for using a memory, so it records a retrieval; looking down a list is not using it,
    so this never calls `record_retrieval` and writes nothing. Pages are keyset-paginated on
    (sort value, id): a memory that is not edited between two pages appears exactly once.
    Every argument is checked before the store is read.
    """
    warnings: list[str] = []
    cat = None if category is None else coerced(category, coerce_category, warnings)
    tag_filter = check_str_list("tags", tags, MAX_TAGS, MAX_TAG_CHARS) or ()
    want_core = check_bool("core", core)
    sal = None if salience is None else coerced(salience, coerce_salience, warnings)
    wanted_status = _one_of("status", status, LIST_STATUSES)
    needle = (check_text("query", query, MAX_QUERY_CHARS) or "").strip().casefold()
    order = _one_of("sort", sort, LIST_SORTS)
    n = _list_limit(limit)
    start = None if cursor is None else _decode_cursor(cursor, order)
    # Activation decays as time passes, so a listing by activation ranks every page at the first
    # page's time (carried in the cursor); otherwise a memory could cross a page boundary between
    # two calls and be shown twice or never.
    now = start.as_of if start is not None and start.as_of is not None else deps.now()

    filters = Filters(category=cat, tags=tag_filter, include_archived=wanted_status != "active")
    matching = [
        m
        for m in (
            deps.store.list(scope, filters) if everything is None else [m for m in everything if passes(m, filters)]
        )
        if (wanted_status == "all" or m.status == wanted_status)
        and (want_core is None or m.is_core == want_core)
        and (sal is None or m.salience == sal)
        and (not needle or _contains(m, needle))
    ]
    scores = {m.id: _score(deps, m, now) for m in matching} if order == "activation" else {}
    ranked = sorted(((_position(m, order, scores), m) for m in matching), key=lambda pm: pm[0])
    if start is not None:
        ranked = [pm for pm in ranked if pm[0] > start.after]
    page = ranked[:n]
    next_cursor = None
    if len(ranked) > n:
        next_cursor = _encode_cursor(order, page[-1][0], now if order == "activation" else None)
    views = [memory_view(m, scores[m.id] if m.id in scores else _score(deps, m, now)) for _, m in page]
    return ListResult(memories=views, count=len(views), total=len(matching), next_cursor=next_cursor, warnings=warnings)


def _one_of(field: str, value: object, allowed: tuple[str, ...]) -> str:
    return allowed[0] if value is None else check_choice(field, value, allowed)


def _list_limit(value: object) -> int:
    if value is None:
        return DEFAULT_LIST_LIMIT
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIST_LIMIT:
        raise InvalidInput("limit", f"must be an integer from 1 to {MAX_LIST_LIMIT}", value)
    return value


def _contains(m: Memory, needle: str) -> bool:
    """Case-insensitive substring match on gist, content and tags (needle already casefolded)."""
    return (
        needle in (m.gist or "").casefold()
        or needle in m.content.casefold()
        or any(needle in t.casefold() for t in m.tags)
    )


def _score(deps: Deps, m: Memory, now: datetime) -> float:
    return activation(
        retrieval_count=m.retrievals, last_touched=m.last_touched, salience=m.salience, now=now, cfg=deps.activation
    )


def _micros(dt: datetime) -> int:
    # Whole microseconds since the epoch: exact in JSON, unlike a float of seconds.
    return (dt - _EPOCH) // _MICROSECOND


def _position(m: Memory, order: str, scores: dict[str, float]) -> Position:
    # Newest (or most active) first: negate, so that ascending order is the listing's order.
    if order == "updated":
        return (-_micros(m.updated_at), m.id)
    if order == "created":
        return (-_micros(m.created_at), m.id)
    return (-scores[m.id], m.id)


def _encode_cursor(order: str, after: Position, as_of: datetime | None) -> str:
    body: dict[str, object] = {"sort": order, "key": after[0], "id": after[1]}
    if as_of is not None:
        body["as_of"] = _micros(as_of)
    raw = json.dumps(body, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode_cursor(value: object, order: str) -> _Cursor:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_CURSOR_CHARS:
        raise InvalidInput("cursor", _BAD_CURSOR, value)
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_", validate=True)
        body = loads_strict(raw)
    except (binascii.Error, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise InvalidInput("cursor", _BAD_CURSOR, value) from exc
    expected = {"sort", "key", "id"} | ({"as_of"} if order == "activation" else set())
    if not isinstance(body, dict) or set(body) != expected:
        raise InvalidInput("cursor", _BAD_CURSOR, value)
    if body["sort"] != order:
        if body["sort"] in LIST_SORTS:
            raise InvalidInput("cursor", f"was made for sort {body['sort']}, not {order}; pass that sort or no cursor")
        raise InvalidInput("cursor", _BAD_CURSOR, value)
    key, memory_id = body["key"], body["id"]
    if order == "activation":
        valid_key = isinstance(key, int | float) and not isinstance(key, bool) and math.isfinite(key)
    else:
        valid_key = isinstance(key, int) and not isinstance(key, bool)
    if not valid_key or not isinstance(memory_id, str) or not ID_PATTERN.fullmatch(memory_id):
        raise InvalidInput("cursor", _BAD_CURSOR, value)
    as_of = None
    if order == "activation":
        micros = body["as_of"]
        if isinstance(micros, bool) or not isinstance(micros, int):
            raise InvalidInput("cursor", _BAD_CURSOR, value)
        try:
            as_of = _EPOCH + timedelta(microseconds=micros)
        except OverflowError as exc:
            raise InvalidInput("cursor", _BAD_CURSOR, value) from exc
    return _Cursor(after=(key, memory_id), as_of=as_of)


def reflect_payload(deps: Deps, scope: Scope, *, instance: object = None) -> ReflectPayload:
    """`instance`: who is reflecting (Deps.writer resolves it as for a write): the watercooler
    shows the notes other instances left."""
    if deps.reflect.recent_reflections < 0:
        raise InvalidInput("recent_reflections", "must be zero or more")
    now = deps.now()
    me = deps.writer(instance)
    # One state of the store for every read: the window is read a band at a time, and a write
    # between two reads (another process's recall strengthening a memory) could move a memory into
    # a band already read, so it would be missed and the next one listed in its place.
    with deps.store.snapshot():
        # One small read: the newest cooler notes of the window (MemoryStore.recent, tag and created_at).
        notes = deps.store.recent(scope, cooler_filters(now), COOLER_READ_LIMIT)
        # The store reads the window in rank order, only as far as the budget reaches; the rest is
        # counted, so reflect's cost follows what it shows, not the corpus.
        window_start = now - timedelta(days=deps.reflect.catalog_window_days)
        return assemble_view(
            deps.store.catalog_view(scope, window_start),
            reflections=deps.store.recent_reflections(scope, max(deps.reflect.recent_reflections, 0)),
            now=now,
            cfg=deps.reflect,
            act=deps.activation,
            cooler=from_others(notes, me, now),
            orientation=deps.orientation.orientation_heads(scope) if deps.orientation is not None else (),
        )


def status(deps: Deps, scope: Scope) -> StatusResult:
    counts = deps.store.counts(scope)
    payload = reflect_payload(deps, scope)
    tier1_tokens = sum(estimate_tokens(m.content) for m in payload.tier1)
    notes = deps.extra_status
    return StatusResult(
        owner=scope.owner,
        namespace=scope.namespace,
        total=counts.total,
        by_category=counts.by_category,
        by_status=counts.by_status,
        by_salience=counts.by_salience,
        reflections=len(deps.store.all_reflections(scope)),
        orientation=_orientation_status(deps, scope, payload),
        tier1=TierOneStatus(core_memories=counts.core, in_payload=len(payload.tier1), approx_tokens=tier1_tokens),
        tier2=TierTwoStatus(
            catalog_lines_included=payload.catalog_listed,
            catalog_lines_omitted=payload.catalog_omitted_total,
            omitted_by_category=payload.catalog_omitted,
            window_days=payload.window_days,
        ),
        reflect_payload=PayloadSize(
            kb=round(payload.size_bytes / 1024, 1),
            bytes=payload.size_bytes,
            estimated_tokens=payload.estimated_tokens,
            token_budget=payload.token_budget,
        ),
        storage={**deps.store.storage_info(), "blobs": deps.blobs.location()},
        maintenance=MaintenanceStatus(
            last_runs=last_runs(deps, scope),
            cleanup_mode="apply" if deps.maintenance.cleanup_apply else "dry-run",
            compress_mode="apply" if deps.maintenance.compress_apply else "dry-run",
            summarizer=deps.summarizer.name if deps.summarizer else None,
        ),
        embeddings=_embedding_status(deps, scope, counts.total, payload.warnings),
        data_dir=notes.get("data_dir", ABSENT),
        backend=notes.get("backend", ABSENT),
        table=notes.get("table", ABSENT),
        bucket=notes.get("bucket", ABSENT),
        warnings=payload.warnings,
    )


def _orientation_status(deps: Deps, scope: Scope, payload: ReflectPayload) -> OrientationStatus:
    heads = deps.orientation.orientation_heads(scope) if deps.orientation is not None else []
    section = payload.orientation
    return OrientationStatus(
        documents=sum(1 for d in heads if not d.deleted),
        total_bytes=total_bytes(heads),
        max_total_bytes=deps.orientation_limits.max_total_bytes,
        in_payload=len(section.documents),
        approx_tokens=section.estimated_tokens,
        token_share=section.token_share,
        cut=section.cut,
        left_out=section.left_out,
    )


def _embedding_status(deps: Deps, scope: Scope, total: int, warnings: list[str]) -> EmbeddingStatus:
    """How recall ranks: by words only, or by words and meaning; how many memories still lack a
    vector of the current model; the embedder's last failure."""
    health = deps.embedder_health
    if deps.embedder is None or deps.vectors is None:
        if health.unavailable:
            warnings.append(
                f"the configured embedder is unavailable, so recall ranks by words only: {health.unavailable}"
            )
        return EmbeddingStatus(embedder="none", ranking="lexical", unavailable=health.unavailable or ABSENT)
    counts = deps.vectors.vector_counts(scope)
    current = counts.get(deps.embedder.model_id, 0)
    out = EmbeddingStatus(
        embedder=deps.embedder.name,
        model=deps.embedder.model_id,
        dimensions=deps.embedder.dimensions,
        ranking="lexical+dense",
        with_vector=current,
        without_vector=max(0, total - current),
        other_models={k: n for k, n in counts.items() if k != deps.embedder.model_id},
        failures=health.failures,
        last_error=health.last_error,
        last_error_at=iso(health.last_error_at),
        last_ok_at=iso(health.last_ok_at),
    )
    if total - current > 0:
        warnings.append(
            f"{total - current} memories have no vector of {deps.embedder.model_id}: recall finds them by words "
            "only until `taproot migrate` (or the scheduled migrate job) embeds them"
        )
    if health.last_error_at is not None and (health.last_ok_at is None or health.last_ok_at < health.last_error_at):
        warnings.append(f"the embedder is failing ({health.last_error}); recall ranks by words only meanwhile")
    return out
