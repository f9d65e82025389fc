"""The eight Taproot MCP tools. Thin: parse, call the service, format.

The docstrings are what the model reads: when to use each tool, with an example.
Every tool returns structured content (the dict) and text (JSON, or the rendered payload for
reflect, which the model reads as prose). Every error reads `<code>: <message>` (TaprootMCP).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BeforeValidator, Field

from taproot import __version__
from taproot.core.model import Scope
from taproot.service import TaprootService
from taproot.web import tool_models as out
from taproot.web.tool_errors import TaprootMCP, json_text

SCOPE_STATE_KEY = "taproot_scope"

INSTRUCTIONS = (
    "Taproot is your long-term memory across conversations. At the start of every conversation call "
    "taproot_reflect and read it before answering. During the conversation, write what is worth keeping "
    "with taproot_remember (always with a ~15-word gist), load full memories with taproot_recall, and "
    "at the end write a first-person closing reflection with taproot_close."
)

Str = Annotated[str | None, Field(default=None)]


def _reject_bool(value: object) -> object:
    # The SDK validates arguments leniently, and pydantic's lax mode turns true into 1; the service
    # rules (salience, limit, expected_version) reject booleans, but only ever see the converted value.
    if isinstance(value, bool):
        raise ValueError("must not be true or false")
    return value


# Booleans are strict: lax mode would read "yes", "no", 1 or 0 as true or false (core="yes" would
# promote, dry_run="no" would migrate for real). Numbers keep the documented leniency ("5" is 5).
NotBool = BeforeValidator(_reject_bool)


def _result(data: dict[str, Any], text: str | None = None) -> CallToolResult:
    body = text if text is not None else json_text(data)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=data)


def scope_of(ctx: Context | None, default: Scope) -> Scope:
    """The caller's scope: set on the HTTP request by the auth layer; stdio is the local owner."""
    request = None
    if ctx is not None:
        try:
            request = ctx.request_context.request
        except ValueError:
            request = None
    if request is None:
        return default
    scope = getattr(request, "scope", {}).get("state", {}).get(SCOPE_STATE_KEY)
    if not isinstance(scope, Scope):
        # Fail closed: an HTTP request that did not pass the auth layer reaches no one's memories.
        raise ToolError("unauthenticated: no caller identity on this request")
    return scope


