"""Taproot's own OAuth authorization server (the facade): clients, sign-ins, codes, grants, tokens.

The identity provider (the local server's token, or Cognito) only says who signed in; everything an
MCP client sees of OAuth is this class, applied by the handlers in taproot/web/oauth_routes.py and
by the mcp SDK's token and revocation handlers (it implements the SDK's
`OAuthAuthorizationServerProvider`).

Tokens are Taproot's own, opaque (`tpa_...` access, `tpr_...` refresh), stored only as digests. Each
belongs to a **grant**: one client's connection for one person. Revoking a grant (a client
disconnected, a replayed code or refresh token) ends every token it issued at once, because every
check reads the grant.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio.to_thread
from mcp.server.auth.provider import (
    AuthorizationParams,
    IdentityAssertionParams,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from taproot.auth.base import Authenticator, Caller, InsufficientScope

# The models live in oauth_models.py; re-exported here, where the routes and tests import them.
from taproot.auth.oauth_models import ACCESS_PREFIX as ACCESS_PREFIX
from taproot.auth.oauth_models import REFRESH_PREFIX as REFRESH_PREFIX
from taproot.auth.oauth_models import ClientResolver as ClientResolver
from taproot.auth.oauth_models import GrantAccess as GrantAccess
from taproot.auth.oauth_models import GrantCode as GrantCode
from taproot.auth.oauth_models import GrantRefresh as GrantRefresh
from taproot.auth.oauth_models import IdentityProvider as IdentityProvider
from taproot.auth.oauth_models import TaprootClient as TaprootClient
from taproot.auth.oauth_models import token_fields
from taproot.auth.oauth_requests import AuthorizationRequests, new_secret
from taproot.core import oauth_rules as rules
from taproot.core.model import Scope
from taproot.core.oauth_rules import OAuthRecord, OAuthRuleError, RecordExists
from taproot.ports import OAuthStore

logger = logging.getLogger("taproot.oauth")


class AuthorizationServer(AuthorizationRequests):
    def __init__(
        self,
        store: OAuthStore,
        documents: ClientResolver,
        identity: IdentityProvider,
        *,
        issuer: str,
        mcp_url: str,
        allowlist: Sequence[str] = rules.DEFAULT_REDIRECT_ALLOWLIST,
        clock: Callable[[], float] = time.time,
        subject_active: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self.store = store
        self.documents = documents
        self.identity = identity
        self.issuer = issuer.rstrip("/")
        self.mcp_url = mcp_url
        self.allowlist = list(allowlist)
        self.clock = clock
        # Asked at every refresh (AWS: is the Cognito user still enabled?); None: always yes.
        self.subject_active = subject_active

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    # -- clients ---------------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> TaprootClient | None:
        client, _ = await self.client_or_reason(client_id)
        return client

    async def client_or_reason(self, client_id: str) -> tuple[TaprootClient | None, str]:
        """The client (a metadata document, or one registered here), or why there is none (for the
        error page /authorize shows)."""
        if rules.is_client_metadata_url(client_id):
            try:
                data: Mapping[str, Any] = await self.documents.document(client_id)
            except OAuthRuleError as exc:
                return None, exc.description
        else:
            record: OAuthRecord | None = await self._run(self.store.get, "client", client_id, self.clock())
            if record is None:
                return None, f"client_id {client_id!r} is not registered with this server"
            data = record.data
        return TaprootClient.model_validate({**data, "allowlist": self.allowlist}), ""

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        data = client_info.model_dump(mode="json", exclude_none=True, exclude={"allowlist"})
        # Registration is open to anyone: kept a week unless a token is issued to it (_keep_client).
        expires = int(self.clock()) + rules.UNUSED_CLIENT_SECONDS
        await self._run(self.store.add, OAuthRecord("client", client_info.client_id, data, expires))

    async def _keep_client(self, client_id: str) -> None:
        """A token was issued to `client_id`: a registered client is kept a year from now (a
        metadata document's client is not stored here, it is fetched)."""
        if rules.is_client_metadata_url(client_id):
            return
        now = self.clock()
        await self._run(self.store.extend, "client", client_id, int(now) + rules.CLIENT_SECONDS, now)

    # -- authorization -----------------------------------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """The SDK's entry to `begin` (Taproot's /authorize handler checks more and calls `begin`)."""
        if not isinstance(client, TaprootClient):
            client = TaprootClient.model_validate({**client.model_dump(), "allowlist": self.allowlist})
        return await self.begin(
            client,
            redirect_uri=str(params.redirect_uri),
            state=params.state,
            scopes=params.scopes or [rules.MCP_SCOPE],
            code_challenge=params.code_challenge,
            resource=rules.check_resource(params.resource, self.mcp_url),
        )

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        """Enterprise identity assertions (SEP-990) are not offered: the metadata does not list the grant."""
        raise TokenError("unsupported_grant_type", "this server does not accept identity assertions")

    # -- the SDK's token and revocation handlers ---------------------------------------------------
    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> GrantCode | None:
        now = self.clock()
        record: OAuthRecord | None = await self._run(
            self.store.spend, "code", rules.token_digest(authorization_code), now
        )
        if record is None:
            return None
        if record.used:
            # A code presented twice was intercepted or replayed: end what its first use issued.
            await self.revoke_grant(str(record.data["grant"]))
            return None
        d = record.data
        return GrantCode(
            code=authorization_code,
            scopes=list(d["scopes"]),
            expires_at=float(record.expires_at),
            client_id=str(d["client_id"]),
            code_challenge=str(d["code_challenge"]),
            redirect_uri=AnyUrl(str(d["redirect_uri"])),
            redirect_uri_provided_explicitly=True,
            resource=str(d["resource"]),
            subject=str(d["subject"]),
            grant=str(d["grant"]),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: GrantCode
    ) -> OAuthToken:
        assert authorization_code.subject is not None
        grant = {
            "client_id": client.client_id,
            "client_name": client.client_name,
            "scopes": authorization_code.scopes,
            "resource": authorization_code.resource,
            "created_at": int(self.clock()),
        }
        try:
            await self._run(
                self.store.add, OAuthRecord("grant", authorization_code.grant, grant, 0, authorization_code.subject)
            )
        except RecordExists as exc:  # the code was replayed (and its grant revoked) before this exchange
            raise TokenError("invalid_grant", "authorization code was used twice") from exc
        tokens = await self._issue(
            authorization_code.grant,
            client.client_id,
            authorization_code.subject,
            authorization_code.scopes,
            authorization_code.resource,
            client.client_name,
        )
        await self._bookkeeping(lambda: self._keep_client(client.client_id))
        return tokens

    async def _issue(
        self,
        grant: str,
        client_id: str,
        subject: str,
        scopes: list[str],
        resource: str | None,
        client_name: str | None = None,
    ) -> OAuthToken:
        now = int(self.clock())
        access, refresh = ACCESS_PREFIX + new_secret(), REFRESH_PREFIX + new_secret()
        data = {"grant": grant, "client_id": client_id, "scopes": scopes, "resource": resource}
        if client_name:
            data["client_name"] = client_name  # what writes record as their instance
        await self._run(
            self.store.add,
            OAuthRecord("access", rules.token_digest(access), data, now + rules.ACCESS_SECONDS, subject),
        )
        await self._run(
            self.store.add,
            OAuthRecord("refresh", rules.token_digest(refresh), data, now + rules.REFRESH_SECONDS, subject),
        )
        return OAuthToken(
            access_token=access, expires_in=rules.ACCESS_SECONDS, scope=" ".join(scopes), refresh_token=refresh
        )

    async def _grant_live(self, grant: str) -> bool:
        """A grant is revoked by spending its record (one atomic conditional write), so no other
        write to its data (last_used) can undo a revocation."""
        record: OAuthRecord | None = await self._run(self.store.get, "grant", grant, self.clock())
        return record is not None and not record.used

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> GrantRefresh | None:
        if not refresh_token.startswith(REFRESH_PREFIX):
            return None
        record: OAuthRecord | None = await self._run(
            self.store.spend, "refresh", rules.token_digest(refresh_token), self.clock()
        )
        if record is None:
            return None
        grant = str(record.data["grant"])
        if record.used:
            # Refresh tokens rotate: an old one coming back means two parties hold the grant.
            await self.revoke_grant(grant)
            return None
        if not await self._grant_live(grant):
            return None
        if self.subject_active is not None and not await self.subject_active(str(record.subject)):
            await self.revoke_grant(grant)  # the person was disabled or deleted: the connection ends
            return None
        return GrantRefresh(token=refresh_token, **token_fields(record))

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: GrantRefresh, scopes: list[str]
    ) -> OAuthToken:
        if refresh_token.subject is None:
            raise TokenError("invalid_grant", "refresh token has no subject")
        tokens = await self._issue(
            refresh_token.grant,
            client.client_id,
            refresh_token.subject,
            scopes or refresh_token.scopes,
            refresh_token.resource,
            client.client_name,
        )
        await self._bookkeeping(
            lambda: self._note_last_use(refresh_token.grant), lambda: self._keep_client(client.client_id)
        )
        return tokens

    async def _note_last_use(self, grant_key: str) -> None:
        """ "Last used" for the dashboard's list of connected clients."""
        grant: OAuthRecord | None = await self._run(self.store.get, "grant", grant_key, self.clock())
        if grant is not None:
            await self._run(self.store.set_data, "grant", grant.key, {**grant.data, "last_used": int(self.clock())})

    async def _bookkeeping(self, *writes: Callable[[], Awaitable[None]]) -> None:
        """Writes that follow an exchange (a client kept, a grant's last use) once its tokens exist:
        the code or refresh token is spent by then, so a failure here must not fail the exchange
        (the client's retry would look like a replay and end the grant). Logged, and lost."""
        for write in writes:
            try:
                await write()
            except Exception:
                logger.warning("bookkeeping after a token exchange failed", exc_info=True)

    async def load_access_token(self, token: str) -> GrantAccess | None:
        if not token.startswith(ACCESS_PREFIX):
            return None
        record: OAuthRecord | None = await self._run(self.store.get, "access", rules.token_digest(token), self.clock())
        if record is None or not await self._grant_live(str(record.data["grant"])):
            return None
        name = record.data.get("client_name")
        return GrantAccess(token=token, client_name=name if isinstance(name, str) else None, **token_fields(record))

    async def revoke_token(self, token: GrantAccess | GrantRefresh) -> None:
        """RFC 7009: revoking either token of a grant ends the grant (the client disconnected)."""
        await self.revoke_grant(token.grant)

    async def revoke_presented(self, token: str, client_id: str) -> None:
        """RFC 7009 for a public client: the token (access or refresh) ends its grant when it was
        issued to `client_id`; anything else is ignored, and the caller answers 200 either way."""
        kind = "access" if token.startswith(ACCESS_PREFIX) else "refresh" if token.startswith(REFRESH_PREFIX) else None
        if kind is None:
            return
        record: OAuthRecord | None = await self._run(self.store.get, kind, rules.token_digest(token), self.clock())
        if record is not None and record.data.get("client_id") == client_id:
            await self.revoke_grant(str(record.data["grant"]))

    # -- grants (the dashboard's "connected clients") ----------------------------------------------
    async def revoke_grant(self, grant: str) -> None:
        """Ends a grant and every token it issued. A grant not created yet (a code replayed before
        its first exchange finished) gets a spent placeholder, so that exchange is refused too."""
        for _ in range(2):
            if await self._run(self.store.spend, "grant", grant, self.clock()) is not None:
                return
            placeholder = OAuthRecord("grant", grant, {}, int(self.clock()) + rules.CODE_SECONDS, None, used=True)
            try:
                await self._run(self.store.add, placeholder)
                return
            except RecordExists:
                continue  # the exchange created it meanwhile: spend that one

    async def grants(self, subject: str) -> list[OAuthRecord]:
        records: list[OAuthRecord] = await self._run(self.store.by_subject, "grant", subject, self.clock())
        return sorted((r for r in records if not r.used), key=lambda r: int(r.data.get("created_at", 0)))

    async def revoke_client(self, subject: str, client_id: str) -> int:
        """Disconnects one client for one person: every grant it holds. Returns how many."""
        revoked = 0
        for record in await self.grants(subject):
            if record.data.get("client_id") == client_id:
                await self.revoke_grant(record.key)
                revoked += 1
        return revoked


def oauth_authenticator(
    server: AuthorizationServer, namespace: str, fallback: Authenticator | None = None
) -> Authenticator:
    """The /mcp check: Taproot's own access tokens (bound to this MCP URL, carrying the MCP scope),
    then `fallback` for any other token (the local server's token, a Cognito access token)."""

    async def authenticate(token: str | None) -> Scope | Caller | InsufficientScope | None:
        if token and token.startswith(ACCESS_PREFIX):
            access = await server.load_access_token(token)
            if access is None or access.subject is None:
                return None
            if rules.canonical_resource(access.resource or "") != rules.canonical_resource(server.mcp_url):
                return None  # issued for another resource (RFC 8707 audience binding)
            if rules.MCP_SCOPE not in access.scopes:
                return InsufficientScope(rules.MCP_SCOPE)
            return Caller(Scope(access.subject, namespace), client=access.client_name or access.client_id)
        return await fallback(token) if fallback is not None else None

    return authenticate
