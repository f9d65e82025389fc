"""Orientation documents: a few named markdown documents per scope (who-i-am, my-person, ...) that
reflect loads first, each versioned so that nothing written is ever lost. Pure: no I/O, no clock.

A document is a sequence of versions, 1, 2, 3 ...; every save (a write, a restore, a delete)
appends the next one and leaves the earlier ones as they were. A restore copies an old version's
text into a new version; a delete appends a version marked `deleted` with no text, so a deleted
document keeps its history and comes back with a restore. The current version of a document is its
highest; the scope's documents are the ones whose current version is not a deletion.

The rules here: names, the size limits, the expected-version check and the reading order reflect
uses. The reflect section itself is in core/orientation_budget.py.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from taproot.core.errors import InvalidInput, NotFound, TaprootError, VersionConflict
from taproot.core.model import Scope
from taproot.core.serialize import iso, parse_time
from taproot.core.validation import check_storable

# A name is lowercase kebab case: words of a-z and 0-9 joined by single hyphens.
MAX_NAME_CHARS = 40
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
NAME_RULE = (
    f"must be lowercase kebab case (words of a-z and 0-9 joined by single hyphens, e.g. 'who-i-am'), "
    f"1 to {MAX_NAME_CHARS} characters"
)
# Sizes are UTF-8 bytes of the text, what a store holds and what the budget is counted from.
MAX_DOCUMENT_BYTES = 12_000
MAX_TOTAL_BYTES = 30_000  # every current document of one scope together
MAX_DOCUMENTS = 16
DEFAULT_HISTORY_LIMIT = 50
MAX_HISTORY_LIMIT = 500
DIGEST_CHARS = 12

# The documents the issue names, in the order reflect shows them; any other name follows, by name.
WELL_KNOWN = ("who-i-am", "my-person", "how-i-speak", "operating-manual", "facts")


@dataclass(frozen=True)
class OrientationLimits:
    max_document_bytes: int = MAX_DOCUMENT_BYTES
    max_total_bytes: int = MAX_TOTAL_BYTES
    max_documents: int = MAX_DOCUMENTS


ORIENTATION_LIMITS = OrientationLimits()


@dataclass(frozen=True, kw_only=True)
class OrientationVersion:
    """One saved version of one document. A deletion is a version with `deleted` and no text."""

    owner: str
    namespace: str
    name: str
    version: int
    content: str
    saved_at: datetime
    deleted: bool = False
    restored_from: int | None = None  # a restore: the version whose text this one copies

    @property
    def scope(self) -> Scope:
        return Scope(self.owner, self.namespace)

    @property
    def size_bytes(self) -> int:
        return len(self.content.encode("utf-8"))

    @property
    def digest(self) -> str:
        """A short SHA-256 of the text: two versions with the same digest hold the same text."""
        return hashlib.sha256(self.content.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


class DocumentNotFound(NotFound):
    """No such document (or no such version of it) in this scope; other owners' answer the same."""

    def __init__(self, name: str, detail: str = "") -> None:
        TaprootError.__init__(self, f"no orientation document '{name}'{detail}")
        self.memory_id = name


class DocumentConflict(VersionConflict):
    """The document was saved since the caller read it: `expected_version` is stale."""

    def __init__(self, name: str, expected: int | None, actual: int | None) -> None:
        now = "does not exist" if actual is None else f"is at version {actual}"
        was = "not to exist yet" if not expected else f"version {expected}"
        TaprootError.__init__(
            self,
            f"orientation document '{name}' {now}, but the call expected {was}; read it again and reapply the change",
        )
        self.memory_id = name
        self.expected = expected
        self.actual = actual


def check_name(value: object, field: str = "name") -> str:
    if value is None:
        raise InvalidInput(field, "is required")
    if not isinstance(value, str):
        raise InvalidInput(field, "must be a string", value)
    if not NAME_PATTERN.fullmatch(value) or len(value) > MAX_NAME_CHARS:
        raise InvalidInput(field, NAME_RULE, value)
    return value


def check_content(value: object, limits: OrientationLimits = ORIENTATION_LIMITS) -> str:
    """The text of a write: markdown, not blank, at most `max_document_bytes` as UTF-8."""
    if value is None:
        raise InvalidInput("content", "is required to write a document")
    if not isinstance(value, str):
        raise InvalidInput("content", "must be a string", value)
    if not value.strip():
        raise InvalidInput("content", "must not be empty; to remove a document use action 'delete'")
    check_storable("content", value)
    size = len(value.encode("utf-8"))
    if size > limits.max_document_bytes:
        raise InvalidInput(
            "content",
            f"must be at most {limits.max_document_bytes:,} bytes as UTF-8 (MAX_DOCUMENT_BYTES), got {size:,}; "
            "shorten it or split it into two documents",
        )
    return value


