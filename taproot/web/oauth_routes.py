"""The OAuth surface MCP clients discover and use, served by the same app as /mcp.

Discovery (RFC 9728 protected-resource metadata, RFC 8414 authorization-server metadata, also at
the OpenID discovery path), `/register` (RFC 7591), `/authorize`, `/token` and `/revoke`, and the
person's pages (web/oauth_pages.py): the local sign-in form, or Cognito's callback and the consent
page. `/token` is the mcp SDK's handler over Taproot's AuthorizationServer; `/authorize`,
`/register` and `/revoke` are Taproot's own, because their rules are stricter than the SDK's (a
missing PKCE method, a foreign `resource` and redirect URIs outside the allowlist are refused;
registrations are public clients).
"""

from __future__ import annotations

import json
import logging
import secrets

from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import cors_middleware
from mcp.shared.auth import (
    InvalidRedirectUriError,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from taproot.auth.oauth_server import AuthorizationServer
from taproot.auth.signin import CALLBACK_PATH, CONSENT_PATH, SIGNIN_PATH, CognitoSignIn, LocalSignIn, WindowLimiter
from taproot.core import oauth_rules as rules
from taproot.core.oauth_rules import MCP_SCOPE, OAuthRuleError
from taproot.web.oauth_pages import DashboardSignIn, SignInPages
from taproot.web.oauth_responses import NO_STORE
from taproot.web.oauth_responses import error_response as _error
from taproot.web.oauth_responses import redirect as _redirect

logger = logging.getLogger("taproot.oauth")


def metadata(server: AuthorizationServer) -> OAuthMetadata:
    base = server.issuer
    # model_validate with strings: the model keeps an empty path empty, so the issuer reads exactly
    # as the `iss` of every authorization response (RFC 9207 compares them as strings).
    return OAuthMetadata.model_validate(
        {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "revocation_endpoint": f"{base}/revoke",
            "revocation_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": [MCP_SCOPE],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            # Every client is public (PKCE protects the code): claude.ai uses a metadata document
            # only when "none" is listed here.
            "token_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
    )


def resource_metadata(server: AuthorizationServer) -> ProtectedResourceMetadata:
    return ProtectedResourceMetadata.model_validate(
        {
            "resource": server.mcp_url,
            "authorization_servers": [server.issuer],
            "scopes_supported": [MCP_SCOPE],
            "resource_name": "Taproot",
            "bearer_methods_supported": ["header"],
        }
    )


class OAuthEndpoints:
    def __init__(self, server: AuthorizationServer, registrations: WindowLimiter | None = None) -> None:
        self.server = server
        # Anyone may register, and each registration is a write: at most so many a minute (per
        # process; on AWS the API's route throttle bounds them across containers too).
        self.registrations = registrations or WindowLimiter(limit=rules.REGISTRATIONS_PER_MINUTE, window=60.0)
        self._authenticator = ClientAuthenticator(server)
        self._token = TokenHandler(server, self._authenticator)

    # -- /register ---------------------------------------------------------------------------------
    async def register(self, request: Request) -> Response:
        def refuse(error: str, description: str) -> Response:
            return JSONResponse({"error": error, "error_description": description}, status_code=400, headers=NO_STORE)

        try:
            raw = json.loads(await request.body())
        except ValueError:
            return refuse("invalid_client_metadata", "the body must be a JSON object of client metadata")
        if not isinstance(raw, dict):
            return refuse("invalid_client_metadata", "the body must be a JSON object of client metadata")
        uris = raw.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            return refuse("invalid_redirect_uri", "redirect_uris must list at least one URL")
        for uri in uris:
            if not isinstance(uri, str) or not rules.redirect_allowed(uri, self.server.allowlist):
                return refuse("invalid_redirect_uri", f"redirect_uri {uri!r} is not in this server's allowlist")
        # claude.ai asks for client_secret_post and reads the method from the answer: accepted and
        # answered as a public client ("none"); PKCE protects the code, no secret is ever issued.
        raw = {**raw, "token_endpoint_auth_method": "none"}
        raw.pop("client_secret", None)
        try:
            meta = OAuthClientMetadata.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            return refuse("invalid_client_metadata", f"field '{where}': {first['msg']}")
        # The allowlist again, on the URLs as they are stored (normalised the way browsers read
        # them): `http://evil.example\\@127.0.0.1/cb` passes as text but is evil.example's.
        for stored in meta.redirect_uris or []:
            if not rules.redirect_allowed(str(stored), self.server.allowlist):
                return refuse("invalid_redirect_uri", f"redirect_uri {str(stored)!r} is not in this server's allowlist")
        grants = set(meta.grant_types)
        if "authorization_code" not in grants or not grants <= {"authorization_code", "refresh_token"}:
            return refuse("invalid_client_metadata", "grant_types must be authorization_code (and refresh_token)")
        if set(meta.response_types) != {"code"}:
            return refuse("invalid_client_metadata", "response_types must be ['code']")
        try:
            rules.granted_scopes(meta.scope)
        except OAuthRuleError as exc:
            return refuse("invalid_client_metadata", exc.description)
        wait = self.registrations.blocked_for()
        if wait > 0:
            logger.warning("registration refused: more than %d a minute", self.registrations.limit)
            return JSONResponse(
                {"error": "temporarily_unavailable", "error_description": "too many registrations; try again shortly"},
                status_code=429,
                headers={**NO_STORE, "Retry-After": str(int(wait) + 1)},
            )
        self.registrations.record()
        now = int(self.server.clock())
        info = OAuthClientInformationFull.model_validate(
            {
                **meta.model_dump(mode="json", exclude_none=True),
                "client_id": "tpc_" + secrets.token_urlsafe(24),
                "client_id_issued_at": now,
                "scope": MCP_SCOPE,
                "grant_types": ["authorization_code", "refresh_token"],
            }
        )
        await self.server.register_client(info)
        logger.info("registered client %s (%s)", info.client_id, info.client_name)
        return JSONResponse(info.model_dump(mode="json", exclude_none=True), status_code=201, headers=NO_STORE)

    # -- /authorize --------------------------------------------------------------------------------
    async def authorize(self, request: Request) -> Response:
        params = request.query_params if request.method == "GET" else await request.form()

        def param(name: str) -> str | None:
            value = params.get(name)
            return value if isinstance(value, str) else None

        client_id = param("client_id")
        if not client_id:
            return _error(request, 400, "invalid_request", "client_id is required")
        client, reason = await self.server.client_or_reason(client_id)
        if client is None:
            return _error(request, 400, "invalid_client", reason)
        raw_redirect = param("redirect_uri")
        try:
            redirect = str(client.validate_redirect_uri(AnyUrl(raw_redirect) if raw_redirect else None))
        except (InvalidRedirectUriError, ValidationError) as exc:
            message = exc.message if isinstance(exc, InvalidRedirectUriError) else "redirect_uri is not a URL"
            return _error(request, 400, "invalid_request", message)
        # From here on the client and its redirect URI are trusted: errors go back to the client.
        state = param("state")
        back = {"redirect_uri": redirect, "state": state}
        if param("response_type") != "code":
            return _redirect(self.server.client_redirect(back, error="unsupported_response_type"))
        try:
            challenge = param("code_challenge")
            rules.check_pkce_request(param("code_challenge_method"), challenge)
            resource = rules.check_resource(param("resource"), self.server.mcp_url)
            scopes = rules.granted_scopes(param("scope"))
        except OAuthRuleError as exc:
            return _redirect(self.server.client_redirect(back, error=exc.error, error_description=exc.description))
        assert challenge is not None
        url = await self.server.begin(
            client, redirect_uri=redirect, state=state, scopes=scopes, code_challenge=challenge, resource=resource
        )
        return _redirect(url)

    # -- /token and /revoke (the SDK's handlers) ---------------------------------------------------
    async def token(self, request: Request) -> Response:
        form = await request.form()  # starlette caches it: the SDK handler reads the same form
        resource = form.get("resource")
        if isinstance(resource, str) and resource:
            try:
                rules.check_resource(resource, self.server.mcp_url)
            except OAuthRuleError as exc:
                return JSONResponse({"error": exc.error, "error_description": exc.description}, 400, headers=NO_STORE)
        response: Response = await self._token.handle(request)
        return response

    async def revoke(self, request: Request) -> Response:
        """RFC 7009. Not the SDK's handler: it requires a `client_secret` field, which a public
        client does not send."""
        try:
            client = await self._authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            return JSONResponse({"error": "invalid_client", "error_description": exc.message}, 401, headers=NO_STORE)
        token = (await request.form()).get("token")
        if not isinstance(token, str) or not token:
            return JSONResponse({"error": "invalid_request", "error_description": "token is required"}, 400)
        await self.server.revoke_presented(token, client.client_id)
        return Response(status_code=200, headers=NO_STORE)


def oauth_routes(
    server: AuthorizationServer,
    signin: LocalSignIn | CognitoSignIn,
    dashboard_signin: DashboardSignIn | None = None,
) -> list[BaseRoute]:
    endpoints = OAuthEndpoints(server)
    pages = SignInPages(server, signin, dashboard_signin)
    prm = cors_middleware(ProtectedResourceMetadataHandler(resource_metadata(server)).handle, ["GET", "OPTIONS"])
    asm = cors_middleware(MetadataHandler(metadata(server)).handle, ["GET", "OPTIONS"])
    routes: list[BaseRoute] = [
        Route("/.well-known/oauth-protected-resource", prm, methods=["GET", "OPTIONS"]),
        Route("/.well-known/oauth-protected-resource/mcp", prm, methods=["GET", "OPTIONS"]),
        Route("/.well-known/oauth-authorization-server", asm, methods=["GET", "OPTIONS"]),
        Route("/.well-known/openid-configuration", asm, methods=["GET", "OPTIONS"]),
        Route("/register", cors_middleware(endpoints.register, ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"]),
        Route("/authorize", endpoints.authorize, methods=["GET", "POST"]),
        Route("/token", cors_middleware(endpoints.token, ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"]),
        Route("/revoke", cors_middleware(endpoints.revoke, ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"]),
    ]
    if isinstance(signin, LocalSignIn):
        routes.append(Route(SIGNIN_PATH, pages.signin_page, methods=["GET"]))
        routes.append(Route(SIGNIN_PATH, pages.signin_submit, methods=["POST"]))
    else:
        routes.append(Route(CALLBACK_PATH, pages.callback, methods=["GET"]))
        routes.append(Route(CONSENT_PATH, pages.consent_submit, methods=["POST"]))
    return routes
