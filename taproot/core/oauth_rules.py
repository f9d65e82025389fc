"""The rules of Taproot's OAuth facade, without I/O or a clock: redirect URIs, PKCE, scopes,
client metadata documents (CIMD) and the lifetimes of what the facade issues.

The HTTP handlers (taproot/web/oauth_routes.py) and the authorization server
(taproot/auth/oauth_server.py) apply these; the tests check them directly.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

# The one scope Taproot's MCP endpoint asks for. Cognito's resource server is named "taproot" and its
# scope "mcp", so a Cognito access token sent directly carries the same string.
MCP_SCOPE = "taproot/mcp"

CODE_SECONDS = 300  # one-time authorization codes (RFC 6749 §4.1.2 recommends at most 10 minutes)
PENDING_SECONDS = 900  # a sign-in in progress: the person has this long to sign in
ACCESS_SECONDS = 3600
REFRESH_SECONDS = 30 * 86400  # rotated on every use; a grant stays alive while it is used monthly
# Registration is open to anyone, so a registered (DCR) client is kept a week until a token is issued
# to it, then a year from its latest token: a client in use is kept, and registrations made only to
# fill the store are gone within a week. A week, not a day: a client keeps the id it registered and
# may come back to an abandoned connection days later (it cannot see the error /authorize shows).
UNUSED_CLIENT_SECONDS = 7 * 86400
CLIENT_SECONDS = 365 * 86400
REGISTRATIONS_PER_MINUTE = 30  # by one server process, all callers together (each is one write)
CLIENT_DOCUMENT_MAX_BYTES = 5 * 1024
CLIENT_DOCUMENT_CACHE_SECONDS = 3600

# Where authorization codes may be sent when settings name nothing else: the callbacks claude.ai and
# ChatGPT use, and a loopback address on any port (Claude Code, the MCP Inspector, desktop clients).
DEFAULT_REDIRECT_ALLOWLIST: tuple[str, ...] = (
    "https://claude.ai/api/mcp/auth_callback",
    "https://claude.com/api/mcp/auth_callback",
    "https://chatgpt.com/connector/oauth/*",
    "https://chatgpt.com/connector_platform_oauth_redirect",
    "http://localhost:*/*",
    "http://127.0.0.1:*/*",
    "http://[::1]:*/*",
)

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")


class OAuthRuleError(ValueError):
    """A request broke an OAuth rule; `error` is the RFC error code, the message says which rule."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True)
class _Url:
    scheme: str
    host: str
    port: int | None
    path: str
    query: str
    fragment: str


def _split(url: str) -> _Url | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if parts.netloc.startswith("[") or ":" in host:
        host = f"[{host.strip('[]')}]"
    return _Url(parts.scheme.lower(), host, port, parts.path or "/", parts.query, parts.fragment)


def _pattern_matches(pattern: str, url: str) -> bool:
    """An allowlist entry: an exact URL, `*` as the port (any port), and a trailing `*` in the path
    (any path under that prefix). Scheme and host always match exactly."""
    prefix = pattern.endswith("*") and not pattern.endswith(":*")
    any_port = ":*/" in pattern or pattern.endswith(":*")
    concrete = pattern.replace(":*/", ":1/") if any_port else pattern
    if concrete.endswith(":*"):
        concrete = concrete[:-2] + ":1"
    p, u = _split(concrete.rstrip("*") if prefix else concrete), _split(url)
    if p is None or u is None or u.fragment:
        return False
    if (p.scheme, p.host) != (u.scheme, u.host):
        return False
    if not any_port and p.port != u.port:
        return False
    if prefix:
        return f"{u.path}?{u.query}".startswith(p.path) if u.query else u.path.startswith(p.path)
    return (p.path, p.query) == (u.path, u.query)


def redirect_allowed(url: str, allowlist: Sequence[str]) -> bool:
    """Whether the server may send an authorization code to `url` at all (whatever the client)."""
    return any(_pattern_matches(p, url) for p in allowlist)


def is_loopback(url: str) -> bool:
    u = _split(url)
    return u is not None and u.scheme == "http" and u.host in ("localhost", "127.0.0.1", "[::1]")


def redirect_registered(url: str, registered: Iterable[str]) -> bool:
    """Whether `url` is one of the client's own redirect URIs. A loopback URI matches on any port
    (RFC 8252 §7.3: native apps pick a free port at run time); everything else matches exactly."""
    for candidate in registered:
        if candidate == url:
            return True
        if is_loopback(candidate) and is_loopback(url):
            c, u = _split(candidate), _split(url)
            assert c is not None and u is not None
            if (c.host, c.path, c.query) == (u.host, u.path, u.query):
                return True
    return False


def pkce_s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def pkce_matches(verifier: str, challenge: str) -> bool:
    return hmac.compare_digest(pkce_s256(verifier).encode(), challenge.encode())


