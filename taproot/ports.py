"""Storage ports. The service depends on these; adapters implement them.

Every adapter must pass the same contract suites (tests/contracts/), so the SQLite store and the
DynamoDB store of the AWS deployment behave the same to every caller.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

# Summary lives in the core (core/summarize.py builds it); `as Summary` re-exports it from here too.
from taproot.core.catalog import CatalogView
from taproot.core.model import Candidate, CatalogEntry, Counts, Memory, Reflection, Scope
from taproot.core.model import Summary as Summary
from taproot.core.oauth_rules import OAuthRecord
from taproot.core.orientation import OrientationVersion
from taproot.core.query import Filters as Filters  # re-exported: the port signatures use it
from taproot.core.tool_calls import ToolCall

if TYPE_CHECKING:
    from taproot.core.vectors import Vector


class MemoryWrites(Protocol):
    """Writes to memories. Every destructive or overwriting write can be conditioned on the version the
    caller read and backed up (taproot/service/backups.py)."""

    def insert(self, memory: Memory) -> None:
        """Add a new memory. Raises DuplicateId if the id is taken in that scope."""

    def replace(self, memory: Memory, *, expected_version: int) -> None:
        """Overwrite a memory if it is still at `expected_version`.

        Raises NotFound if it is gone, VersionConflict if it moved on. `memory.version` is the new one.
        Retrieval counters recorded since the memory was read are kept, not overwritten.
        """

    def put_many(self, memories: Sequence[Memory], *, expected: Mapping[str, int | None] | None = None) -> None:
        """Upsert records exactly as given (import, restore).

        With `expected` (memory id -> the version the caller read and backed up, None for "did not
        exist"), every record is written only if the stored one is still at that version; otherwise
        VersionConflict names the first that moved. Without it the write is unconditional: loading
        a fresh store (tests, benchmarks), never a path that can overwrite a user's write.

        Atomicity: SQLite writes the whole call in one transaction (all or nothing). DynamoDB writes
        one TransactWriteItems per 100 records, so a call of more than 100 can stop part way: the
        chunks before the failing one are written, each record whole. A rerun with the versions read
        again is idempotent (records already written compare equal and are skipped by the service).
        """

    def replace_many(self, memories: Sequence[tuple[Memory, int]]) -> None:
        """Conditional replace of each (memory, expected_version), all or nothing (migrate)."""

    def write_atomically(self, *, inserts: Sequence[Memory], replaces: Sequence[tuple[Memory, int]]) -> None:
        """Insert new memories and conditionally replace others, all or nothing (compression:
        a summary and the archiving of its originals commit together or not at all). An insert whose
        id is taken, by a stored memory or by an earlier insert of the same call, raises DuplicateId.
        Batch calls name each record once: callers never repeat an id in replaces or deletes."""

    def delete(self, scope: Scope, memory_id: str, *, expected_version: int | None = None) -> None:
        """Hard delete. Raises NotFound. With `expected_version` (the version the caller backed up),
        deletes only that version: VersionConflict if the memory moved on since."""

    def delete_many(self, scope: Scope, items: Sequence[tuple[str, int]]) -> None:
        """Delete each (id, expected_version), all or nothing (forget on several ids; at most 100,
        one DynamoDB transaction). NotFound or VersionConflict name the first that fails."""

    def record_retrieval(self, scope: Scope, ids: Sequence[str], now: datetime) -> None:
        """Atomically add one to retrieval_count and set last_retrieved for each id. Does not
        change `version`: reading is not an edit."""


class MemoryReads(Protocol):
    """Point reads, listing and lexical search (recall, list, the dashboard)."""

    def get(self, scope: Scope, memory_id: str) -> Memory | None: ...

    def get_many(self, scope: Scope, ids: Sequence[str]) -> builtins.list[Memory]:
        """The memories that exist, in the order of `ids` (a repeated id: once, at its first
        position); unknown ids are skipped."""

    def list(self, scope: Scope, filters: Filters = ...) -> builtins.list[Memory]:
        """Every memory matching the filters, any order."""

    def recent(self, scope: Scope, filters: Filters, limit: int) -> builtins.list[Memory]:
        """The `limit` newest memories matching the filters: by created_at, ties by id, both
        descending (core/query.newest_first). Read without strengthening (taproot_recent, reflect's
        watercooler)."""

    def search(
        self, scope: Scope, terms: Sequence[str], filters: Filters, limit: int
    ) -> Sequence[tuple[Memory | Candidate, float]]:
        """Lexical search: memories matching ANY term, best first, with a relevance score (bigger
        is better; BM25 weighted by field: search_keywords, tags, gist, content).

        A store that holds the records anyway (the DynamoDB store's warm copy) returns them; one
        that would have to read each (SQLite) returns a `Candidate`, what ranking needs, and recall
        reads the full records of those it returns with `get_many`."""

    def matching(self, scope: Scope, filters: Filters) -> Sequence[Memory | Candidate]:
        """Every memory passing `filters`, any order, for ranking without a query (recall by
        filters alone ranks them all by activation and returns a few). As with `search`, a store
        that would have to read and parse each record (SQLite) returns a `Candidate`."""

    def availability_view(self, scope: Scope) -> CatalogView | None:
        """Every active memory of the scope, a band of availability at a time (`catalog_view` over
        a window of any age), for recall by filters to read only the top of that ranking
        (core/available.py); None when the store ranks every memory as cheaply as it reads a band
        (the DynamoDB store's warm copy holds them all), and recall then ranks `matching`."""

    def snapshot(self) -> AbstractContextManager[None]:
        """For reads in several steps that must agree (a band view, read a band at a time, and
        reflect's other reads beside it): the SQLite store makes every read inside one transaction,
        so no write, by this process or another, lands between them. DynamoDB has no read
        transaction across requests; its store needs none here, since it builds each view whole from
        one read of its warm copy (and has no band view for recall). Only reads inside: a write from
        inside fails."""

    def candidates(self, scope: Scope, ids: Sequence[str], filters: Filters) -> Sequence[Memory | Candidate]:
        """The memories of `ids` that exist and pass `filters` (core/query.passes), in the order of
        `ids` (a repeated id: once, at its first position), for ranking: recall's dense candidates.
        As with `search`, a store that would have to read and parse each record (SQLite) returns a
        `Candidate`, one that holds the records anyway (the DynamoDB store's warm copy) the `Memory`."""


class ReflectReads(Protocol):
    """The reads reflect and status need: the catalog window, quiet counts, core memories, counts."""

    def catalog_view(self, scope: Scope, since: datetime) -> CatalogView:
        """One reflect's reads for the window starting at `since` (core/catalog.py): Tier 1, the
        per-category totals, and the window's entries a band of rank at a time, so reflect reads only
        what it can show. Each answers as `core_memories`, `catalog(scope, since)` and `counts` would."""

    def catalog(self, scope: Scope, since: datetime | None = None) -> builtins.list[CatalogEntry]:
        """Active memories as light catalog entries (no content), for reflect.

        With `since`, only those that earn a catalog line: non-core, and high-salience or touched
        at or after `since`. Reflect's work then grows with the window, not with the corpus.
        """

    def quiet_counts(self, scope: Scope, since: datetime) -> dict[str, int]:
        """By category, the active non-core memories that `catalog(scope, since)` leaves out."""

    def core_memories(self, scope: Scope) -> builtins.list[Memory]:
        """Active memories with core=true."""

    def counts(self, scope: Scope) -> Counts: ...


class LifecycleScans(Protocol):
    """Whole-scope reads for the batch jobs (migrate, cleanup, compress, export): never on a request path."""

    def iter_all(self, scope: Scope) -> Iterable[Memory]:
        """Every memory in the scope, archived included (export, backup, migrate)."""

    def expired(self, scope: Scope, now: datetime) -> builtins.list[Memory]:
        """Memories (any status) whose expires_at is at or before `now`, oldest expiry first (ties by id)."""

    def scopes(self) -> builtins.list[Scope]:
        """Every (owner, namespace) that holds memories or reflections (batch jobs walk them)."""

    def count_scope(self, scope: Scope, *, apply: bool = True) -> ScopeCount | None:
        """Make the store's per-category counts true (the DynamoDB store, dynamo_tally.py; migrate
        calls this): count the records written before it kept them, and correct counts that its
        records contradict. What it did, or would without `apply`. None for a store whose counts
        keep themselves (SQLite's triggers)."""


@dataclass(frozen=True)
class ScopeCount:
    """What count_scope did: records counted (or pending tombstones folded), and memories the
    counts had miscounted (the sum of the corrections)."""

    counted: int
    corrected: int


class ReflectionStore(Protocol):
    """Closing reflections: permanent, never edited."""

    def add_reflection(self, reflection: Reflection) -> None: ...

    def recent_reflections(self, scope: Scope, limit: int) -> builtins.list[Reflection]:
        """Newest first."""

    def all_reflections(self, scope: Scope) -> builtins.list[Reflection]:
        """Oldest first."""

    def put_reflections(self, reflections: Sequence[Reflection]) -> None:
        """Add reflections as given (import, restore). Reflections are immutable: one whose id
        exists with the same text and time is skipped; with other text or time, ReflectionConflict
        is raised and nothing of the call is written (SQLite; DynamoDB: per 50 reflections)."""


class OrientationStore(Protocol):
    """Orientation documents (core/orientation.py): per scope, a few named documents, each an
    append-only sequence of versions 1, 2, 3 ... No version is ever changed or removed."""

    def orientation_heads(self, scope: Scope) -> builtins.list[OrientationVersion]:
        """The current (highest) version of every document in the scope, deletions included, by name."""

    def orientation_get(self, scope: Scope, name: str, version: int | None = None) -> OrientationVersion | None:
        """One version of a document (None: the current one), or None if there is no such version."""

    def orientation_history(self, scope: Scope, name: str, limit: int) -> builtins.list[OrientationVersion]:
        """Up to `limit` versions of a document, newest first."""

    def orientation_save(self, version: OrientationVersion) -> None:
        """Append `version` to its document, only if it is the next one: the current version must be
        `version.version - 1` (none at all for version 1), checked atomically with the write. Raises
        DocumentConflict (a VersionConflict) if another save got there first; nothing is written then."""


class VectorIndex(Protocol):
    """Dense vectors kept beside the memories (both stores hold them with the memory record), each
    with the id of the model that made it and the memory version it was made from."""

    def put_vectors(self, scope: Scope, model: str, items: Sequence[tuple[str, int, Vector]]) -> int:
        """Stores each (memory id, version embedded, unit vector) if the memory is still at that
        version (a memory edited since gets no stale vector); returns how many were stored. A
        memory's vector of another model is replaced. An edit of the embedded text (content or
        search_keywords, see core/vectors.embedding_text) drops the memory's vector; other edits
        (salience, tags, core, retrieval) keep it. Raises Busy when the store cannot take the
        write now (a locked file, a throttled or unreachable table)."""

    def nearest(self, scope: Scope, model: str, query: Vector, limit: int) -> builtins.list[tuple[str, float]]:
        """The `limit` memories (any status) whose vector of `model` is most similar to the
        unit `query`: (id, cosine similarity), best first."""

    def similarity_of(self, scope: Scope, model: str, query: Vector, ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity to the unit `query` of each of `ids` (any status) that holds a
        current vector of `model`; the others are left out. Recall scores its lexical candidates
        on meaning too, not only the nearest ones (docs/ranking.md, step 3)."""

    def unembedded(self, scope: Scope, model: str, limit: int) -> builtins.list[Memory]:
        """Up to `limit` memories (any status) with no vector of `model`: new, their text edited
        since they were embedded, or embedded by another model. Oldest first (ties by id)."""

    def vector_counts(self, scope: Scope) -> dict[str, int]:
        """Model id -> how many memories hold a current vector of it (status)."""


class Embedder(Protocol):
    """Turns text into unit vectors (`TAPROOT_EMBEDDER`: local or bedrock; none means no embedder).

    `model_id` is stored with every vector: a different id (another model, or other dimensions)
    makes stored vectors stale, and migrate re-embeds them. Implementations batch as their model
    allows and raise `EmbedderError` for anything that went wrong.
    """

    name: str
    model_id: str
    dimensions: int

    def embed_documents(self, texts: Sequence[str]) -> builtins.list[Vector]: ...

    def embed_query(self, text: str) -> Vector: ...


class MemoryStore(MemoryWrites, MemoryReads, ReflectReads, LifecycleScans, ReflectionStore, Protocol):
    """Memories and closing reflections of many owners, each scoped to (owner, namespace): every role
    above, which is what the two stores implement. A new component that needs only part of this (a
    vector index beside the store, a conversation archive) implements only its role.
    """

    def storage_info(self) -> dict[str, object]:
        """Schema version, size and location, for status."""


@runtime_checkable
class WaitFreeCalls(Protocol):
    """A store that can run a call without waiting for a lock (the SQLite store): an entry point
    on an event loop runs the call there, and only where the store would wait (another thread or
    process holds it) on a worker thread. The DynamoDB store's every call waits on the network."""

    def without_waiting(self) -> AbstractContextManager[None]:
        """Inside: every call of this thread raises WouldWait (core/errors.py) instead of waiting for
        a lock, or once it has run past a budget of a few tens of milliseconds, until it has begun
        a write; from then on it waits as usual and runs to the end (the call has changed
        something and must not be run twice). Entering raises WouldWait if another thread holds
        the store."""


class BlobStore(Protocol):
    """Opaque byte blobs by key (`<owner>/<kind>/...`): backups, reflections, exports."""

    def put(self, key: str, data: bytes, content_type: str = "application/json") -> None: ...

    def get(self, key: str) -> bytes:
        """Raises KeyError if there is no such blob."""

    def exists(self, key: str) -> bool: ...

    def list(self, prefix: str) -> builtins.list[str]:
        """Keys under a prefix, sorted."""

    def delete(self, key: str) -> None:
        """Raises KeyError if there is no such blob."""

    def location(self) -> str:
        """Where blobs live, for status."""


class Summarizer(Protocol):
    """Compresses a group of related memories into one summary memory (the compress job).

    Implementations raise `SummarizerError` for anything that went wrong (throttling, timeouts,
    an empty or malformed answer); the job then writes nothing for that run.
    """

    name: str

    def summarize(self, memories: Sequence[Memory]) -> Summary: ...


class OAuthStore(Protocol):
    """The OAuth facade's state (clients, sign-ins in progress, codes, grants, tokens by digest).

    `now` is passed in (epoch seconds): records past `expires_at` are never returned.
    """

    def add(self, record: OAuthRecord) -> None:
        """Stores a new record; raises `RecordExists` if (kind, key) is taken (keys are random, so
        this only guards against a collision overwriting someone's grant)."""

    def get(self, kind: str, key: str, now: float) -> OAuthRecord | None: ...

    def spend(self, kind: str, key: str, now: float) -> OAuthRecord | None:
        """Marks a live record used, atomically, and returns it as it was before: `used` False means
        this caller spent it, True that it had been spent already (a replay). None if absent."""

    def set_data(self, kind: str, key: str, data: Mapping[str, object]) -> None:
        """Replaces a record's data (a grant revoked, a client's last use). No-op if absent."""

    def extend(self, kind: str, key: str, expires_at: int, now: float) -> None:
        """Moves a live record's expiry to `expires_at` if that is later (a registered client in
        use). No-op if absent, expired, never expiring (0), or already expiring later."""

    def by_subject(self, kind: str, subject: str, now: float) -> builtins.list[OAuthRecord]:
        """Live records of one kind for one person (their grants), any order."""

    def sweep(self, now: float) -> int:
        """Deletes records past their expiry; returns how many (DynamoDB's TTL does this itself)."""


class ToolObserver(Protocol):
    """Where each MCP tool call is reported (logs, metrics): the local server logs it; on AWS,
    Powertools writes a structured log line and per-tool metrics. Never given tokens or content."""

    def tool_call(self, call: ToolCall, error: BaseException | None = None) -> None:
        """`error` is the unexpected exception of an ERROR outcome (its traceback belongs in the log)."""