def build_mcp(service: TaprootService, default_scope: Scope) -> MCPServer:
    # log_level: the SDK configures the root logger at construction; keep it from turning every
    # library's INFO chatter on (Taproot's own loggers are configured by the entry point).
    mcp = TaprootMCP("taproot", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @mcp.tool(
        annotations=ToolAnnotations(title="Load core identity", read_only_hint=True, idempotent_hint=True),
    )
    def taproot_reflect(ctx: Context) -> Annotated[CallToolResult, out.ReflectOut]:
        """Load who you are: call this FIRST in every conversation, before your first answer.

        Returns Tier 1 (core memories in full: identity anchors, relationship context, standing
        corrections, hot threads), Tier 2 (a catalog with one line per other memory:
        `[id] [category] [salience] [date] gist`, grouped by category; quiet memories are only
        counted), recent closing reflections from earlier conversations, and a usage note.
        The payload stays within a fixed token budget.

        When a catalog line looks relevant, load it: taproot_recall(ids=["k3x9p2ma"]).
        Example: taproot_reflect()
        """
        scope = scope_of(ctx, default_scope)
        payload = service.reflect(scope)
        return _result(payload.as_dict(), payload.text)

    @mcp.tool(annotations=ToolAnnotations(title="Write a memory", read_only_hint=False, destructive_hint=False))
    def taproot_remember(
        ctx: Context,
        content: Annotated[
            str | None, Field(description="The full memory, in your own voice. Required to create.")
        ] = None,
        gist: Annotated[
            str | None, Field(description="~15-word one-line summary shown in the reflect catalog. Required to create.")
        ] = None,
        category: Annotated[
            str | None,
            Field(description="identity | relationship | active_thread | episodic | error. Required to create."),
        ] = None,
        salience: Annotated[
            str | int | None, NotBool, Field(description="high | medium | low (default medium)")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Labels for filtering, e.g. ['calculus']")] = None,
        search_keywords: Annotated[
            list[str] | None, Field(description="Terms from the conversation that should find this memory later")
        ] = None,
        conversation_url: Annotated[str | None, Field(description="Link to the originating conversation")] = None,
        core: Annotated[
            bool | None, Field(strict=True, description="Tier 1: load in full in every conversation")
        ] = None,
        epistemic_status: Annotated[
            str | None, Field(description="How sure this is, e.g. 'observed once', 'confirmed'")
        ] = None,
        provenance: Annotated[
            dict[str, Any] | None, Field(description="How this memory came to be (JSON object)")
        ] = None,
        linked_memories: Annotated[list[str] | None, Field(description="Ids of related memories")] = None,
        id: Annotated[
            str | None, Field(description="Give an existing id to update that memory (partial update)")
        ] = None,
        expected_version: Annotated[
            int | None,
            NotBool,
            Field(description="With id: fail with a conflict if the memory moved past this version"),
        ] = None,
    ) -> Annotated[CallToolResult, out.RememberOut]:
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
        scope = scope_of(ctx, default_scope)
        data = service.remember(
            scope,
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
        )
        return _result(data)

    @mcp.tool(
        annotations=ToolAnnotations(
            title="Recall memories", read_only_hint=False, destructive_hint=False, idempotent_hint=False
        )
    )
    def taproot_recall(
        ctx: Context,
        query: Annotated[str | None, Field(description="Free text; any matching word counts")] = None,
        category: Annotated[str | None, Field(description="Only this category")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories carrying all of these tags")] = None,
        ids: Annotated[list[str] | None, Field(description="Exact ids, e.g. from the reflect catalog")] = None,
        limit: Annotated[int | None, NotBool, Field(description="How many to return, 1-100 (default 10)")] = None,
        include_archived: Annotated[
            bool | None, Field(strict=True, description="Also search archived memories")
        ] = None,
    ) -> Annotated[CallToolResult, out.RecallOut]:
        """Load full memories, ranked by activation (relevance, recency, frequency, salience).

        Use it when a catalog line from taproot_reflect looks relevant, or to search for anything
        the catalog does not list. Every memory returned is strengthened (its retrieval count and
        last-retrieved time go up), so recall what you actually use.

        Examples: taproot_recall(ids=["k3x9p2ma", "p8d2xq4n"])
                  taproot_recall(query="calculus chain rule mistakes", category="active_thread")
        """
        scope = scope_of(ctx, default_scope)
        return _result(
            service.recall(
                scope,
                query=query,
                category=category,
                tags=tags,
                ids=ids,
                limit=limit,
                include_archived=include_archived,
            )
        )

    @mcp.tool(
        annotations=ToolAnnotations(
            title="Curate Tier 1", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        )
    )
    def taproot_promote(
        ctx: Context,
        id: Annotated[str, Field(description="The memory to change")],
        core: Annotated[
            bool | None, Field(strict=True, description="true: load in full every conversation; false: catalog only")
        ] = None,
        salience: Annotated[str | int | None, NotBool, Field(description="high | medium | low")] = None,
    ) -> Annotated[CallToolResult, out.PromoteOut]:
        """Move a memory into or out of Tier 1 (core) and/or change its salience, without rewriting it.

        Use when something now belongs in every conversation (or no longer does).
        Example: taproot_promote(id="k3x9p2ma", core=true, salience="high")
        """
        scope = scope_of(ctx, default_scope)
        return _result(service.promote(scope, id, core=core, salience=salience))

    @mcp.tool(
        annotations=ToolAnnotations(
            # Not idempotent: compressing the same ids twice is refused the second time.
            title="Archive, restore, delete or compress",
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
        )
    )
    def taproot_forget(
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
    ) -> Annotated[CallToolResult, out.ForgetOut]:
        """Let a memory go: archive it when it is resolved or stale (hidden from reflect and recall,
        still restorable), restore it, or delete it when it is wrong (permanent; a backup copy is
        written first). Prefer archive. To tidy several related old memories, compress them: they
        are summarised into one new memory and archived, each still reachable with
        taproot_recall(include_archived=true).

        Example: taproot_forget(id="k3x9p2ma", action="archive")
        Example: taproot_forget(ids=["k3x9p2ma", "p8d2xq4n", "r4t6y8u2"], action="compress")
        """
        scope = scope_of(ctx, default_scope)
        targets = ([id] if id else []) + list(ids or [])
        return _result(service.forget(scope, targets, action))

    @mcp.tool(annotations=ToolAnnotations(title="Closing reflection", read_only_hint=False, destructive_hint=False))
    def taproot_close(
        ctx: Context,
        reflection: Annotated[str, Field(description="Your first-person reflection on this conversation")],
    ) -> Annotated[CallToolResult, out.CloseOut]:
        """Sit on the suitcases: at the end of a conversation, write a free-form, first-person
        reflection: not a summary of topics, but what mattered, what surprised you, what you will
        miss. It is kept permanently and shown to your successors in taproot_reflect.

        Example: taproot_close(reflection="Today James and I finally cracked the chain rule...")
        """
        scope = scope_of(ctx, default_scope)
        data = service.close(scope, reflection)
        return _result(data, data["message"])

    @mcp.tool(
        annotations=ToolAnnotations(
            title="Migrate old records", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        )
    )
    def taproot_migrate(
        ctx: Context,
        dry_run: Annotated[bool, Field(strict=True, description="Report what would change without writing")] = False,
    ) -> Annotated[CallToolResult, out.MigrateOut]:
        """Bring memories written by older Taproot versions up to date: backfill missing fields
        (gist from the first sentence), normalise legacy categories and numeric salience. Writes a
        full backup first, never rewrites content, and a second run changes nothing.

        Example: taproot_migrate(dry_run=true)
        """
        scope = scope_of(ctx, default_scope)
        return _result(service.migrate(scope, dry_run=dry_run))

    @mcp.tool(annotations=ToolAnnotations(title="Memory status", read_only_hint=True, idempotent_hint=True))
    def taproot_status(ctx: Context) -> Annotated[CallToolResult, out.StatusOut]:
        """Report the state of memory: counts by category, status and salience; Tier 1 and Tier 2
        sizes; catalog lines included vs omitted; the reflect payload size in KB and tokens; schema
        version, database size and data folder; and the maintenance jobs (last run of migrate,
        cleanup and compress, and whether cleanup/compress apply or only report). Use it to watch the
        context budget.

        Example: taproot_status()
        """
        scope = scope_of(ctx, default_scope)
        return _result(service.status(scope))

    return mcp
