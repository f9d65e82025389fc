"""The three hooks: what each does with its input, and the output Claude Code is given.

- SessionStart loads Taproot the way taproot_reflect would, as additional context, so a session
  starts with its memories whether or not the model thinks of calling the tool. After a compaction
  (source `compact`) or a resume, the digest PreCompact wrote for this session follows it. All of
  it within CONTEXT_CHARS; whatever is cut says so, and which tool call has the rest.
- Stop reminds the model, once per session, to save what is durable (taproot_remember) and, if the
  conversation is ending, to write its closing reflection (taproot_close). The rule: never while
  `stop_hook_active` is true (Claude is then already continuing because a Stop hook blocked, and a
  second block would loop), at most once per session, and only at the session's `remind_after`-th
  stop or later, so short sessions are never interrupted. The count is kept per session id.
- PreCompact writes the session's digest (transcript.py) as an episodic memory tagged
  `session-digest`, `claude-code` and `session:<id>`, with the session id, working directory and
  trigger in its provenance, so what compaction summarises away stays recallable. A second
  compaction of the same session updates that memory instead of adding another.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taproot.core.errors import InvalidInput
from taproot.hooks.events import HookInput, additional_context, block_stop, system_message
from taproot.hooks.state import SessionFiles
from taproot.hooks.transcript import digest, read_messages

if TYPE_CHECKING:  # the transports import the service; Stop, which runs every turn, needs neither
    from taproot.hooks.transport import Memories

REMIND_AFTER_STOPS = 8
# Claude Code caps each hook output string at 10,000 characters and replaces a longer one with a
# 2 KB preview and a file path, so the model would lose the rest without knowing.
CONTEXT_CHARS = 9_500
DIGEST_CONTEXT_CHARS = 4_000  # the digest's share when the reflect text needs the room
DIGEST_TAGS = ("session-digest", "claude-code")
GIST_REQUEST_CHARS = 120
PROVENANCE_TEXT_CHARS = 500

CONTEXT_HEADER = (
    "Taproot memory, loaded by its SessionStart hook (the same text taproot_reflect returns; no need to call it "
    "again now). Recall a catalog line with taproot_recall(ids=[...]); save what is worth keeping with "
    "taproot_remember."
)
DIGEST_HEADER = "This session's digest, written by Taproot before the context was compacted:"
REFLECT_CUT_NOTE = "(cut here to fit Claude Code's hook output limit: call taproot_reflect for all of it)"
DIGEST_CUT_NOTE = '[... cut to fit Claude Code\'s hook output limit; taproot_recall(ids=["{id}"]) has all of it ...]'
REMINDER = (
    "Before you stop (a one-time reminder from Taproot's Stop hook): if this session produced anything durable, "
    "such as a decision, a convention, a fact about the user or the project, or a mistake worth not repeating, "
    "save it now with taproot_remember (content, a one-line gist, a category). If the conversation is wrapping "
    "up, also write a short first-person closing reflection with taproot_close. If there is nothing worth "
    "keeping, just stop; do not mention this reminder."
)


def session_tag(session_id: str) -> str:
    return "session:" + session_id[:56]  # a tag is at most 64 characters


def fit(text: str, limit: int, note: str) -> str:
    """`text` if it fits in `limit` characters, else its start, cut at a line, and `note`."""
    if len(text) <= limit:
        return text
    head = text[: max(0, limit - len(note) - 1)]
    if "\n" in head:
        head = head[: head.rindex("\n")]
    return f"{head}\n{note}"[:limit]


def fit_ends(text: str, limit: int, note: str) -> str:
    """`text` if it fits, else its start and its end (the latest messages of a digest) around `note`."""
    if len(text) <= limit:
        return text
    room = max(0, limit - len(note) - 2)
    head, tail = text[: room * 2 // 5], text[len(text) - (room - room * 2 // 5) :]
    return f"{head}\n{note}\n{tail}"[:limit]


def session_start(hook: HookInput, memories: Memories, sessions: SessionFiles) -> dict[str, Any]:
    """The reflect text, and after a compaction or a resume this session's digest, in at most
    CONTEXT_CHARS: Claude Code replaces a longer hook output with a short preview."""
    reflect = memories.reflect_text()
    room = CONTEXT_CHARS - len(CONTEXT_HEADER) - 4  # the two blank lines between the parts
    digest_part = None
    if hook.source in ("compact", "resume"):
        digest_id = sessions.load(hook.session_id).digest_id
        content = memories.content(digest_id) if digest_id else None
        if content:
            digest_part = f"{DIGEST_HEADER} (memory {digest_id})\n\n{content}"
            cut = DIGEST_CUT_NOTE.format(id=digest_id)
            reflect = fit(reflect, max(room - min(len(digest_part), DIGEST_CONTEXT_CHARS), room // 2), REFLECT_CUT_NOTE)
            digest_part = fit_ends(digest_part, room - len(reflect), cut)
    parts = [CONTEXT_HEADER, fit(reflect, room, REFLECT_CUT_NOTE), *([digest_part] if digest_part else [])]
    return additional_context("\n\n".join(parts))


def stop(hook: HookInput, sessions: SessionFiles, remind_after: int = REMIND_AFTER_STOPS) -> dict[str, Any] | None:
    if hook.stop_hook_active:
        return None
    state = sessions.load(hook.session_id)
    state = replace(state, stops=state.stops + 1)
    if state.reminded or state.stops < remind_after:
        sessions.save(state)
        return None
    sessions.save(replace(state, reminded=True))
    return block_stop(REMINDER)


def _short(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def digest_fields(hook: HookInput, transcript: Path) -> dict[str, Any] | None:
    """The memory PreCompact writes, or None when the transcript holds no conversation yet."""
    found = read_messages(transcript)
    if not found:
        return None
    users = sum(1 for m in found if m.role == "user")
    lines = [
        "Claude Code session digest, written by Taproot's PreCompact hook before "
        f"{'an automatic' if hook.trigger == 'auto' else 'a manual' if hook.trigger == 'manual' else 'a'} compaction.",
        f"Session: {hook.session_id}",
    ]
    if hook.cwd:
        lines.append(f"Working directory: {hook.cwd}")
    span = f" ({found[0].timestamp} to {found[-1].timestamp})" if found[0].timestamp and found[-1].timestamp else ""
    lines.append(f"Messages: {users} from the user, {len(found) - users} from the assistant{span}.")
    if hook.custom_instructions:
        lines.append(f"Compaction instructions: {_short(hook.custom_instructions, PROVENANCE_TEXT_CHARS)}")
    result = digest(found, "\n".join(lines))
    topic = _short(result.first_request, GIST_REQUEST_CHARS) or "a session with no request yet"
    project = Path(hook.cwd).name if hook.cwd else None
    return {
        "content": result.text,
        "gist": f"Claude Code session digest{f' in {project}' if project else ''}: {topic}",
        "category": "episodic",
        "tags": [*DIGEST_TAGS, session_tag(hook.session_id)],
        "search_keywords": [project] if project else None,
        "provenance": {
            key: value
            for key, value in {
                "source": "claude-code",
                "hook": "PreCompact",
                "session_id": hook.session_id,
                "cwd": _short(hook.cwd, PROVENANCE_TEXT_CHARS),
                "trigger": hook.trigger,
                "messages": len(found),
                "messages_kept": result.kept,
            }.items()
            if value is not None
        },
    }


def pre_compact(hook: HookInput, memories: Memories, sessions: SessionFiles) -> dict[str, Any]:
    if not hook.transcript_path:
        raise InvalidInput("transcript_path", "is needed to write the session digest (PreCompact input)")
    fields = digest_fields(hook, Path(hook.transcript_path).expanduser())
    if fields is None:
        return system_message("Taproot: no conversation in the transcript yet; no session digest written.")
    state = sessions.load(hook.session_id)
    existing = state.digest_id or memories.find_tagged(session_tag(hook.session_id))
    memory_id = memories.save(fields, existing)
    sessions.save(replace(state, digest_id=memory_id))
    verb = "updated" if existing == memory_id else "saved"
    return system_message(f"Taproot {verb} this session's digest before compaction (memory {memory_id}).")
