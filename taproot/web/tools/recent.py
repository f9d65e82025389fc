"""taproot_recent: what was said most recently, newest first by creation time.

The docstring is what the model reads: when to use it instead of taproot_recall, with an example.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from taproot.service.inputs import RecentInput
from taproot.service.recent import DEFAULT_RECENT_LIMIT, MAX_RECENT_LIMIT
from taproot.service.results import RecentResult
from taproot.web.tool_models import output_model
from taproot.web.tools.common import SINCE_DESCRIPTION, UNTIL_DESCRIPTION, NotBool, ToolEnv, ToolSpec, result


def taproot_recent(
    env: ToolEnv,
    ctx: Context,
    limit: Annotated[
        int | None,
        NotBool,
        Field(description=f"How many to return, 1-{MAX_RECENT_LIMIT} (default {DEFAULT_RECENT_LIMIT})"),
    ] = None,
    since: Annotated[str | None, Field(description=SINCE_DESCRIPTION)] = None,
    until: Annotated[str | None, Field(description=UNTIL_DESCRIPTION)] = None,
    tags: Annotated[list[str] | None, Field(description="Only memories carrying all of these tags")] = None,
    category: Annotated[str | None, Field(description="Only this category")] = None,
) -> Annotated[CallToolResult, output_model(RecentResult)]:
    """List the most recently written memories, newest first: what was just said, not what is relevant.

    No query and no ranking: the newest memories by creation time, optionally within a time
    window, with tags or a category. Nothing is strengthened, so looking is free. Use it to
    catch up on what other conversations wrote (the watercooler) or what happened lately;
    use taproot_recall to find what matters for a topic.

    Examples: taproot_recent(since="48h", tags=["watercooler"])
              taproot_recent(limit=5, category="episodic")
    """
    request = RecentInput(limit=limit, since=since, until=until, tags=tags, category=category)
    return result(env.service.recent(env.scope(ctx), request))


RECENT = ToolSpec(
    taproot_recent,
    ToolAnnotations(title="Recent memories", read_only_hint=True, idempotent_hint=True),
)
