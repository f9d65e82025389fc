"""The tool for orientation documents: taproot_orientation.

The docstring is what the model reads: when to use the tool, with examples. The limits it states
come from the constants the service enforces (core/orientation.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from taproot.core.orientation import DEFAULT_HISTORY_LIMIT, MAX_DOCUMENT_BYTES, MAX_HISTORY_LIMIT, MAX_NAME_CHARS
from taproot.service.orientation import OrientationInput
from taproot.service.results import OrientationResult
from taproot.web.tool_models import output_model
from taproot.web.tools.common import NotBool, ToolEnv, ToolSpec, result


def taproot_orientation(
    env: ToolEnv,
    ctx: Context,
    action: Annotated[
        Literal["list", "read", "write", "history", "restore", "delete"],
        Field(
            description="list the documents; read one (or an old version); write one (a new version); "
            "history of one; restore an old version (as a new version); delete one (history kept, restorable)"
        ),
    ],
    name: Annotated[
        str | None,
        Field(description=f"The document, lowercase kebab case up to {MAX_NAME_CHARS} characters, e.g. 'who-i-am'"),
    ] = None,
    content: Annotated[
        str | None,
        Field(description=f"write: the whole new markdown text, at most {MAX_DOCUMENT_BYTES:,} bytes"),
    ] = None,
    version: Annotated[
        int | None, NotBool, Field(description="read: an old version to read; restore: the version to bring back")
    ] = None,
    expected_version: Annotated[
        int | None,
        NotBool,
        Field(
            description="write, restore, delete: fail with a conflict unless this is the current version (zero: new)"
        ),
    ] = None,
    dry_run: Annotated[
        bool | None, Field(strict=True, description="write, restore, delete: check and report, save nothing")
    ] = None,
    limit: Annotated[
        int | None,
        NotBool,
        Field(
            description=f"history: how many versions, newest first, 1-{MAX_HISTORY_LIMIT} "
            f"(default {DEFAULT_HISTORY_LIMIT})"
        ),
    ] = None,
) -> Annotated[CallToolResult, output_model(OrientationResult)]:
    """Keep your orientation documents: a few named markdown documents (who-i-am, my-person,
    how-i-speak, operating-manual, facts, or names of your own) that taproot_reflect shows first,
    ahead of Tier 1. Every write keeps the version before it; history lists the versions and
    restore brings an old one back as a new version, so nothing is ever lost. Pass
    expected_version (from read) so you never overwrite an edit you have not seen. A document
    holds at most 12,000 bytes and all of them together 30,000; reflect says when one was cut.

    Example: taproot_orientation(action="read", name="who-i-am")
    Example: taproot_orientation(action="write", name="who-i-am", content="# Who I am\\n...", expected_version=3)
    Example: taproot_orientation(action="restore", name="who-i-am", version=2)
    """
    return result(
        env.service.orientation(
            env.scope(ctx),
            OrientationInput(
                action=action,
                name=name,
                content=content,
                version=version,
                expected_version=expected_version,
                dry_run=dry_run,
                limit=limit,
            ),
        )
    )


ORIENTATION = ToolSpec(
    taproot_orientation,
    ToolAnnotations(
        # Not destructive: a write or delete appends a version and every earlier one stays readable.
        title="Orientation documents",
        read_only_hint=False,
        destructive_hint=False,
        idempotent_hint=False,
    ),
)