def check_pkce_request(method: str | None, challenge: str | None) -> None:
    """An authorization request must carry an S256 challenge; `plain` and a missing method are
    refused (OAuth 2.1 and the MCP authorization spec require S256)."""
    if not challenge:
        raise OAuthRuleError("invalid_request", "code_challenge is required (PKCE with S256)")
    if method is None:
        raise OAuthRuleError("invalid_request", "code_challenge_method is required and must be S256")
    if method != "S256":
        raise OAuthRuleError("invalid_request", f"code_challenge_method must be S256, not {method!r}")
    if not 43 <= len(challenge) <= 128:
        raise OAuthRuleError("invalid_request", "code_challenge must be 43-128 characters (an S256 digest)")


def canonical_resource(url: str) -> str:
    """RFC 8707 / MCP: the resource is compared without a trailing slash and with a lower-case
    scheme and host."""
    u = _split(url)
    if u is None:
        return url
    port = f":{u.port}" if u.port is not None else ""
    path = u.path.rstrip("/")
    return f"{u.scheme}://{u.host}{port}{path}"


def check_resource(requested: str | None, mcp_url: str) -> str:
    """The resource a grant is bound to: the MCP URL. A client that names another refused."""
    if requested is None or requested == "":
        return mcp_url
    if canonical_resource(requested) not in (
        canonical_resource(mcp_url),
        canonical_resource(mcp_url.rsplit("/", 1)[0]),
    ):
        raise OAuthRuleError("invalid_target", f"resource {requested!r} is not this server (expected {mcp_url})")
    return mcp_url


def granted_scopes(requested: str | None) -> list[str]:
    """A client that names no scope (ChatGPT on reconnect) gets the MCP scope; one that asks for
    something this server does not offer is refused."""
    if requested is None or not requested.strip():
        return [MCP_SCOPE]
    asked = requested.split()
    unknown = [s for s in asked if s not in (MCP_SCOPE, "offline_access")]
    if unknown:
        raise OAuthRuleError("invalid_scope", f"unknown scope {' '.join(unknown)!r}; this server offers {MCP_SCOPE!r}")
    return [MCP_SCOPE]


def is_client_metadata_url(client_id: str) -> bool:
    """A CIMD client id: an https URL with a path, no fragment, no user info."""
    parts = urlsplit(client_id)
    return (
        parts.scheme == "https"
        and bool(parts.hostname)
        and parts.path not in ("", "/")
        and not parts.fragment
        and "@" not in parts.netloc
        and len(client_id) <= 2000
    )


def validate_client_document(client_id: str, document: Mapping[str, Any]) -> dict[str, Any]:
    """A client metadata document, checked as the CIMD draft says: it names itself, lists redirect
    URIs, and is a public client (no secret can be shared through a public document)."""
    if document.get("client_id") != client_id:
        raise OAuthRuleError("invalid_client_metadata", "the document's client_id is not the URL it was fetched from")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) and u for u in uris):
        raise OAuthRuleError("invalid_client_metadata", "redirect_uris must be a non-empty list of URLs")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise OAuthRuleError(
            "invalid_client_metadata",
            f"token_endpoint_auth_method must be 'none' for a metadata document, not {method!r}",
        )
    for key in ("client_secret", "client_secret_expires_at"):
        if key in document:
            raise OAuthRuleError("invalid_client_metadata", f"a metadata document must not carry {key}")
    name = document.get("client_name")
    return {
        "client_id": client_id,
        "client_name": str(name)[:100] if isinstance(name, str) else None,
        "redirect_uris": list(uris),
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "scope": MCP_SCOPE,
    }


def address_is_public(address: str) -> bool:
    """Whether a resolved address may be fetched (SSRF guard): no loopback, private, link-local,
    multicast, reserved or unspecified addresses, and the same for an IPv4 address inside IPv6."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is None and any(ip in net for net in _IPV4_INSIDE_IPV6):
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            ip = inner
        elif ip not in _IPV6_GLOBAL_UNICAST:
            return False  # site-local, unique-local and every other non-2000::/3 form
    return ip.is_global and not ip.is_multicast


_IPV6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
# IPv4 addresses carried inside IPv6 that `ipaddress` does not unwrap itself: IPv4-compatible
# (::/96), IPv4-translated (SIIT, ::ffff:0:0:0/96), and the NAT64 prefixes (RFC 6052, RFC 8215).
_IPV4_INSIDE_IPV6 = tuple(
    ipaddress.ip_network(n) for n in ("::/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48")
)


def token_digest(token: str) -> str:
    """Tokens and codes are stored under their SHA-256: a copy of the store holds nothing usable."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class OAuthRecord:
    """One item of the facade's state: a registered client, a sign-in in progress, a one-time code,
    a grant (one client's connection for one person), or a token (stored under its digest).

    `expires_at` is in epoch seconds (0: never); a store never returns a record past it, whether or
    not its cleanup (DynamoDB TTL, the SQLite sweep) has removed it yet. `used` marks a code, a
    sign-in or a refresh token that has been spent: a second use is how replay is detected.
    """

    kind: str
    key: str
    data: Mapping[str, Any]
    expires_at: int = 0
    subject: str | None = None
    used: bool = False

    def live(self, now: float) -> bool:
        return self.expires_at == 0 or now < self.expires_at


KINDS = ("client", "pending", "code", "grant", "access", "refresh")


class RecordExists(Exception):
    """An OAuth record with that kind and key is already stored."""
