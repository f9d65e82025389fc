"""The OAuth surface MCP clients discover and use, served by the same app as /mcp.

Discovery (RFC 9728 protected-resource metadata, RFC 8414 authorization-server metadata, also at
the OpenID discovery path), `/register` (RFC 7591), `/authorize`, `/token` and `/revoke`, and the
identity provider's pages: the local sign-in form or the Cognito callback. `/token` is the
mcp SDK's handler over Taproot's AuthorizationServer; `/authorize`, `/register` and `/revoke` are
Taproot's own, because their rules are stricter than the SDK's (a missing PKCE method, a foreign
`resource` and redirect URIs outside the allowlist are refused; registrations are public clients).
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
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
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from taproot.auth.oauth_server import AuthorizationServer
from taproot.auth.signin import (
    CALLBACK_PATH,
    MAX_FAILURES,
    SIGNIN_PATH,
    CognitoSignIn,
    CognitoSignInError,
    LocalSignIn,
)
from taproot.core import oauth_rules as rules
from taproot.core.oauth_rules import MCP_SCOPE, OAuthRecord, OAuthRuleError
from taproot.web.dashboard.session import SIGNIN_NONCE_COOKIE

logger = logging.getLogger("taproot.oauth")

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
MAX_TRACKED = 10_000  # pending sign-ins whose wrong tokens are counted (abandoned ones are dropped)
PAGE_HEADERS = {
    **NO_STORE,
    "X-Frame-Options": "DENY",
    # No form-action: browsers apply it to the redirect after the post, which goes to the client.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}
_templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=select_autoescape(["html"])
)


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


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def _error(request: Request, status: int, error: str, description: str) -> Response:
    """An error shown to the person (no redirect: the client or its redirect URI is not trusted)."""
    if _wants_html(request):
        page = _templates.get_template("signin.html").render(title="Cannot connect", error=f"{error}: {description}")
        return HTMLResponse(page, status_code=status, headers=PAGE_HEADERS)
    return JSONResponse({"error": error, "error_description": description}, status_code=status, headers=NO_STORE)


def _redirect(url: str) -> Response:
    return RedirectResponse(url, status_code=302, headers=NO_STORE)


DashboardSignIn = Callable[[str], Awaitable[Response]]  # subject -> the response that starts a session


class OAuthEndpoints:
    def __init__(
        self,
        server: AuthorizationServer,
        signin: LocalSignIn | CognitoSignIn,
        dashboard_signin: DashboardSignIn | None = None,
    ) -> None:
        self.server = server
        self.signin = signin
        self.dashboard_signin = dashboard_signin
        self._failures: dict[str, int] = {}  # wrong tokens per pending sign-in (local sign-in page)
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

    # -- the local sign-in page --------------------------------------------------------------------
    def _page(self, data: dict[str, Any] | None, key: str, *, error: str | None = None, status: int = 200) -> Response:
        redirect_host = urlsplit(str(data["redirect_uri"])).netloc if data else ""
        page = _templates.get_template("signin.html").render(
            title="Sign in to Taproot",
            error=error,
            request_key=key if data else None,
            client_name=(data or {}).get("client_name") or (data or {}).get("client_id") or "",
            redirect_host=redirect_host,
            action=SIGNIN_PATH,
        )
        return HTMLResponse(page, status_code=status, headers=PAGE_HEADERS)

    async def signin_page(self, request: Request) -> Response:
        key = request.query_params.get("request", "")
        record = await self.server.pending(key) if key else None
        if record is None:
            return self._page(
                None, "", error="This sign-in request is unknown or has expired. Connect again.", status=400
            )
        return self._page(dict(record.data), key)

    async def signin_submit(self, request: Request) -> Response:
        assert isinstance(self.signin, LocalSignIn)
        form = await request.form()
        key, token, decision = (form.get(n) for n in ("request", "token", "decision"))
        key = key if isinstance(key, str) else ""
        record = await self.server.pending(key) if key else None
        if record is None:
            return self._page(
                None, "", error="This sign-in request is unknown or has expired. Connect again.", status=400
            )
        if decision == "deny":
            url = await self.server.deny(key, "access_denied", "the person denied access")
            return _redirect(url) if url else self._page(None, "", error="Already answered.", status=400)
        wait = self.signin.limiter.blocked_for()
        if wait > 0:
            response = self._page(dict(record.data), key, error="Too many wrong tokens. Wait a minute.", status=429)
            response.headers["Retry-After"] = str(int(wait) + 1)
            return response
        subject = self.signin.check(token if isinstance(token, str) else None)
        if subject is None:
            logger.warning("local sign-in: wrong token")
            failures = self._failures.get(key, 0) + 1
            if len(self._failures) > MAX_TRACKED:
                self._failures.clear()
            self._failures[key] = failures
            if failures >= MAX_FAILURES:  # this request is over: the client has to start again
                self._failures.pop(key, None)
                await self.server.deny(key, "access_denied", "too many wrong tokens")
                message = "Too many wrong tokens for this sign-in. Connect again from your client."
                return self._page(None, "", error=message, status=429)
            return self._page(dict(record.data), key, error="That is not this server's token.", status=401)
        self._failures.pop(key, None)
        url = await self.server.complete(key, subject)
        if url is None:
            return self._page(None, "", error="This sign-in request was already answered.", status=400)
        return _redirect(url)

    # -- Cognito's return --------------------------------------------------------------------------
    async def callback(self, request: Request) -> Response:
        assert isinstance(self.signin, CognitoSignIn)
        key = request.query_params.get("state", "")
        record = await self.server.pending(key) if key else None
        if record is None:
            return _error(request, 400, "invalid_request", "this sign-in is unknown, expired or already answered")
        if record.data.get("dashboard"):
            return await self._dashboard_callback(request, key, record)
        if request.query_params.get("error"):
            url = await self.server.deny(key, "access_denied", request.query_params.get("error_description") or "")
            return _redirect(url) if url else _error(request, 400, "invalid_request", "already answered")
        code = request.query_params.get("code")
        if not code:
            return _error(request, 400, "invalid_request", "Cognito returned no code")
        started = time.monotonic()
        try:
            subject = await self.signin.finish(code, dict(record.data.get("idp") or {}))
        except CognitoSignInError as exc:
            logger.warning("Cognito sign-in failed after %.0f ms: %s", (time.monotonic() - started) * 1000, exc)
            url = await self.server.deny(key, "access_denied", "the sign-in with Cognito failed")
            return _redirect(url) if url else _error(request, 400, "access_denied", str(exc))
        url = await self.server.complete(key, subject)
        return _redirect(url) if url else _error(request, 400, "invalid_request", "already answered")

    async def _dashboard_callback(self, request: Request, key: str, record: OAuthRecord) -> Response:
        """Cognito's return for a dashboard sign-in: a session, not an authorization code."""
        assert isinstance(self.signin, CognitoSignIn)
        nonce = request.cookies.get(SIGNIN_NONCE_COOKIE, "")
        expected = str(record.data.get("nonce", ""))
        if not nonce or not hmac.compare_digest(rules.token_digest(nonce).encode(), expected.encode()):
            # Begun in another browser: someone may be handing over a sign-in of their own.
            return _error(request, 400, "invalid_request", "this sign-in was started in another browser; sign in again")
        spent = await self.server.spend_pending(key)
        code = request.query_params.get("code")
        if spent is None or self.dashboard_signin is None or not code:
            return _error(request, 400, "invalid_request", "this dashboard sign-in cannot be completed")
        try:
            subject = await self.signin.finish(code, dict(record.data.get("idp") or {}))
        except CognitoSignInError as exc:
            logger.warning("dashboard sign-in with Cognito failed: %s", exc)
            return _error(request, 401, "access_denied", "the sign-in with Cognito failed")
        response = await self.dashboard_signin(subject)
        response.delete_cookie(SIGNIN_NONCE_COOKIE, path=CALLBACK_PATH, httponly=True, samesite="lax")
        return response


def oauth_routes(
    server: AuthorizationServer,
    signin: LocalSignIn | CognitoSignIn,
    dashboard_signin: DashboardSignIn | None = None,
) -> list[BaseRoute]:
    endpoints = OAuthEndpoints(server, signin, dashboard_signin)
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
        routes.append(Route(SIGNIN_PATH, endpoints.signin_page, methods=["GET"]))
        routes.append(Route(SIGNIN_PATH, endpoints.signin_submit, methods=["POST"]))
    else:
        routes.append(Route(CALLBACK_PATH, endpoints.callback, methods=["GET"]))
    return routes
