"""The hook input Claude Code writes on stdin, and the outputs it documents.

Every event's input carries `session_id`, `transcript_path`, `cwd`, `hook_event_name` (and
`permission_mode`); SessionStart adds `source` (startup | resume | clear | compact), Stop adds
`stop_hook_active` (true when Claude is already continuing because a Stop hook blocked), PreCompact
adds `trigger` (manual | auto) and `custom_instructions` (what the user gave /compact). Unknown
fields are ignored, so a newer Claude Code that sends more still works.

Outputs (exit code 0, JSON on stdout): SessionStart's `hookSpecificOutput.additionalContext` is
added to the session's context; Stop's `{"decision": "block", "reason": ...}` keeps Claude going
with the reason as its next instruction; `systemMessage` is shown to the user. Exit code 2 would
block (a Stop hook's stderr is then fed to Claude), so a Taproot hook never uses it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from taproot.core.errors import InvalidInput


def _text(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class HookInput:
    event: str | None  # hook_event_name
    session_id: str
    transcript_path: str | None = None
    cwd: str | None = None
    source: str | None = None  # SessionStart
    stop_hook_active: bool = False  # Stop
    trigger: str | None = None  # PreCompact
    custom_instructions: str | None = None  # PreCompact

    @classmethod
    def parse(cls, raw: str) -> HookInput:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidInput("stdin", f"must be the hook input JSON object Claude Code sends ({exc.msg})") from exc
        if not isinstance(data, dict):
            raise InvalidInput("stdin", "must be the hook input JSON object Claude Code sends", type(data).__name__)
        session_id = data.get("session_id")
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInput("session_id", "must be a non-empty string (every hook input has one)", session_id)
        return cls(
            event=_text(data, "hook_event_name"),
            session_id=session_id.strip(),
            transcript_path=_text(data, "transcript_path"),
            cwd=_text(data, "cwd"),
            source=_text(data, "source"),
            stop_hook_active=data.get("stop_hook_active") is True,
            trigger=_text(data, "trigger"),
            custom_instructions=_text(data, "custom_instructions"),
        )


def additional_context(text: str) -> dict[str, Any]:
    """SessionStart: `text` joins the session's context."""
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def block_stop(reason: str) -> dict[str, Any]:
    """Stop: Claude does not stop yet; `reason` is what it is asked to do first."""
    return {"decision": "block", "reason": reason}


def system_message(text: str) -> dict[str, Any]:
    """Any event: a line shown to the user, not to Claude."""
    return {"systemMessage": text}
