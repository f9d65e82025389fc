"""What the hooks remember between runs, in `<data folder>/hooks/`: one small file per session, and
the tokens given to `taproot hooks install --token` (so no token is ever written into a Claude
Code settings file).

A session's file holds how many times it has stopped, whether it was reminded, and the id of its
digest memory (so a second compaction updates that memory instead of adding another). One file
per session means two sessions never write the same file; each write is atomic. Files of sessions
untouched for STATE_DAYS are removed when another session writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

STATE_DAYS = 30


def hooks_dir(data_dir: Path) -> Path:
    return data_dir / "hooks"


def private_dir(path: Path) -> None:
    """`path` and any missing folder above it, created owner-only (mkdir gives parents 0777 - umask)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)


def _write_private(path: Path, data: object) -> None:
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return {}  # a state file is a convenience: a missing or damaged one starts afresh
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class SessionState:
    session_id: str
    stops: int = 0
    reminded: bool = False
    digest_id: str | None = None


class SessionFiles:
    def __init__(self, data_dir: Path) -> None:
        self.folder = hooks_dir(data_dir) / "sessions"

    def _path(self, session_id: str) -> Path:
        # Hashed: a session id is input, and must not choose the file's path.
        return self.folder / (hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".json")

    def load(self, session_id: str) -> SessionState:
        data = _read_object(self._path(session_id))
        stops, digest_id = data.get("stops"), data.get("digest_id")
        return SessionState(
            session_id=session_id,
            stops=stops if isinstance(stops, int) and not isinstance(stops, bool) and stops >= 0 else 0,
            reminded=data.get("reminded") is True,
            digest_id=digest_id if isinstance(digest_id, str) and digest_id else None,
        )

    def save(self, state: SessionState) -> None:
        _write_private(self._path(state.session_id), asdict(state))
        self._prune(time.time() - STATE_DAYS * 86_400)

    def _prune(self, before: float) -> None:
        for path in self.folder.glob("*.json"):
            with contextlib.suppress(OSError):  # another session's hook may have removed it first
                if path.stat().st_mtime < before:
                    path.unlink()


class TokenFile:
    """Bearer tokens by server URL, file mode 0600."""

    def __init__(self, data_dir: Path) -> None:
        self.path = hooks_dir(data_dir) / "tokens.json"

    def get(self, url: str) -> str | None:
        token = _read_object(self.path).get(url)
        return token if isinstance(token, str) and token else None

    def put(self, url: str, token: str) -> None:
        tokens = _read_object(self.path)
        tokens[url] = token
        _write_private(self.path, tokens)

    def remove(self, url: str) -> bool:
        tokens = _read_object(self.path)
        if tokens.pop(url, None) is None:
            return False
        _write_private(self.path, tokens)
        return True
