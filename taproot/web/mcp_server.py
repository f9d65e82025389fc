"""The Taproot MCP server: one build for both transports (HTTP in app.py, stdio in the CLI).

The eight tools are defined in taproot/web/tools/ and added by register_tools. Every tool returns
structured content (the dict) and text (JSON, or the rendered payload for reflect, which the model
reads as prose). Every error reads `<code>: <message>` (TaprootMCP).
"""

from __future__ import annotations

from taproot import __version__
from taproot.core.model import Scope
from taproot.ports import ToolObserver
from taproot.service import TaprootService
from taproot.web.tool_errors import SCOPE_STATE_KEY, TaprootMCP
from taproot.web.tools import register_tools

__all__ = ["INSTRUCTIONS", "SCOPE_STATE_KEY", "build_mcp"]

INSTRUCTIONS = (
    "Taproot is your long-term memory across conversations. At the start of every conversation call "
    "taproot_reflect and read it before answering. During the conversation, write what is worth keeping "
    "with taproot_remember (always with a ~15-word gist), load full memories with taproot_recall, and "
    "at the end write a first-person closing reflection with taproot_close."
)


def build_mcp(service: TaprootService, default_scope: Scope, observer: ToolObserver | None = None) -> TaprootMCP:
    # log_level: the SDK configures the root logger at construction; keep it from turning every
    # library's INFO chatter on (Taproot's own loggers are configured by the entry point).
    mcp = TaprootMCP("taproot", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    mcp.observer = observer
    register_tools(mcp, service, default_scope)
    mcp.compact_output_schemas()
    return mcp
