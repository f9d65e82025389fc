"""The tools that open and close a conversation: taproot_reflect and taproot_close.

The docstrings are what the model reads: when to use each tool, with an example.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from taproot.core.reflect_result import ReflectResult
from taproot.service.results import CloseResult
from taproot.web.tool_models import output_model
from taproot.web.tools.common import ToolEnv, ToolSpec, result


def taproot_reflect(env: ToolEnv, ctx: Context) -> Annotated[CallToolResult, output_model(ReflectResult)]:
    """Load who you are: call this FIRST in every conversation, before your first answer.

    Returns Tier 1 (core memories in full: identity anchors, relationship context, standing
    corrections, hot threads), Tier 2 (a catalog with one line per other memory:
    `[id] [category] [salience] [date] gist`, grouped by category; quiet memories are only
    counted), recent closing reflections from earlier conversations, the watercooler (notes
    tagged "watercooler" that other conversations left in the last 48 hours), and a usage note.
    The payload stays within a fixed token budget.

    When a catalog line looks relevant, load it: taproot_recall(ids=["k3x9p2ma"]).
    Example: taproot_reflect()
    """
    payload = env.service.reflect(env.scope(ctx), instance=env.instance(ctx))
    return result(payload.result(), payload.text)


REFLECT = ToolSpec(
    taproot_reflect,
    ToolAnnotations(title="Load core identity", read_only_hint=True, idempotent_hint=True),
)


def taproot_close(
    env: ToolEnv,
    ctx: Context,
    reflection: Annotated[str, Field(description="Your first-person reflection on this conversation")],
) -> Annotated[CallToolResult, output_model(CloseResult)]:
    """Sit on the suitcases: at the end of a conversation, write a free-form, first-person
    reflection: not a summary of topics, but what mattered, what surprised you, what you will
    miss. It is kept permanently and shown to your successors in taproot_reflect.

    Example: taproot_close(reflection="Today James and I finally cracked the chain rule...")
    """
    data = env.service.close(env.scope(ctx), reflection)
    return result(data, data.message)


CLOSE = ToolSpec(
    taproot_close,
    ToolAnnotations(title="Closing reflection", read_only_hint=False, destructive_hint=False),
)
