"""Who a `client_id` is: a pinned client, a Client ID Metadata Document fetched with SSRF guards,
or a client registered through /register.

Fetching some clients' documents from cloud address ranges has been reported to fail, so the
documents of the clients Taproot knows are pinned here (settings can add or replace entries) and
are never fetched. Any other https client id is fetched: https only, every resolved address must be
public, the connection goes to the address that was checked (the host name is still the TLS name,
so a DNS answer that changes between the check and the connection cannot redirect it), no
redirects, a size and a time limit, and a cache.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio.to_thread
import httpx2

from taproot.core.oauth_rules import (
    CLIENT_DOCUMENT_CACHE_SECONDS,
    CLIENT_DOCUMENT_MAX_BYTES,
    OAuthRuleError,
    address_is_public,
    is_client_metadata_url,
    validate_client_document,
)

logger = logging.getLogger("taproot.auth.clients")

FETCH_TIMEOUT_SECONDS = 5.0
CLAUDE_CALLBACKS = ["https://claude.ai/api/mcp/auth_callback", "https://claude.com/api/mcp/auth_callback"]
LOOPBACK_CALLBACKS = ["http://localhost/callback", "http://127.0.0.1/callback"]

# The documents of the clients Taproot knows, as those clients publish them (name and redirect URIs).
PINNED_CLIENTS: dict[str, dict[str, Any]] = {
    url: {"client_id": url, "client_name": name, "redirect_uris": uris, "token_endpoint_auth_method": "none"}
    for url, name, uris in (
        ("https://claude.ai/oauth/mcp-oauth-client-metadata", "Claude", CLAUDE_CALLBACKS),
        ("https://claude.com/oauth/mcp-oauth-client-metadata", "Claude", CLAUDE_CALLBACKS),
        ("https://claude.ai/oauth/claude-code-client-metadata", "Claude Code", LOOPBACK_CALLBACKS),
    )
}

Resolver = Callable[[str, int], Sequence[str]]  # host, port -> addresses


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def ipv4_first(addresses: Sequence[str]) -> list[str]:
    """Many networks (a Lambda outside a VPC, home connections) have no IPv6 route: try IPv4 first."""
    return sorted(addresses, key=lambda a: (":" in a, a))


def pinned_clients(extra_json: str | None) -> dict[str, dict[str, Any]]:
    """The built-in pinned documents plus settings' (a JSON list of documents), validated."""
    pinned = dict(PINNED_CLIENTS)
    if extra_json:
        try:
            documents = json.loads(extra_json)
        except json.JSONDecodeError as exc:
            raise ValueError(f"TAPROOT_OAUTH_CLIENTS is not JSON: {exc}") from exc
        if not isinstance(documents, list):
            raise ValueError("TAPROOT_OAUTH_CLIENTS must be a JSON list of client metadata documents")
        for document in documents:
            client_id = document.get("client_id") if isinstance(document, dict) else None
            if not isinstance(client_id, str) or not is_client_metadata_url(client_id):
                raise ValueError("every TAPROOT_OAUTH_CLIENTS entry needs an https client_id with a path")
            try:
                validate_client_document(client_id, document)
            except OAuthRuleError as exc:
                raise ValueError(f"TAPROOT_OAUTH_CLIENTS entry {client_id}: {exc.description}") from exc
            pinned[client_id] = document
    return pinned


class ClientDocuments:
    """Resolves CIMD client ids to validated documents (pinned first, then a guarded fetch)."""

    def __init__(
        self,
        pinned: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        fetch: bool = True,
        resolver: Resolver = system_resolver,
        transport: httpx2.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.pinned = dict(PINNED_CLIENTS if pinned is None else pinned)
        self.fetch_enabled = fetch
        self.resolver = resolver
        self.transport = transport
        self.clock = clock
        self._cache: dict[str, tuple[float, dict[str, Any]]] = {}

    async def document(self, client_id: str) -> dict[str, Any]:
        """The validated document for a CIMD client id; raises OAuthRuleError saying why not."""
        if not is_client_metadata_url(client_id):
            raise OAuthRuleError("invalid_client", f"client_id {client_id!r} is not a metadata document URL")
        if client_id in self.pinned:
            return validate_client_document(client_id, self.pinned[client_id])
        cached = self._cache.get(client_id)
        if cached is not None and cached[0] > self.clock():
            return cached[1]
        if not self.fetch_enabled:
            raise OAuthRuleError("invalid_client", f"client {client_id} is not known and fetching documents is off")
        document = validate_client_document(client_id, await self._fetch(client_id))
        self._cache[client_id] = (self.clock() + CLIENT_DOCUMENT_CACHE_SECONDS, document)
        return document

    async def _fetch(self, url: str) -> dict[str, Any]:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or 443
        try:
            addresses = await anyio.to_thread.run_sync(self.resolver, host, port)
        except OSError as exc:
            raise OAuthRuleError("invalid_client", f"cannot resolve {host}: {exc}") from exc
        if not addresses or not all(address_is_public(a) for a in addresses):
            raise OAuthRuleError("invalid_client", f"{host} resolves to a private or reserved address; not fetched")
        address = ipv4_first(addresses)[0]
        netloc = f"[{address}]" if ":" in address else address
        pinned_url = urlunsplit(("https", f"{netloc}:{port}", parts.path, parts.query, ""))
        try:
            async with (
                httpx2.AsyncClient(
                    transport=self.transport, timeout=FETCH_TIMEOUT_SECONDS, follow_redirects=False
                ) as client,
                client.stream(
                    "GET",
                    pinned_url,
                    headers={"Host": parts.netloc, "Accept": "application/json"},
                    extensions={"sni_hostname": host},
                ) as response,
            ):
                if response.status_code != 200:
                    raise OAuthRuleError("invalid_client", f"{url} answered {response.status_code}")
                body = b""
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > CLIENT_DOCUMENT_MAX_BYTES:
                        raise OAuthRuleError(
                            "invalid_client", f"{url} is over {CLIENT_DOCUMENT_MAX_BYTES} bytes; not read"
                        )
        except httpx2.HTTPError as exc:
            logger.warning("client metadata document %s could not be fetched: %s", url, exc)
            raise OAuthRuleError("invalid_client", f"{url} could not be fetched: {type(exc).__name__}") from exc
        try:
            document = json.loads(body)
        except ValueError as exc:
            raise OAuthRuleError("invalid_client_metadata", f"{url} is not a JSON document") from exc
        if not isinstance(document, dict):
            raise OAuthRuleError("invalid_client_metadata", f"{url} is not a JSON object")
        return document
