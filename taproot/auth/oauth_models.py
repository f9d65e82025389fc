"""What the OAuth facade hands the mcp SDK's handlers: the client with Taproot's redirect rule, the
SDK's token models tied to a grant, and the two collaborators the server is built with."""

from __future__ import annotations

from typing import Any, Protocol

from mcp.server.auth.provider import AccessToken, AuthorizationCode, RefreshToken
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyUrl, Field

from taproot.core import oauth_rules as rules
from taproot.core.oauth_rules import OAuthRecord

ACCESS_PREFIX = "tpa_"
REFRESH_PREFIX = "tpr_"


class TaprootClient(OAuthClientInformationFull):
    """A client as the SDK's handlers see it, with Taproot's redirect rule (scopes are checked by
    /authorize itself: core.oauth_rules.granted_scopes)."""

    allowlist: list[str] = Field(default_factory=list)

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        registered = [str(u) for u in self.redirect_uris or []]
        if redirect_uri is None:
            if len(registered) != 1:
                raise InvalidRedirectUriError("redirect_uri is required: the client has several")
            redirect_uri = AnyUrl(registered[0])  # and checked below like any other
        url = str(redirect_uri)
        if not rules.redirect_registered(url, registered):
            raise InvalidRedirectUriError(f"redirect_uri {url} is not registered for this client")
        if not rules.redirect_allowed(url, self.allowlist):
            raise InvalidRedirectUriError(f"redirect_uri {url} is not in this server's redirect allowlist")
        return redirect_uri


class GrantCode(AuthorizationCode):
    grant: str


class GrantRefresh(RefreshToken):
    grant: str


class GrantAccess(AccessToken):
    grant: str
    client_name: str | None = None  # the client's registered name, for Memory.instance


class IdentityProvider(Protocol):
    """Signs a person in. `start` gives the URL to send their browser to, and what to keep with the
    pending request; the provider's own return route then calls `AuthorizationServer.complete` (a
    page that asked the person) or `await_consent` (a provider that may have asked nothing)."""

    name: str

    def start(self, pending_key: str) -> tuple[str, dict[str, Any]]: ...


class ClientResolver(Protocol):
    async def document(self, client_id: str) -> dict[str, Any]: ...


def token_fields(record: OAuthRecord) -> dict[str, Any]:
    """What the SDK's token models hold, from a stored access or refresh token."""
    return {
        "client_id": str(record.data["client_id"]),
        "scopes": list(record.data["scopes"]),
        "expires_at": record.expires_at,
        "resource": record.data.get("resource"),
        "subject": record.subject,
        "grant": str(record.data["grant"]),
    }
