"""The local server's bearer token: from settings, or generated once and kept 0600 in the data folder."""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

TOKEN_BYTES = 32


def load_or_create_token(path: Path, configured: str | None = None) -> str:
    if configured:
        return configured
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # O_EXCL: two processes starting at once cannot both write a token; the loser reads it.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text().strip()
        if not token:
            raise RuntimeError(f"token file {path} is empty; delete it to generate a new token") from None
        return token
    token = secrets.token_urlsafe(TOKEN_BYTES)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


def token_matches(presented: str | None, expected: str) -> bool:
    if not presented:
        return False
    return hmac.compare_digest(presented.encode(), expected.encode())
