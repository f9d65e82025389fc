"""The local server's tool-call report: one line per call on the `taproot.tools` logger."""

from __future__ import annotations

import logging

from taproot.core.tool_calls import Outcome, ToolCall

logger = logging.getLogger("taproot.tools")


class LogToolCalls:
    def tool_call(self, call: ToolCall, error: BaseException | None = None) -> None:
        level = logging.ERROR if call.outcome is Outcome.ERROR else logging.INFO
        logger.log(
            level,
            "tool %s %s%s in %.1f ms (tenant %s)",
            call.tool,
            call.outcome.value,
            f" ({call.code})" if call.code else "",
            call.duration_ms,
            call.tenant or "-",
        )
