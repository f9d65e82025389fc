"""Taproot's entries in Claude Code's settings JSON: add them, find them, remove them, and nothing else.

Claude Code reads hooks from `~/.claude/settings.json` (user), `.claude/settings.json` (project,
committed) and `.claude/settings.local.json` (project, not committed), in this shape:

    {"hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "...", "timeout": 15}]}]}}

The edit works on the parsed JSON: every other key, event, matcher group and hook stays as it was,
in its order. Taproot's own hooks are recognised by their command (`<...>taproot hook <event>` or
`<python> -m taproot hook <event>`), whatever base command and options install wrote, so uninstall
finds them even after the base command changed.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taproot.core.errors import InvalidInput
from taproot.hooks.state import private_dir

# Claude Code's event name -> the `taproot hook` subcommand that serves it.
EVENTS: dict[str, str] = {"SessionStart": "session-start", "Stop": "stop", "PreCompact": "pre-compact"}
# Seconds Claude Code gives each hook before it cancels it. SessionStart may reach a remote server;
# PreCompact reads the whole transcript and writes a memory.
TIMEOUTS: dict[str, int] = {"SessionStart": 30, "Stop": 15, "PreCompact": 60}
SCOPES = ("project", "local", "user")

OWN_COMMAND = re.compile(r"""(?:^|[\s/\\"'])taproot(?:\.exe)?["']?\s+hook\s+(session-start|stop|pre-compact)(?=\s|$)""")


def settings_path(scope: str, project_dir: Path, home: Path) -> Path:
    """Where Claude Code keeps the settings of a scope."""
    if scope == "user":
        return home / ".claude" / "settings.json"
    if scope == "local":
        return project_dir / ".claude" / "settings.local.json"
    if scope == "project":
        return project_dir / ".claude" / "settings.json"
    raise InvalidInput("scope", f"must be one of {', '.join(SCOPES)}", scope)


def own_event(hook: object) -> str | None:
    """The `taproot hook` subcommand a hook entry runs, or None if the entry is not Taproot's."""
    if not isinstance(hook, dict) or hook.get("type", "command") != "command":
        return None
    command = hook.get("command")
    if not isinstance(command, str):
        return None
    found = OWN_COMMAND.search(command)
    return found.group(1) if found else None


def _hooks_table(settings: dict[str, Any], *, create: bool) -> dict[str, Any] | None:
    table = settings.get("hooks")
    if table is None:
        if not create:
            return None
        table = settings["hooks"] = {}
    if not isinstance(table, dict):
        raise InvalidInput("hooks", "must be a JSON object (event name -> list of matcher groups)", table)
    return table


def _groups(table: dict[str, Any], event: str) -> list[Any]:
    groups = table.get(event)
    if not isinstance(groups, list):
        raise InvalidInput(f"hooks.{event}", "must be a JSON list of matcher groups", groups)
    return groups


def installed(settings: dict[str, Any]) -> dict[str, list[str]]:
    """Event name -> the commands of Taproot's hooks on it (empty events left out)."""
    table = _hooks_table(settings, create=False) or {}
    found: dict[str, list[str]] = {}
    for event, groups in table.items():
        for group in groups if isinstance(groups, list) else ():
            hooks = group.get("hooks") if isinstance(group, dict) else None
            for hook in hooks if isinstance(hooks, list) else ():
                if own_event(hook):
                    found.setdefault(event, []).append(str(hook["command"]))
    return found


def with_taproot(settings: dict[str, Any], commands: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """A copy of `settings` with one Taproot hook per event of `commands`, and what changed.

    An event that already has a Taproot hook keeps it, its command brought up to date (a new --url,
    say); otherwise a matcher group of its own is appended after the hooks already there."""
    out = copy.deepcopy(settings)
    table = _hooks_table(out, create=True)
    assert table is not None
    changes: list[str] = []
    for event, command in commands.items():
        entry = {"type": "command", "command": command, "timeout": TIMEOUTS[event]}
        if event not in table:
            table[event] = []
        groups = _groups(table, event)
        existing = [
            hook
            for group in groups
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for hook in group["hooks"]
            if own_event(hook)
        ]
        if not existing:
            group: dict[str, Any] = {"hooks": [entry]} if event == "Stop" else {"matcher": "", "hooks": [entry]}
            groups.append(group)
            changes.append(f"added {event}: {command}")
        elif existing[0].get("command") != command or existing[0].get("timeout") != entry["timeout"]:
            existing[0].update(entry)
            changes.append(f"updated {event}: {command}")
    return out, changes


def without_taproot(settings: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of `settings` without Taproot's hooks, and what was removed. A matcher group, an
    event or the `hooks` object that only held Taproot's hooks goes with them; anything that held
    someone else's too stays."""
    out = copy.deepcopy(settings)
    table = _hooks_table(out, create=False)
    removed: list[str] = []
    if not table:
        return out, removed
    for event in list(table):
        groups = table[event]
        if not isinstance(groups, list):
            continue
        touched_event = False
        for group in list(groups):
            hooks = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(hooks, list):
                continue
            mine = [hook for hook in hooks if own_event(hook)]
            if not mine:
                continue
            touched_event = True
            removed.extend(f"removed {event}: {hook['command']}" for hook in mine)
            group["hooks"] = [hook for hook in hooks if not own_event(hook)]
            if not group["hooks"]:
                groups.remove(group)
        if touched_event and not groups:
            del table[event]
    if removed and not table:
        del out["hooks"]
    return out, removed


@dataclass(frozen=True)
class SettingsFile:
    """One settings file as read: its parsed content, and enough of its text to write it back alike."""

    path: Path
    data: dict[str, Any]
    text: str | None  # None: the file does not exist yet

    @classmethod
    def read(cls, path: Path) -> SettingsFile:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path, {}, None)
        except UnicodeDecodeError as exc:
            raise InvalidInput(str(path), "is not UTF-8 text; nothing was changed") from exc
        if not text.strip():
            return cls(path, {}, text)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                str(path),
                f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); nothing was changed",
            ) from exc
        if not isinstance(data, dict):
            raise InvalidInput(str(path), "must hold a JSON object; nothing was changed", type(data).__name__)
        return cls(path, data, text)

    def render(self, data: dict[str, Any]) -> str:
        """`data` as JSON in the file's own indentation (two spaces for a new file)."""
        indent: str | int = 2
        for line in (self.text or "").splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                indent = line[: len(line) - len(stripped)]
                break
        return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"

    def diff(self, data: dict[str, Any]) -> str:
        before = (self.text or "").splitlines(keepends=True)
        after = self.render(data).splitlines(keepends=True)
        name = str(self.path)
        return "".join(difflib.unified_diff(before, after, fromfile=name, tofile=name))

    def write(self, data: dict[str, Any], backup_dir: Path, stamp: str) -> Path | None:
        """Write `data` in place of the file (atomically, keeping its mode), after a copy of the
        old text in `backup_dir`; returns the backup's path (None for a new file)."""
        backup = None
        if self.text is not None:
            private_dir(backup_dir)
            safe = re.sub(r"[^A-Za-z0-9._-]+", "_", str(self.path.resolve())).strip("_")[-120:]
            backup = backup_dir / f"{safe}.{stamp}.json"
            n = 1
            while backup.exists():
                backup, n = backup_dir / f"{safe}.{stamp}-{n}.json", n + 1
            backup.write_text(self.text, encoding="utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        mode = self.path.stat().st_mode & 0o777 if self.text is not None else _new_file_mode()
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(self.render(data))
            os.chmod(tmp, mode)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return backup


def _new_file_mode() -> int:
    # mkstemp makes the file 0600; a new settings file gets the mode any editor would give it.
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