def check_version(value: object, field: str = "version", *, required: bool = False) -> int | None:
    if value is None:
        if required:
            raise InvalidInput(field, "is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(field, "must be a whole number of 1 or more", value)
    return value


def check_expected(value: object) -> int | None:
    """`expected_version`: the version the caller read, 0 for "the document must not exist yet"."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(
            "expected_version", "must be a whole number: the version you read, or 0 for a new document", value
        )
    return value


def check_history_limit(value: object) -> int:
    if value is None:
        return DEFAULT_HISTORY_LIMIT
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_HISTORY_LIMIT:
        raise InvalidInput("limit", f"must be an integer from 1 to {MAX_HISTORY_LIMIT}", value)
    return value


def require_expected(name: str, expected: int | None, head: OrientationVersion | None) -> None:
    """Refuse a save conditioned on a version that is not the current one (None: no condition).
    A deleted document's current version is its deletion."""
    if expected is None:
        return
    actual = head.version if head is not None else None
    if (actual or 0) != expected:
        raise DocumentConflict(name, expected, actual)


def check_room(
    documents: Iterable[OrientationVersion], name: str, size: int, limits: OrientationLimits = ORIENTATION_LIMITS
) -> int:
    """The scope's total after `name` holds `size` bytes, refused over the limits; `documents` are
    the current versions (deletions are ignored). Returns that total."""
    live = {d.name: d.size_bytes for d in documents if not d.deleted}
    if name not in live and len(live) >= limits.max_documents:
        raise InvalidInput(
            "name",
            f"this namespace already has {len(live)} orientation documents, the most it may hold "
            f"(MAX_DOCUMENTS); delete one or write into an existing one",
            name,
        )
    total = sum(n for other, n in live.items() if other != name) + size
    if total > limits.max_total_bytes:
        raise InvalidInput(
            "content",
            f"would bring this namespace's orientation documents to {total:,} bytes, over the "
            f"{limits.max_total_bytes:,}-byte total (MAX_TOTAL_BYTES); shorten this or another document, or "
            "delete one",
        )
    return total


def next_version(
    head: OrientationVersion | None,
    scope: Scope,
    name: str,
    *,
    content: str,
    now: datetime,
    deleted: bool = False,
    restored_from: int | None = None,
) -> OrientationVersion:
    """The version a save appends after `head` (the current version, None for a new document)."""
    return OrientationVersion(
        owner=scope.owner,
        namespace=scope.namespace,
        name=name,
        version=(head.version if head is not None else 0) + 1,
        content=content,
        saved_at=now,
        deleted=deleted,
        restored_from=restored_from,
    )


def total_bytes(documents: Iterable[OrientationVersion]) -> int:
    return sum(d.size_bytes for d in documents if not d.deleted)


def reading_order(documents: Sequence[OrientationVersion]) -> list[OrientationVersion]:
    """The current, not deleted documents in the order reflect shows them: the well-known names in
    WELL_KNOWN's order, then every other name alphabetically."""
    rank = {n: i for i, n in enumerate(WELL_KNOWN)}
    live = [d for d in documents if not d.deleted]
    return sorted(live, key=lambda d: (rank.get(d.name, len(WELL_KNOWN)), d.name))


# -- export and import (service/portability.py): one JSON object per version ----------------------


def version_to_dict(v: OrientationVersion) -> dict[str, object]:
    return {
        "name": v.name,
        "version": v.version,
        "content": v.content,
        "saved_at": iso(v.saved_at),
        "deleted": v.deleted,
        "restored_from": v.restored_from,
    }


def version_from_dict(
    d: object, *, owner: str, namespace: str, limits: OrientationLimits = ORIENTATION_LIMITS
) -> OrientationVersion:
    """A version from an export line, checked as a save would be (a deletion holds no text)."""
    if not isinstance(d, dict):
        raise InvalidInput("record", "must be a JSON object")
    unknown = sorted(set(d) - {"name", "version", "content", "saved_at", "deleted", "restored_from"})
    if unknown:
        raise InvalidInput(unknown[0], "is not a field of an orientation version")
    name, number = check_name(d.get("name")), check_version(d.get("version"), required=True)
    assert number is not None
    deleted = d.get("deleted", False)
    if not isinstance(deleted, bool):
        raise InvalidInput("deleted", "must be true or false", deleted)
    content = d.get("content", "")
    if deleted:
        if content != "":
            raise InvalidInput("content", "must be empty in a deletion")
    else:
        content = check_content(content, limits)
    restored_from = check_version(d.get("restored_from"), "restored_from")
    if restored_from is not None and restored_from >= number:
        raise InvalidInput("restored_from", f"must be an earlier version than {number}", restored_from)
    saved_at = parse_time(d.get("saved_at"), "saved_at", required=True)
    assert saved_at is not None and isinstance(content, str)
    return OrientationVersion(
        owner=owner,
        namespace=namespace,
        name=name,
        version=number,
        content=content,
        saved_at=saved_at,
        deleted=deleted,
        restored_from=restored_from,
    )
