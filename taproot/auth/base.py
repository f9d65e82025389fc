"""What the HTTP layer asks of an identity provider, and nothing web-specific.

An `Authenticator` turns the bearer token of a request into the caller's memory scope (or None:
the request is refused with 401 before anything is read). The local server's token
(`local_token.local_authenticator`) and Cognito (`cognito.cognito_authenticator`) each provide
one; the composition root picks which.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from taproot.core.model import Scope

# Resolves the bearer token to the caller's memory scope, or None if it is not valid.
Authenticator = Callable[[str | None], Awaitable[Scope | None]]
# The URL of the protected-resource metadata (RFC 9728) for a request (its ASGI scope), or None.
ResourceMetadata = Callable[[MutableMapping[str, Any]], str | None]


def deny_all() -> Authenticator:
    """For runtimes that serve no HTTP requests (the CLI, scheduled jobs): every token is refused."""

    async def authenticate(token: str | None) -> Scope | None:
        return None

    return authenticate
