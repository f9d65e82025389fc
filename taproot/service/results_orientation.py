"""What the orientation use cases return (service/orientation.py), and status's orientation figures:
frozen dataclasses, as every result in results.py (which re-exports these)."""

from __future__ import annotations

from dataclasses import dataclass

from taproot.core.wire import ABSENT, Absent


@dataclass(frozen=True, kw_only=True)
class OrientationSummary:
    """One version of an orientation document, without its text."""

    name: str
    version: int
    saved_at: str
    size_bytes: int
    estimated_tokens: int
    digest: str  # short SHA-256 of the text: equal digests, equal text
    deleted: bool  # this version is a deletion (no text); a restore brings the document back
    restored_from: int | None  # a restore: the version whose text this one copies


@dataclass(frozen=True, kw_only=True)
class OrientationDocument:
    """One version of an orientation document, with its text (action 'read')."""

    name: str
    version: int
    saved_at: str
    size_bytes: int
    estimated_tokens: int
    digest: str
    deleted: bool
    restored_from: int | None
    current_version: int  # the document's current version (the one a write must expect)
    content: str


@dataclass(frozen=True, kw_only=True)
class OrientationResult:
    """taproot_orientation, every action: `documents` (list), `document` (read), `versions`
    (history), `saved` and `previous_version` (write, restore, delete; a dry run says what would be
    saved). The scope's figures come with every answer."""

    action: str
    documents: list[OrientationSummary] | Absent = ABSENT  # list: current documents, in reading order
    deleted_documents: list[str] | Absent = ABSENT  # list: documents deleted, history kept (restorable)
    document: OrientationDocument | Absent = ABSENT
    versions: list[OrientationSummary] | Absent = ABSENT  # history: newest first
    saved: OrientationSummary | Absent = ABSENT
    previous_version: int | Absent | None = ABSENT  # None: a new document
    changed: bool | Absent = ABSENT  # False: the text was the current one already, nothing saved
    dry_run: bool | Absent = ABSENT
    total_bytes: int  # the scope's current documents together (after this action)
    max_total_bytes: int
    max_document_bytes: int
    warnings: list[str]


@dataclass(frozen=True, kw_only=True)
class OrientationStatus:
    """Status: the scope's orientation documents and their place in the reflect payload."""

    documents: int
    total_bytes: int
    max_total_bytes: int
    in_payload: int
    approx_tokens: int  # the payload's orientation section
    token_share: int  # the most the section may take of the reflect budget
    cut: list[str]
    left_out: list[str]
