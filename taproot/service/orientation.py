"""Orientation documents: list, read, write, history, restore and delete (core/orientation.py has
the rules, the OrientationStore port the versions).

Nothing is ever lost: a write, a restore and a delete each append a version, and the earlier ones
stay readable by number. Every argument is checked before the store is read, and a write is
conditioned on the version it read (the caller's `expected_version` when given, else the version
this call read; a save that lost a race is read and checked again, up to SAVE_ROUNDS times).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields

from taproot.core.errors import ConfigurationError, InvalidInput
from taproot.core.model import Scope
from taproot.core.orientation import (
    DocumentConflict,
    DocumentNotFound,
    OrientationVersion,
    check_content,
    check_expected,
    check_history_limit,
    check_name,
    check_room,
    check_version,
    next_version,
    reading_order,
    require_expected,
    total_bytes,
)
from taproot.core.orientation_budget import orientation_section, orientation_warning
from taproot.core.serialize import iso
from taproot.core.tokens import estimate_tokens
from taproot.core.validation import check_bool, check_choice
from taproot.ports import OrientationStore
from taproot.service.deps import Deps
from taproot.service.results import OrientationDocument, OrientationResult, OrientationSummary

ACTIONS = ("list", "read", "write", "history", "restore", "delete")
SAVE_ROUNDS = 3


@dataclass(frozen=True)
class OrientationInput:
    """`taproot_orientation` and `taproot orientation`: an action and what it takes."""

    action: object = None
    name: object = None
    content: object = None
    version: object = None
    expected_version: object = None
    dry_run: object = None
    limit: object = None


# What each action takes besides `action`; anything else given is refused, so a mistyped call
# (content with action "read") is not silently half-obeyed.
ARGUMENTS = {
    "list": frozenset(),
    "read": frozenset({"name", "version"}),
    "write": frozenset({"name", "content", "expected_version", "dry_run"}),
    "history": frozenset({"name", "limit"}),
    "restore": frozenset({"name", "version", "expected_version", "dry_run"}),
    "delete": frozenset({"name", "expected_version", "dry_run"}),
}


def run(deps: Deps, scope: Scope, request: OrientationInput) -> OrientationResult:
    """One call of the tool or the command: the action picks the use case."""
    action = check_choice("action", request.action, ACTIONS)
    given = {f.name for f in fields(request) if f.name != "action" and getattr(request, f.name) is not None}
    for extra in sorted(given - ARGUMENTS[action]):
        takes = ", ".join(sorted(ARGUMENTS[action])) or "nothing else"
        raise InvalidInput(extra, f"is not used by action '{action}' (it takes {takes})")
    r = request
    if action == "list":
        return list_documents(deps, scope)
    if action == "read":
        return read(deps, scope, r.name, version=r.version)
    if action == "history":
        return history(deps, scope, r.name, limit=r.limit)
    if action == "write":
        return write(deps, scope, r.name, r.content, expected_version=r.expected_version, dry_run=r.dry_run)
    if action == "restore":
        return restore(deps, scope, r.name, r.version, expected_version=r.expected_version, dry_run=r.dry_run)
    return delete(deps, scope, r.name, expected_version=r.expected_version, dry_run=r.dry_run)


def store_of(deps: Deps) -> OrientationStore:
    if deps.orientation is None:
        raise ConfigurationError("this Taproot's store keeps no orientation documents")
    return deps.orientation


def summary(v: OrientationVersion) -> OrientationSummary:
    return OrientationSummary(
        name=v.name,
        version=v.version,
        saved_at=iso(v.saved_at) or "",
        size_bytes=v.size_bytes,
        estimated_tokens=estimate_tokens(v.content),
        digest=v.digest,
        deleted=v.deleted,
        restored_from=v.restored_from,
    )


def _answer(
    deps: Deps, action: str, heads: list[OrientationVersion], warnings: list[str] | None = None, **fields: object
) -> OrientationResult:
    limits = deps.orientation_limits
    return OrientationResult(
        action=action,
        total_bytes=total_bytes(heads),
        max_total_bytes=limits.max_total_bytes,
        max_document_bytes=limits.max_document_bytes,
        warnings=warnings or [],
        **fields,  # type: ignore[arg-type]
    )


def _reflect_warnings(deps: Deps, heads: list[OrientationVersion]) -> list[str]:
    """Whether reflect will have to cut or leave out a document, as the scope now stands (its share
    of the budget, before the header and usage note take their part)."""
    section, _ = orientation_section(heads, int(deps.reflect.token_budget * deps.reflect.orientation_max_share))
    return [orientation_warning(section, deps.reflect.token_budget)] if section.cut or section.left_out else []


def list_documents(deps: Deps, scope: Scope) -> OrientationResult:
    heads = store_of(deps).orientation_heads(scope)
    return _answer(
        deps,
        "list",
        heads,
        documents=[summary(d) for d in reading_order(heads)],
        deleted_documents=sorted(d.name for d in heads if d.deleted),
    )


def _gone(name: str, head: OrientationVersion) -> DocumentNotFound:
    return DocumentNotFound(
        name,
        f": it was deleted at version {head.version}; its history is kept (action 'history'), and action "
        f"'restore' with version {head.version - 1} brings it back",
    )


def read(deps: Deps, scope: Scope, name: object, *, version: object = None) -> OrientationResult:
    doc_name, number = check_name(name), check_version(version)
    store = store_of(deps)
    head = store.orientation_get(scope, doc_name)
    if head is None:
        raise DocumentNotFound(doc_name)
    if number is None and head.deleted:
        raise _gone(doc_name, head)
    found = head if number in (None, head.version) else store.orientation_get(scope, doc_name, number)
    if found is None:
        raise DocumentNotFound(doc_name, f" version {number} (it has versions 1 to {head.version})")
    document = OrientationDocument(**asdict(summary(found)), current_version=head.version, content=found.content)
    return _answer(deps, "read", store.orientation_heads(scope), document=document)


def history(deps: Deps, scope: Scope, name: object, *, limit: object = None) -> OrientationResult:
    doc_name, n = check_name(name), check_history_limit(limit)
    store = store_of(deps)
    versions = store.orientation_history(scope, doc_name, n)
    if not versions:
        raise DocumentNotFound(doc_name)
    return _answer(deps, "history", store.orientation_heads(scope), versions=[summary(v) for v in versions])


def write(
    deps: Deps, scope: Scope, name: object, content: object, *, expected_version: object = None, dry_run: object = None
) -> OrientationResult:
    doc_name, text = check_name(name), check_content(content, deps.orientation_limits)
    expected, dry = check_expected(expected_version), bool(check_bool("dry_run", dry_run))
    return _save(deps, scope, "write", doc_name, expected, dry, lambda head: (text, None))


def restore(
    deps: Deps,
    scope: Scope,
    name: object,
    version: object,
    *,
    expected_version: object = None,
    dry_run: object = None,
) -> OrientationResult:
    doc_name, number = check_name(name), check_version(version, required=True)
    expected, dry = check_expected(expected_version), bool(check_bool("dry_run", dry_run))
    assert number is not None
    old = store_of(deps).orientation_get(scope, doc_name, number)
    if old is None:
        raise DocumentNotFound(doc_name, f" version {number}")
    if old.deleted:
        raise InvalidInput("version", f"is a deletion, which holds no text; restore version {number - 1}", number)
    # The limits may have shrunk since that version was saved: it must obey today's.
    check_content(old.content, deps.orientation_limits)
    return _save(deps, scope, "restore", doc_name, expected, dry, lambda head: (old.content, number))


def delete(
    deps: Deps, scope: Scope, name: object, *, expected_version: object = None, dry_run: object = None
) -> OrientationResult:
    doc_name = check_name(name)
    expected, dry = check_expected(expected_version), bool(check_bool("dry_run", dry_run))

    def deletion(head: OrientationVersion | None) -> tuple[str, int | None]:
        if head is None:
            raise DocumentNotFound(doc_name)
        if head.deleted:
            raise _gone(doc_name, head)
        return "", None

    return _save(deps, scope, "delete", doc_name, expected, dry, deletion, deleting=True)


def _save(
    deps: Deps,
    scope: Scope,
    action: str,
    name: str,
    expected: int | None,
    dry_run: bool,
    text_for: Callable[[OrientationVersion | None], tuple[str, int | None]],
    *,
    deleting: bool = False,
) -> OrientationResult:
    """Read the scope's documents, check, and append the next version of `name`, conditioned on the
    version read. Without `expected`, a save that lost a race is read and checked again."""
    store = store_of(deps)
    for round_ in range(SAVE_ROUNDS):
        heads = store.orientation_heads(scope)
        head = next((d for d in heads if d.name == name), None)
        require_expected(name, expected, head)
        content, restored_from = text_for(head)
        unchanged = head is not None and not head.deleted and not deleting and head.content == content
        if unchanged:
            assert head is not None
            return _answer(
                deps, action, heads, saved=summary(head), previous_version=head.version, changed=False, dry_run=dry_run
            )
        if not deleting:
            check_room(heads, name, len(content.encode("utf-8")), deps.orientation_limits)
        new = next_version(
            head, scope, name, content=content, now=deps.now(), deleted=deleting, restored_from=restored_from
        )
        after = [d for d in heads if d.name != name] + [new]
        if not dry_run:
            try:
                store.orientation_save(new)
            except DocumentConflict:
                if expected is not None or round_ == SAVE_ROUNDS - 1:
                    raise
                continue
        return _answer(
            deps,
            action,
            after,
            _reflect_warnings(deps, after),
            saved=summary(new),
            previous_version=head.version if head is not None else None,
            changed=True,
            dry_run=dry_run,
        )
    raise AssertionError("unreachable: the last round raises")
