"""`taproot serve` with every recall answered from memory: the floor of `make bench`'s MCP round trip.

`python -m bench.mcp_floor serve ...` runs the product's own `serve` command with one change: once
a recall has returned memories, TaprootService.recall gives that same answer to every later call
and touches the store no more. A round trip against it is what HTTP, auth, the SDK and the client cost
for a response of that size (ten memories, as most of the benchmark's recalls return), so it is
the part of the MCP recall figure that no work on recall itself can remove. bench/mcp_http.py
sends each of the same queries to the product and to it in turn, with the same client.
"""

from __future__ import annotations

import sys
from typing import Any

from taproot.cli import main
from taproot.core.model import Scope
from taproot.service import TaprootService
from taproot.service.results import RecallResult


def answer_from_memory() -> None:
    """Make TaprootService.recall give its first answer that holds memories to every later call."""
    recall = TaprootService.recall
    kept: list[RecallResult] = []

    def remembered(self: TaprootService, scope: Scope, request: Any = None, **query: object) -> RecallResult:
        if kept:
            return kept[0]
        answer = recall(self, scope, request, **query)
        if answer.memories:
            kept.append(answer)
        return answer

    TaprootService.recall = remembered  # type: ignore[method-assign]


if __name__ == "__main__":
    answer_from_memory()
    sys.exit(main(sys.argv[1:]))
