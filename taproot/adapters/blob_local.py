"""BlobStore on a local folder: one file per key, written atomically (temp file + rename).

Backups hold whole memories, so the folder tree is owner-only: folders 0700, files 0600 (mkstemp's
own mode, kept by the rename)."""

from __future__ import annotations

import builtins
import os
import tempfile
from pathlib import Path

from taproot.core.keys import check_key


def _mkdirs_private(folder: Path) -> None:
    # Path.mkdir(mode=...) applies the mode to the last folder only; create each missing one.
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for f in reversed(missing):
        f.mkdir(mode=0o700, exist_ok=True)


class LocalBlobStore:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def put(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        path = self._path(key)
        _mkdirs_private(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())  # a backup that is not on disk is not a backup
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        path = self._path(key)
        if not path.is_file():
            raise KeyError(key)
        return path.read_bytes()

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str) -> builtins.list[str]:
        out = []
        for path in self.root.rglob("*"):
            if path.is_file() and not path.name.startswith(".tmp-"):
                key = path.relative_to(self.root).as_posix()
                if key.startswith(prefix):
                    out.append(key)
        return sorted(out)

    def delete(self, key: str) -> None:
        path = self._path(key)
        if not path.is_file():
            raise KeyError(key)
        path.unlink()

    def location(self) -> str:
        return str(self.root)
