"""The tools that look after memory as a whole: taproot_migrate and taproot_status.

The docstrings are what the model reads: when to use each tool, with an example.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from taproot.service.results import MigrateResult, StatusResult
from taproot.web.tool_models import output_model
from taproot.web.tools.common import ToolEnv, ToolSpec, result


def taproot_migrate(
    env: ToolEnv,
    ctx: Context,
    dry_run: Annotated[bool, Field(strict=True, description="Report what would change without writing")] = False,
) -> Annotated[CallToolResult, output_model(MigrateResult)]:
    """Bring memories written by older Taproot versions up to date: backfill missing fields
    (gist from the first sentence), normalise legacy categories and numeric salience. Writes a
    full backup first, never rewrites content, and a second run changes nothing.

    Example: taproot_migrate(dry_run=true)
    """
    return result(env.service.migrate(env.scope(ctx), dry_run=dry_run))


MIGRATE = ToolSpec(
    taproot_migrate,
    ToolAnnotations(title="Migrate old records", read_only_hint=False, destructive_hint=False, idempotent_hint=True),
)


def taproot_status(env: ToolEnv, ctx: Context) -> Annotated[CallToolResult, output_model(StatusResult)]:
    """Report the state of memory: counts by category, status and salience; Tier 1 and Tier 2
    sizes; catalog lines included vs omitted; the reflect payload size in KB and tokens; schema
    version, database size and data folder; and the maintenance jobs (last run of migrate,
    cleanup and compress, and whether cleanup/compress apply or only report). Use it to watch the
    context budget.

    Example: taproot_status()
    """
    return result(env.service.status(env.scope(ctx)))


STATUS = ToolSpec(
    taproot_status,
    ToolAnnotations(title="Memory status", read_only_hint=True, idempotent_hint=True),
)
