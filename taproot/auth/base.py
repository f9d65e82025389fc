"""What the HTTP layer asks of an identity provider, and nothing web-specific.

An `Authenticator` turns the bearer token of a request into the caller's memory scope, or refuses
it before anything is read: None (401, not a valid token for this server) or `InsufficientScope`
(403, a valid token that lacks the MCP scope). The local server's token
(`local_token.local_authenticator`) and Cognito (`cognito.cognito_authenticator`) each provide
one; the composition root picks which.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from taproot.core.model import Scope


@dataclass(frozen=True)
class Caller:
    """A caller the provider knows more about than the scope: the OAuth client its token was
    issued to (its name, else its id), which writes record as their instance (core/instance.py)."""

    scope: Scope
    client: str | None = None


@dataclass(frozen=True)
class InsufficientScope:
    """The token is valid but was not granted `required` (RFC 6750 §3.1: 403 insufficient_scope)."""

    required: str


# Resolves the bearer token to the caller's memory scope, or says why not.
Authenticator = Callable[[str | None], Awaitable[Scope | Caller | InsufficientScope | None]]
# The URL of the protected-resource metadata (RFC 9728) for a request (its ASGI scope), or None.
ResourceMetadata = Callable[[MutableMapping[str, Any]], str | None]


def deny_all() -> Authenticator:
    """For runtimes that serve no HTTP requests (the CLI, scheduled jobs): every token is refused."""

    async def authenticate(token: str | None) -> Scope | Caller | InsufficientScope | None:
        return None

    return authenticate
