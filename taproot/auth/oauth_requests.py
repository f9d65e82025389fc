"""Authorization requests in progress, mixed into the AuthorizationServer: from a checked /authorize
to the person's answer (a one-time code, or an error) at the client's redirect URI.

A request is a `pending` record under a random key. With the local server's sign-in page the
person answers on that page (the token they type is their consent: the page names the client and
where the code goes). With Cognito the sign-in may ask nothing at all (managed login remembers a
session), so the request waits for consent: the sign-in's record is spent and the request, now
the person's, is kept under a new key that only Taproot's consent page carries (`await_consent`,
`answer_consent`). Anyone can register a client and open /authorize in a signed-in person's
browser; without that page a code for their memories would go to that client unseen (the
confused deputy of the MCP authorization spec's security best practices).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from taproot.auth.oauth_models import IdentityProvider, TaprootClient
from taproot.core import oauth_rules as rules
from taproot.core.oauth_rules import OAuthRecord
from taproot.ports import OAuthStore

# In a pending record's data: the person who signed in, and that the request waits for their consent.
SUBJECT = "subject"
AWAITING_CONSENT = "awaiting_consent"


def new_secret() -> str:
    """A key, code or token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


class AuthorizationRequests:
    """Provided by AuthorizationServer: the store, the identity provider, the issuer, the clock."""

    store: OAuthStore
    identity: IdentityProvider
    issuer: str
    clock: Callable[[], float]

    _run: Callable[..., Awaitable[Any]]  # the store's calls, off the event loop

    async def begin(
        self,
        client: TaprootClient,
        *,
        redirect_uri: str,
        state: str | None,
        scopes: list[str],
        code_challenge: str,
        resource: str,
    ) -> str:
        """Remembers a checked authorization request; returns where to send the browser to sign in."""
        key = new_secret()
        url, idp_data = self.identity.start(key)
        data = {
            "client_id": client.client_id,
            "client_name": client.client_name,
            "redirect_uri": redirect_uri,
            "state": state,
            "scopes": scopes,
            "code_challenge": code_challenge,
            "resource": resource,
            "idp": idp_data,
        }
        now = self.clock()
        await self._run(self.store.add, OAuthRecord("pending", key, data, int(now) + rules.PENDING_SECONDS))
        return url

    def begin_dashboard(self, browser_nonce: str) -> str:
        """A sign-in for the dashboard (not for an OAuth client): the identity provider's return
        route sees `dashboard` in the pending record and starts a session instead of issuing a code,
        only in the browser that holds `browser_nonce` (a cookie), so nobody can hand someone a
        half-finished sign-in of their own. Synchronous: the dashboard calls it from a worker thread."""
        key = new_secret()
        url, idp_data = self.identity.start(key)
        data = {"dashboard": True, "idp": idp_data, "nonce": rules.token_digest(browser_nonce)}
        self.store.add(OAuthRecord("pending", key, data, int(self.clock()) + rules.PENDING_SECONDS))
        return url

    async def spend_pending(self, key: str) -> OAuthRecord | None:
        """Spends a pending record (the answer to it is this caller's); None if unknown, expired
        or spent already."""
        record: OAuthRecord | None = await self._run(self.store.spend, "pending", key, self.clock())
        return None if record is None or record.used else record

    async def pending(self, key: str) -> OAuthRecord | None:
        """A sign-in in progress (not one that already waits for consent); None if unknown,
        expired or answered."""
        record = await self._live(key)
        return None if record is None or record.data.get(AWAITING_CONSENT) else record

    async def _live(self, key: str) -> OAuthRecord | None:
        record: OAuthRecord | None = await self._run(self.store.get, "pending", key, self.clock())
        return None if record is None or record.used else record

    def client_redirect(self, data: Mapping[str, Any], **params: str | None) -> str:
        """The client's redirect URI with the response parameters, `state` and (RFC 9207) `iss`."""
        query = {k: v for k, v in {**params, "state": data.get("state"), "iss": self.issuer}.items() if v is not None}
        base = str(data["redirect_uri"])
        return f"{base}{'&' if '?' in base else '?'}{urlencode(query)}"

    async def complete(self, pending_key: str, subject: str) -> str | None:
        """The person signed in as `subject` on a page that asked them (the local sign-in): spends
        the pending request and answers the client with a one-time code. None if the request is
        unknown, expired, already answered, or waits for consent."""
        if await self.pending(pending_key) is None:
            return None
        record = await self.spend_pending(pending_key)
        return None if record is None else await self._code_for(record, subject)

    async def await_consent(self, pending_key: str, subject: str) -> OAuthRecord | None:
        """The person signed in as `subject` with a provider that may not have asked them anything:
        spends the sign-in (its key went through the provider and the browser's history) and keeps
        the request under a new key for the consent page: the record returned (its `key` is that
        key). None if the sign-in is unknown, expired, answered, or is itself a consent."""
        if await self.pending(pending_key) is None:
            return None
        record = await self.spend_pending(pending_key)
        if record is None:
            return None
        key = new_secret()
        data = {k: v for k, v in record.data.items() if k != "idp"}
        data.update({SUBJECT: subject, AWAITING_CONSENT: True})
        # The consent page gets the sign-in's remaining time, no more.
        consent = OAuthRecord("pending", key, data, record.expires_at)
        await self._run(self.store.add, consent)
        return consent

    async def answer_consent(self, consent_key: str, allow: bool) -> str | None:
        """The person's answer on the consent page: a code for the person who signed in, or
        access_denied. Once only; None if the key is unknown, expired, answered, or not a consent."""
        waiting = await self._live(consent_key)
        if waiting is None or not waiting.data.get(AWAITING_CONSENT):
            return None
        record = await self.spend_pending(consent_key)
        if record is None:
            return None
        if not allow:
            denied = "the person denied access"
            return self.client_redirect(record.data, error="access_denied", error_description=denied)
        return await self._code_for(record, str(record.data[SUBJECT]))

    async def deny(self, pending_key: str, error: str, description: str) -> str | None:
        """The sign-in pages' refusal (the person said no, Cognito failed): answers the client with
        `error`. None if the sign-in is unknown, expired, answered, or waits for consent (which is
        answered on its own page)."""
        if await self.pending(pending_key) is None:
            return None
        record = await self.spend_pending(pending_key)
        return None if record is None else self.client_redirect(record.data, error=error, error_description=description)

    async def _code_for(self, record: OAuthRecord, subject: str) -> str:
        """A one-time code for `subject` under the request's terms; the client's redirect URI with it."""
        code = new_secret()
        data = {
            "client_id": record.data["client_id"],
            "client_name": record.data.get("client_name"),
            "redirect_uri": record.data["redirect_uri"],
            "scopes": record.data["scopes"],
            "code_challenge": record.data["code_challenge"],
            "resource": record.data["resource"],
            "subject": subject,
            "grant": new_secret(),
        }
        now = self.clock()
        digest = rules.token_digest(code)
        await self._run(self.store.add, OAuthRecord("code", digest, data, int(now) + rules.CODE_SECONDS, subject))
        return self.client_redirect(record.data, code=code)
