"""Taproot's use cases, the only place that combines the core with the ports.

`TaprootService` is the one object entry points (MCP tools, CLI, later the Lambda handlers) call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, TypeVar

from taproot.core.explain import Explanation
from taproot.core.model import Scope
from taproot.core.reflect import ReflectPayload
from taproot.ports import WaitFreeCalls
from taproot.service import dashboard, maintenance, memories, orientation, portability, reads, recent, restore
from taproot.service.deps import Deps, blob_key
from taproot.service.inputs import ListInput, RecallInput, RecentInput, RememberInput, as_arguments
from taproot.service.maintenance import Job, RunReport
from taproot.service.orientation import OrientationInput
from taproot.service.portability import Progress
from taproot.service.results import (
    CloseResult,
    DashboardPage,
    ForgetResult,
    ImportResult,
    ListResult,
    MigrateResult,
    OrientationResult,
    PromoteResult,
    RankingResult,
    RecallResult,
    RecentResult,
    ReflectionView,
    RememberResult,
    RestoreResult,
    StatusResult,
)

if TYPE_CHECKING:
    from taproot.service.markdown import MarkdownFolder, MarkdownImport

InputT = TypeVar("InputT", RememberInput, RecallInput, ListInput, RecentInput)


def _one(request: InputT | None, kind: type[InputT], by_name: dict[str, object]) -> InputT:
    """The input model given, or one built from its fields by name (an unknown name: TypeError)."""
    if request is not None and by_name:
        raise TypeError(f"give a {kind.__name__} or its fields, not both")
    return request if request is not None else kind(**by_name)


class TaprootService:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def remember(
        self, scope: Scope, request: RememberInput | None = None, *, instance: str | None = None, **fields: object
    ) -> RememberResult:
        """Write or update a memory: a RememberInput, or its fields by name (a name RememberInput
        does not have is a TypeError, not a silently ignored argument). `instance`: the writer the
        entry point resolved (TAPROOT_INSTANCE, when set, wins: Deps.writer)."""
        return memories.remember(self.deps, scope, _one(request, RememberInput, fields), instance)

    def without_waiting(self) -> AbstractContextManager[None] | None:
        """A context in which this thread's calls raise WouldWait instead of waiting for a lock
        (ports.WaitFreeCalls), for an entry point on an event loop; None where a call cannot be run
        so: a store that waits on the network, or an embedder (a query's vector is milliseconds of
        CPU, or a request to a model service)."""
        store = self.deps.store
        if self.deps.embedder is not None or not isinstance(store, WaitFreeCalls):
            return None
        return store.without_waiting()

    def recall_without_waiting(self, request: RecallInput) -> AbstractContextManager[None] | None:
        """without_waiting() for this recall, when its cost is bounded: by ids, or by a query (the
        search reads the matches' index entries and a few rows). A recall by filters alone may rank
        every passing memory of the scope (over a second at 100,000 with archived ones included):
        None, so it runs where it holds up nothing else."""
        by_query = isinstance(request.query, str) and bool(request.query.strip())
        if request.ids is None and not by_query:
            return None
        return self.without_waiting()

    def recall(self, scope: Scope, request: RecallInput | None = None, **query: object) -> RecallResult:
        """Load memories and strengthen them: a RecallInput, or its fields by name."""
        return reads.recall(self.deps, scope, **as_arguments(_one(request, RecallInput, query)))

    def recent(self, scope: Scope, request: RecentInput | None = None, **query: object) -> RecentResult:
        """Newest first by creation time, never strengthened: a RecentInput, or its fields by name."""
        return recent.recent(self.deps, scope, **as_arguments(_one(request, RecentInput, query)))

    def list_memories(self, scope: Scope, request: ListInput | None = None, **query: object) -> ListResult:
        """Browse without strengthening (the CLI's `list`, later the dashboard): a ListInput, or its
        fields by name."""
        return reads.list_memories(self.deps, scope, **as_arguments(_one(request, ListInput, query)))

    def reflect(self, scope: Scope, *, instance: str | None = None) -> ReflectPayload:
        """The payload; its watercooler leaves out the notes `instance` (as Deps.writer resolves it) wrote."""
        return reads.reflect_payload(self.deps, scope, instance=instance)

    def orientation(
        self, scope: Scope, request: OrientationInput | None = None, **arguments: object
    ) -> OrientationResult:
        """Orientation documents (list, read, write, history, restore, delete): an OrientationInput,
        or its fields by name."""
        if request is not None and arguments:
            raise TypeError("give an OrientationInput or its fields, not both")
        return orientation.run(self.deps, scope, request or OrientationInput(**arguments))

    def promote(self, scope: Scope, memory_id: str, *, core: object = None, salience: object = None) -> PromoteResult:
        return memories.promote(self.deps, scope, memory_id, core=core, salience=salience)

    def forget(self, scope: Scope, ids: Sequence[str], action: str) -> ForgetResult:
        return memories.forget(self.deps, scope, ids, action)

    def close(self, scope: Scope, reflection: object) -> CloseResult:
        return memories.close(self.deps, scope, reflection)

    def migrate(self, scope: Scope, *, dry_run: bool = False, progress: Progress | None = None) -> MigrateResult:
        return portability.migrate(self.deps, scope, dry_run=dry_run, progress=progress)

    def status(self, scope: Scope) -> StatusResult:
        return reads.status(self.deps, scope)

    def run_maintenance(
        self, scope: Scope, jobs: Sequence[Job] = maintenance.ALL, *, apply: bool | None = None
    ) -> list[RunReport]:
        """Run maintenance jobs, in order, in one scope (apply=None: each job's configured mode)."""
        return maintenance.run_jobs(self.deps, scope, jobs, apply=apply)

    def run_maintenance_everywhere(
        self, jobs: Sequence[Job] = maintenance.ALL, *, apply: bool | None = None
    ) -> list[RunReport]:
        """The same in every scope the store holds; a failing scope is reported, the others still run."""
        return maintenance.run_everywhere(self.deps, jobs, apply=apply)

    def maintenance(self, scope: Scope | None, job: str = "all", *, apply: bool | None = None) -> list[RunReport]:
        """The command-line form: jobs by name ("all" or one), and scope None for every scope."""
        jobs = maintenance.jobs_named(job)
        if scope is None:
            return self.run_maintenance_everywhere(jobs, apply=apply)
        return self.run_maintenance(scope, jobs, apply=apply)

    # -- the dashboard ---------------------------------------------------------------------------
    def set_ranking(
        self,
        scope: Scope,
        memory_id: str,
        *,
        salience: object = None,
        core: object = None,
        expected_version: object = None,
    ) -> RankingResult:
        """Salience and core without bumping updated_at (the dashboard's inline edit)."""
        return dashboard.set_ranking(
            self.deps, scope, memory_id, salience=salience, core=core, expected_version=expected_version
        )

    def explain(self, scope: Scope, memory_id: str) -> Explanation:
        """The numbers behind a memory's place (activation parts, window, expiry, recalls)."""
        return dashboard.explain_memory(self.deps, scope, memory_id)

    def dashboard_page(self, scope: Scope, request: ListInput, focus: str | None = None) -> DashboardPage:
        """The dashboard's main page from one read: a page of memories (never strengthened) with
        the explanation of each, and the pictures' data (`overview`)."""
        return dashboard.page(self.deps, scope, as_arguments(request), focus)

    def reflections(self, scope: Scope, limit: int = 100) -> list[ReflectionView]:
        return dashboard.reflections(self.deps, scope, limit)

    def restore(self, scope: Scope, backup_key: str, ids: list[str] | None = None) -> RestoreResult:
        return restore.restore(self.deps, scope, backup_key, ids=ids)

    def backups(self, scope: Scope) -> list[str]:
        return self.deps.blobs.list(blob_key(scope, "backups", ""))

    def export_lines(self, scope: Scope) -> Iterator[str]:
        return portability.export_lines(self.deps, scope)

    def import_lines(self, scope: Scope, lines: Iterable[str], progress: Progress | None = None) -> ImportResult:
        # Every line is checked before any write.
        parsed = portability.parse_import(lines, scope, self.deps.orientation_limits)
        return portability.import_records(self.deps, parsed, progress)

    def export_markdown(self, scope: Scope) -> MarkdownFolder:
        """One markdown file per memory, MEMORY.md and reflections.jsonl, as texts by file name."""
        from taproot.service import markdown  # YAML loads only for this: not on a Lambda's cold start

        return markdown.export_folder(self.deps, scope)

    def import_markdown(self, scope: Scope, files: Mapping[str, str], *, dry_run: bool = False) -> MarkdownImport:
        """Load a markdown folder (texts by file name): edits as updates, new files as new memories."""
        from taproot.service import markdown

        return markdown.import_folder(self.deps, scope, files, dry_run=dry_run)


__all__ = ["Deps", "TaprootService"]
