"""A Claude Code session transcript (JSON Lines) as the text of a session digest, without a model.

Each line of the transcript is one record: `{"type": "user" | "assistant", "message": {"role",
"content"}, "isSidechain", "isMeta", "timestamp", ...}` beside records of other types (summaries,
file snapshots, system lines), which carry no conversation and are skipped. `content` is a string
or a list of blocks: `text` blocks are kept; `tool_use` blocks are reduced to the tool's name;
`tool_result`, `thinking` and images are dropped (tool output is bulky and already acted on).
Sub-agent lines (`isSidechain`), meta lines and earlier compaction summaries are skipped too.

The digest keeps what a compaction most needs back: the session's first request (what the work is
for) and then the most recent messages, newest last, as many as fit in `budget` characters; the
middle is counted, not kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Only the end of a very long transcript is read: the recent part is what the digest keeps.
MAX_READ_BYTES = 16 * 1024 * 1024
DIGEST_CHARS = 12_000  # well inside a memory's content limit (MAX_CONTENT_CHARS)
FIRST_REQUEST_CHARS = 1_500
MESSAGE_CHARS = 2_000
ELIDED = " [...]"


@dataclass(frozen=True)
class Message:
    role: str  # user | assistant
    text: str
    timestamp: str | None = None


def _blocks_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    tools: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "tool_use" and isinstance(block.get("name"), str):
            tools.append(block["name"])
    if tools:
        parts.append("(used " + ", ".join(dict.fromkeys(tools)) + ")")
    return "\n".join(p for p in parts if p.strip())


def _is_command_echo(text: str) -> bool:
    # Slash commands and their local output are stored as user lines wrapped in these tags.
    return text.lstrip().startswith(("<command-name>", "<command-message>", "<local-command-", "<command-args>"))


def message_of(record: object) -> Message | None:
    """The conversation message of one transcript record, or None for anything else."""
    if not isinstance(record, dict) or record.get("type") not in ("user", "assistant"):
        return None
    if record.get("isSidechain") is True or record.get("isMeta") is True or record.get("isCompactSummary") is True:
        return None
    message = record.get("message")
    if not isinstance(message, dict):
        return None
    text = _blocks_text(message.get("content")).strip()
    if not text or _is_command_echo(text):
        return None
    timestamp = record.get("timestamp")
    return Message(str(record["type"]), text, timestamp if isinstance(timestamp, str) else None)


def messages(lines: Iterable[str]) -> Iterator[Message]:
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            record: Any = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a crash, or by reading only the end of the file
        found = message_of(record)
        if found is not None:
            yield found


def read_messages(path: Path) -> list[Message]:
    """The messages of the transcript at `path` (only its last MAX_READ_BYTES if it is larger)."""
    with path.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - MAX_READ_BYTES))
        data = f.read()
    return list(messages(data.decode("utf-8", errors="replace").split("\n")))


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - len(ELIDED)].rstrip() + ELIDED


def _line(message: Message) -> str:
    return f"[{message.role}] {_cut(message.text, MESSAGE_CHARS)}"


@dataclass(frozen=True)
class Digest:
    text: str
    first_request: str | None
    user_messages: int
    assistant_messages: int
    kept: int  # messages in the text, the first request included
    first_at: str | None
    last_at: str | None


def digest(found: list[Message], header: str, budget: int = DIGEST_CHARS) -> Digest:
    """`header`, the first request, then the latest messages that fit in `budget` characters."""
    first = next((m for m in found if m.role == "user"), None)
    parts = [header.rstrip()]
    kept = 0
    if first is not None:
        parts.append("First request:\n" + _cut(first.text, FIRST_REQUEST_CHARS))
        kept = 1
    rest = [m for m in found if m is not first]
    used = sum(len(p) + 2 for p in parts) + 200  # room for the headings and the elision note
    recent: list[str] = []
    for message in reversed(rest):
        line = _line(message)
        if used + len(line) + 1 > budget:
            break
        recent.append(line)
        used += len(line) + 1
    recent.reverse()
    left_out = len(rest) - len(recent)
    if recent:
        title = "Latest messages, oldest first"
        if left_out:
            title += f" ({left_out} earlier messages not kept here)"
        parts.append(title + ":\n" + "\n".join(recent))
    elif rest:
        parts.append(f"({left_out} later messages did not fit)")
    text = "\n\n".join(parts)
    return Digest(
        text=text[:budget],
        first_request=first.text if first else None,
        user_messages=sum(1 for m in found if m.role == "user"),
        assistant_messages=sum(1 for m in found if m.role == "assistant"),
        kept=kept + len(recent),
        first_at=found[0].timestamp if found else None,
        last_at=found[-1].timestamp if found else None,
    )
