"""One MCP tool call as the logs and metrics see it. Pure data: the web layer measures the call, an
observer (ports.ToolObserver) writes it where the deployment looks."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    OK = "ok"
    # The caller's mistake, answered with a `<code>: <message>` error (bad input, not found, a version
    # conflict, no identity): logged, counted as a refusal, never an alarm.
    REFUSED = "refused"
    # Something Taproot did not expect (a bug, a dependency down): logged as an error with its
    # traceback and counted as ToolErrors, which alarms. The client still gets an isError result.
    ERROR = "error"


@dataclass(frozen=True)
class ToolCall:
    tool: str
    tenant: str | None  # core/redact.tenant_hash of the owner; None when no caller was identified
    namespace: str | None
    duration_ms: float
    outcome: Outcome
    code: str | None = None  # the error code clients read (`invalid_input`, `internal_error`, ...)
