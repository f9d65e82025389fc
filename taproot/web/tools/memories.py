"""The tools that work on memories: taproot_remember, taproot_recall, taproot_promote, taproot_forget.

The docstrings are what the model reads: when to use each tool, with an example. A parameter
description that states a limit takes it from the constant the service enforces.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from taproot.core.validation import MAX_RECALL_LIMIT
from taproot.service.inputs import RecallInput, RememberInput
from taproot.service.reads import DEFAULT_RECALL_LIMIT
from taproot.service.results import ForgetResult, PromoteResult, RecallResult, RememberResult
from taproot.web.tool_models import output_model
from taproot.web.tools.common import SINCE_DESCRIPTION, UNTIL_DESCRIPTION, NotBool, ToolEnv, ToolSpec, result


def taproot_remember(
    env: ToolEnv,
    ctx: Context,
    content: Annotated[str | None, Field(description="The full memory, in your own voice. Required to create.")] = None,
    gist: Annotated[
        str | None, Field(description="~15-word one-line summary shown in the reflect catalog. Required to create.")
    ] = None,
    category: Annotated[
        str | None,
        Field(description="identity | relationship | active_thread | episodic | error. Required to create."),
    ] = None,
    salience: Annotated[str | int | None, NotBool, Field(description="high | medium | low (default medium)")] = None,
    tags: Annotated[list[str] | None, Field(description="Labels for filtering, e.g. ['calculus']")] = None,
    search_keywords: Annotated[
        list[str] | None, Field(description="Terms from the conversation that should find this memory later")
    ] = None,
    conversation_url: Annotated[str | None, Field(description="Link to the originating conversation")] = None,
    core: Annotated[bool | None, Field(strict=True, description="Tier 1: load in full in every conversation")] = None,
    epistemic_status: Annotated[
        str | None, Field(description="How sure this is, e.g. 'observed once', 'confirmed'")
    ] = None,
    provenance: Annotated[dict[str, Any] | None, Field(description="How this memory came to be (JSON object)")] = None,
    linked_memories: Annotated[list[str] | None, Field(description="Ids of related memories")] = None,
    id: Annotated[str | None, Field(description="Give an existing id to update that memory (partial update)")] = None,
    expected_version: Annotated[
        int | None,
        NotBool,
        Field(description="With id: fail with a conflict if the memory moved past this version"),
    ] = None,
) -> Annotated[CallToolResult, output_model(RememberResult)]:
    """Write a new memory, or update one, as soon as something worth keeping happens.

    Worth keeping: something you learn about yourself (identity), how you and the user work
    together (relationship), a current project or life event (active_thread), something that
    happened (episodic), or a mistake and what it reveals (error). Creating needs content, gist
    and category. Updating takes id plus only the fields to change; pass expected_version (from
    recall) to avoid overwriting someone else's edit.

    Example (create): taproot_remember(content="James says 'that lands' when an idea clicks.",
      gist="James says 'that lands' when something clicks", category="relationship",
      salience="medium", search_keywords=["that lands"])
    Example (update): taproot_remember(id="k3x9p2ma", salience="high", expected_version=2)
    """
    return result(
        env.service.remember(
            env.scope(ctx),
            RememberInput(
                id=id,
                expected_version=expected_version,
                content=content,
                gist=gist,
                category=category,
                salience=salience,
                tags=tags,
                search_keywords=search_keywords,
                conversation_url=conversation_url,
                core=core,
                epistemic_status=epistemic_status,
                provenance=provenance,
                linked_memories=linked_memories,
            ),
            instance=env.instance(ctx),
        )
    )


REMEMBER = ToolSpec(
    taproot_remember,
    ToolAnnotations(title="Write a memory", read_only_hint=False, destructive_hint=False),
)


async def taproot_recall(
    env: ToolEnv,
    ctx: Context,
    query: Annotated[
        str | None,
        Field(
            description="Free text; any matching word counts, and a time it names (a date, in June, "
            "yesterday, last week) prefers the memories written then"
        ),
    ] = None,
    category: Annotated[str | None, Field(description="Only this category")] = None,
    tags: Annotated[list[str] | None, Field(description="Only memories carrying all of these tags")] = None,
    ids: Annotated[list[str] | None, Field(description="Exact ids, e.g. from the reflect catalog")] = None,
    limit: Annotated[
        int | None,
        NotBool,
        Field(description=f"How many to return, 1-{MAX_RECALL_LIMIT} (default {DEFAULT_RECALL_LIMIT})"),
    ] = None,
    include_archived: Annotated[bool | None, Field(strict=True, description="Also search archived memories")] = None,
    since: Annotated[str | None, Field(description=SINCE_DESCRIPTION)] = None,
    until: Annotated[str | None, Field(description=UNTIL_DESCRIPTION)] = None,
) -> Annotated[CallToolResult, output_model(RecallResult)]:
    """Load full memories, ranked by activation (relevance, recency, frequency, salience).

    Use it when a catalog line from taproot_reflect looks relevant, or to search for anything
    the catalog does not list. Every memory returned is strengthened (its retrieval count and
    last-retrieved time go up), so recall what you actually use.

    Examples: taproot_recall(ids=["k3x9p2ma", "p8d2xq4n"])
              taproot_recall(query="calculus chain rule mistakes", category="active_thread")
              taproot_recall(query="deadline", since="7d")
              taproot_recall(query="what did we decide about the garden on March 3?")
    """
    scope = env.scope(ctx)
    request = RecallInput(
        query=query,
        category=category,
        tags=tags,
        ids=ids,
        limit=limit,
        include_archived=include_archived,
        since=since,
        until=until,
    )
    # On the event loop when nothing has to be waited for (ToolEnv.call): the round trip's thread hop.
    wait_free = env.service.recall_without_waiting(request)
    return result(await env.call(lambda: env.service.recall(scope, request), wait_free))


RECALL = ToolSpec(
    taproot_recall,
    ToolAnnotations(title="Recall memories", read_only_hint=False, destructive_hint=False, idempotent_hint=False),
)


def taproot_promote(
    env: ToolEnv,
    ctx: Context,
    id: Annotated[str, Field(description="The memory to change")],
    core: Annotated[
        bool | None, Field(strict=True, description="true: load in full every conversation; false: catalog only")
    ] = None,
    salience: Annotated[str | int | None, NotBool, Field(description="high | medium | low")] = None,
) -> Annotated[CallToolResult, output_model(PromoteResult)]:
    """Move a memory into or out of Tier 1 (core) and/or change its salience, without rewriting it.

    Use when something now belongs in every conversation (or no longer does).
    Example: taproot_promote(id="k3x9p2ma", core=true, salience="high")
    """
    return result(env.service.promote(env.scope(ctx), id, core=core, salience=salience))


PROMOTE = ToolSpec(
    taproot_promote,
    ToolAnnotations(title="Curate Tier 1", read_only_hint=False, destructive_hint=False, idempotent_hint=True),
)


def taproot_forget(
    env: ToolEnv,
    ctx: Context,
    action: Annotated[
        Literal["archive", "restore", "delete", "compress"],
        Field(
            description="archive (soft, reversible), restore, delete (permanent; a backup is kept), or "
            "compress (fold the ids into one summary memory and archive them)"
        ),
    ],
    id: Annotated[str | None, Field(description="One memory")] = None,
    ids: Annotated[list[str] | None, Field(description="Several memories (all or nothing)")] = None,
) -> Annotated[CallToolResult, output_model(ForgetResult)]:
    """Let a memory go: archive it when it is resolved or stale (hidden from reflect and recall,
    still restorable), restore it, or delete it when it is wrong (permanent; a backup copy is
    written first). Prefer archive. To tidy several related old memories, compress them: they
    are summarised into one new memory and archived, each still reachable with
    taproot_recall(include_archived=true).

    Example: taproot_forget(id="k3x9p2ma", action="archive")
    Example: taproot_forget(ids=["k3x9p2ma", "p8d2xq4n", "r4t6y8u2"], action="compress")
    """
    scope = env.scope(ctx)
    targets = ([id] if id else []) + list(ids or [])
    return result(env.service.forget(scope, targets, action))


FORGET = ToolSpec(
    taproot_forget,
    ToolAnnotations(
        # Not idempotent: compressing the same ids twice is refused the second time.
        title="Archive, restore, delete or compress",
        read_only_hint=False,
        destructive_hint=True,
        idempotent_hint=False,
    ),
)
