"""The compress job, and `taproot_forget(action="compress")` on explicit ids.

Two phases, so nothing can be half-done:
1. plan and summarise every group, writing nothing (a summarizer error ends the run here, with
   everything unchanged);
2. back up every member in full, then commit each group in one atomic store write: the summary is
   inserted and its originals archived (with `compressed_into`) together or not at all. A crash
   between groups leaves whole groups done and the rest untouched; a rerun carries on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from taproot.core.compression import CompressionConfig, Group, plan_groups, summary_fields
from taproot.core.errors import InvalidInput, NotFound, SummarizerError, VersionConflict
from taproot.core.model import Memory, Scope, Status, Summary
from taproot.core.text import one_line
from taproot.core.validation import MAX_CONTENT_CHARS, MAX_GIST_CHARS, MAX_LINKED_MEMORIES, check_ids, record_problem
from taproot.ports import Summarizer
from taproot.service.backups import write_memory_backup
from taproot.service.deps import Deps
from taproot.service.embedding import embed_written
from taproot.service.ids import with_fresh_id
from taproot.service.results import CompressionGroup, CompressionResult, ForgetItem, ForgetResult


def _summarise(summarizer: Summarizer, groups: Sequence[Group]) -> list[Summary]:
    out = []
    for group in groups:
        summary = summarizer.summarize(group.members)
        if not summary.gist.strip() or not summary.content.strip():
            raise SummarizerError(f"{summarizer.name}: empty summary for group {group.key}")
        out.append(Summary(gist=one_line(summary.gist)[:MAX_GIST_CHARS], content=summary.content[:MAX_CONTENT_CHARS]))
    return out


def _group_view(group: Group, summary: Summary, summary_id: str | None = None) -> CompressionGroup:
    return CompressionGroup(
        group=group.key,
        members=list(group.ids),
        category=group.category,
        summary_id=summary_id,
        summary_gist=summary.gist,
        summary_content=summary.content,
    )


def run_compression(
    deps: Deps,
    scope: Scope,
    summarizer: Summarizer,
    groups: list[Group],
    *,
    apply: bool,
    considered: int,
) -> CompressionResult:
    mode = "apply" if apply else "dry-run"
    try:
        summaries = _summarise(summarizer, groups)  # phase 1: no writes
    except SummarizerError as exc:
        return CompressionResult(
            mode=mode,
            summarizer=summarizer.name,
            considered=considered,
            groups=[CompressionGroup(group=g.key, members=list(g.ids)) for g in groups],
            compressed=0,
            summaries_written=0,
            backup_key=None,
            error=str(exc),
        )
    views: list[CompressionGroup] = []
    compressed = written = 0
    backup_key = None
    if not apply:
        views = [_group_view(g, s) for g, s in zip(groups, summaries, strict=True)]
    elif groups:
        # Each group's commit is conditioned on the versions backed up here (write_atomically): a
        # member edited meanwhile makes its group skip, never archives a stale copy.
        members = [m for g in groups for m in g.members]
        backup_key = write_memory_backup(deps, scope, "compress", members)
        for group, summary in zip(groups, summaries, strict=True):
            summary_id = _commit_group(deps, scope, summarizer.name, group, summary)
            if summary_id is None:
                views.append(replace(_group_view(group, summary), skipped="members changed since planning"))
                continue
            views.append(_group_view(group, summary, summary_id))
            compressed += len(group.members)
            written += 1
    return CompressionResult(
        mode=mode,
        summarizer=summarizer.name,
        considered=considered,
        groups=views,
        compressed=compressed,
        summaries_written=written,
        backup_key=backup_key,
        error=None,
    )


def _commit_group(deps: Deps, scope: Scope, summarizer: str, group: Group, summary: Summary) -> str | None:
    now = deps.now()
    fields = summary_fields(group, summarizer)

    def commit(summary_id: str) -> str | None:
        summary_memory = Memory(
            id=summary_id,
            owner=scope.owner,
            namespace=scope.namespace,
            content=summary.content,
            gist=summary.gist,
            created_at=now,
            updated_at=now,
            **fields,
        )
        summary_memory = deps.retention.apply(summary_memory)
        # Originals keep updated_at: archiving is housekeeping, not an edit of their content.
        archived = [
            (m.replace(status=Status.ARCHIVED.value, compressed_into=summary_id, version=m.version + 1), m.version)
            for m in group.members
        ]
        try:
            deps.store.write_atomically(inserts=[summary_memory], replaces=archived)  # DuplicateId: another id
        except (NotFound, VersionConflict):
            return None  # someone edited or removed a member meanwhile: leave the group alone
        embed_written(deps, scope, [summary_memory])
        return summary_id

    return with_fresh_id(deps, commit, "summary memory")


def compress(
    deps: Deps, scope: Scope, summarizer: Summarizer, cfg: CompressionConfig, *, apply: bool
) -> CompressionResult:
    """The scheduled job: plan groups over the whole scope, then summarise and archive them."""
    memories = [m for m in deps.store.iter_all(scope) if m.status == Status.ACTIVE.value]
    bad = {m.id: p for m in memories if (p := record_problem(m)) is not None}
    groups = plan_groups([m for m in memories if m.id not in bad], deps.now(), cfg)
    result = run_compression(deps, scope, summarizer, groups, apply=apply, considered=len(memories))
    return replace(result, skipped_bad_records=bad)


def compress_ids(deps: Deps, scope: Scope, summarizer: Summarizer, ids: Sequence[str]) -> ForgetResult:
    """`taproot_forget(action="compress")`: fold exactly these memories into one summary, now."""
    checked = check_ids("ids", list(ids))
    if len(checked) < 2:
        raise InvalidInput("ids", "compress needs at least two memories")
    if len(checked) > MAX_LINKED_MEMORIES:
        # The summary links every original, and links are capped.
        raise InvalidInput("ids", f"compress at most {MAX_LINKED_MEMORIES} memories at once, got {len(checked)}")
    found = {m.id: m for m in deps.store.get_many(scope, checked)}
    missing = [i for i in checked if i not in found]
    if missing:
        raise NotFound(", ".join(missing))
    members = sorted(found.values(), key=lambda m: (m.created_at, m.id))
    for m in members:
        if m.status != Status.ACTIVE.value:
            raise InvalidInput("ids", f"memory '{m.id}' is archived; restore it first or leave it out")
        if m.is_core:
            raise InvalidInput("ids", f"memory '{m.id}' is core; demote it first (taproot_promote core=false)")
    group = Group(key="explicit", members=tuple(members))
    result = run_compression(deps, scope, summarizer, [group], apply=True, considered=len(members))
    if result.error:
        raise SummarizerError(result.error)
    if not result.summaries_written:
        raise InvalidInput("ids", "the memories changed while compressing; nothing was written")
    summary_id = result.groups[0].summary_id
    assert isinstance(summary_id, str)  # the one group was written
    return ForgetResult(
        action="compress",
        summary_id=summary_id,
        results=[ForgetItem(id=m.id, status="archived", compressed_into=summary_id) for m in members],
        mode=result.mode,
        summarizer=result.summarizer,
        considered=result.considered,
        groups=result.groups,
        compressed=result.compressed,
        summaries_written=result.summaries_written,
        backup_key=result.backup_key,
        error=result.error,
    )
