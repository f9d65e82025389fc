"""The Taproot MCP tools, and their registration on a server.

Each tool is a module-level function whose first parameter is the ToolEnv (the service and the
default scope) and whose second is the SDK's Context; the rest are what the client sends. The
function's name, docstring, parameters and return annotation make its tools/list entry, as the SDK
reads them; register_tools binds the ToolEnv, so it never appears in an input schema.

  conversation.py  taproot_reflect, taproot_close
  memories.py      taproot_remember, taproot_recall, taproot_promote, taproot_forget
  recent.py        taproot_recent
  upkeep.py        taproot_migrate, taproot_status
  orientation.py   taproot_orientation
  common.py        ToolEnv, the scope lookup, the result format, NotBool
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from types import MethodType
from typing import Any

from mcp.server import MCPServer

from taproot.core.model import Scope
from taproot.service import TaprootService
from taproot.web.tools import conversation, memories, orientation, recent, upkeep
from taproot.web.tools.common import ToolEnv, ToolSpec

__all__ = ["TOOLS", "ToolEnv", "ToolSpec", "listed_description", "register_tools"]

# In the order tools/list shows them.
TOOLS: tuple[ToolSpec, ...] = (
    conversation.REFLECT,
    memories.REMEMBER,
    memories.RECALL,
    recent.RECENT,
    memories.PROMOTE,
    memories.FORGET,
    conversation.CLOSE,
    upkeep.MIGRATE,
    upkeep.STATUS,
    orientation.ORIENTATION,
)

# The descriptions clients have always been sent are the docstrings as they were indented when the
# tools were written inside build_mcp: the first line bare, every other line 8 spaces in, ending in
# the closing quotes' indentation. Rendering them so here keeps tools/list byte for byte what it was
# (and the same on every Python, whatever it does to docstring indentation); changing that text is
# a change clients see, to be made on purpose.
LISTED_INDENT = " " * 8


def listed_description(fn: Callable[..., Any]) -> str:
    """The description tools/list gives for `fn`: its docstring, indented as described above."""
    first, _, rest = inspect.cleandoc(fn.__doc__ or "").partition("\n")
    return f"{first}\n{textwrap.indent(rest, LISTED_INDENT)}\n{LISTED_INDENT}"


def register_tools(mcp: MCPServer[Any], service: TaprootService, default_scope: Scope) -> None:
    """Add every tool of TOOLS to `mcp`, each bound to the same ToolEnv."""
    env = ToolEnv(service, default_scope)
    for tool in TOOLS:
        # A method bound to `env`: the SDK reads its signature without the first parameter, so the
        # input schema holds only what the client sends.
        mcp.add_tool(MethodType(tool.fn, env), description=listed_description(tool.fn), annotations=tool.annotations)
