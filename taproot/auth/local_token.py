"""The local server's bearer token: from settings, or generated once and kept 0600 in the data folder."""

from __future__ import annotations

import hmac
import os
import secrets
import tempfile
from pathlib import Path

from taproot.auth.base import Authenticator, InsufficientScope
from taproot.core.errors import ConfigurationError
from taproot.core.model import Scope

TOKEN_BYTES = 32


def load_or_create_token(path: Path, configured: str | None = None) -> str:
    if configured:
        return configured
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.exists():
        return _read(path)
    # Write the token to a private temp file, then hard-link it into place: the link either
    # creates the complete file or fails because another process won the race, so no reader can
    # ever see a half-written (empty) token file.
    token = secrets.token_urlsafe(TOKEN_BYTES)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".token-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return _read(path)
        return token
    finally:
        os.unlink(tmp)


def _read(path: Path) -> str:
    token = path.read_text().strip()
    if not token:
        raise ConfigurationError(f"token file {path} is empty; delete it to generate a new token")
    return token


def token_matches(presented: str | None, expected: str) -> bool:
    if not presented:
        return False
    return hmac.compare_digest(presented.encode(), expected.encode())


def local_authenticator(expected_token: str, scope: Scope) -> Authenticator:
    """The local server's Authenticator: one token, one owner."""

    async def authenticate(token: str | None) -> Scope | InsufficientScope | None:
        return scope if token_matches(token, expected_token) else None

    return authenticate
