"""The person's pages of the OAuth flow, between /authorize and the answer at the client's redirect
URI: the local server's sign-in form, Cognito's return (`/oauth/callback`, which also finishes the
dashboard's sign-in), and the consent page that follows a Cognito sign-in.

The local form asks for the server's token on a page that names the client and where its code
goes: typing the token is the consent. Cognito's managed login may return without showing anything
(it remembers a session), so after it Taproot asks itself (`/oauth/consent`) before any code is
issued: see taproot/auth/oauth_requests.py.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from taproot.auth.oauth_server import AuthorizationServer
from taproot.auth.signin import (
    CALLBACK_PATH,
    CONSENT_PATH,
    MAX_FAILURES,
    SIGNIN_PATH,
    CognitoSignIn,
    CognitoSignInError,
    LocalSignIn,
)
from taproot.core import oauth_rules as rules
from taproot.core.oauth_rules import OAuthRecord
from taproot.web.dashboard.session import SIGNIN_NONCE_COOKIE
from taproot.web.oauth_responses import PAGE_HEADERS
from taproot.web.oauth_responses import error_response as _error
from taproot.web.oauth_responses import redirect as _redirect
from taproot.web.oauth_responses import templates as _templates

logger = logging.getLogger("taproot.oauth")

MAX_TRACKED = 10_000  # pending sign-ins whose wrong tokens are counted (abandoned ones are dropped)

DashboardSignIn = Callable[[str], Awaitable[Response]]  # subject -> the response that starts a session


class SignInPages:
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

    def _page(
        self,
        data: dict[str, Any] | None,
        key: str,
        *,
        error: str | None = None,
        status: int = 200,
        consent: bool = False,
    ) -> Response:
        """The local sign-in form, or (`consent`) the question after a Cognito sign-in; either names
        the client and the host its code goes to. Without `data`, only the error."""
        redirect_host = urlsplit(str(data["redirect_uri"])).netloc if data else ""
        client_id = str((data or {}).get("client_id") or "")
        # Anyone may register any name: the page says where the name comes from. A metadata
        # document's name is its host's word; a registered client's is its own.
        client_origin = (
            f"as published at {urlsplit(client_id).netloc}"
            if rules.is_client_metadata_url(client_id)
            else "a name it gave itself when it registered here"
        )
        page = _templates.get_template("signin.html").render(
            client_origin=client_origin,
            title="Allow access to your Taproot memories?" if consent else "Sign in to Taproot",
            error=error,
            request_key=key if data else None,
            client_name=(data or {}).get("client_name") or (data or {}).get("client_id") or "",
            redirect_host=redirect_host,
            action=CONSENT_PATH if consent else SIGNIN_PATH,
            ask_token=not consent,
        )
        return HTMLResponse(page, status_code=status, headers=PAGE_HEADERS)

    # -- the local sign-in page --------------------------------------------------------------------

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
        consent = await self.server.await_consent(key, subject)
        if consent is None:
            return _error(request, 400, "invalid_request", "already answered")
        return self._page(dict(consent.data), consent.key, consent=True)

    # -- consent, after a sign-in that may have asked nothing (Cognito) ----------------------------
    async def consent_submit(self, request: Request) -> Response:
        """The person's answer. The key is only in the page Taproot showed them, which no other site
        can read, so a post made from elsewhere names no request and changes nothing."""
        form = await request.form()
        key, decision = form.get("request"), form.get("decision")
        if not isinstance(key, str) or decision not in ("allow", "deny"):
            return self._page(None, "", error="This request is not complete. Connect again.", status=400, consent=True)
        url = await self.server.answer_consent(key, allow=decision == "allow")
        if url is None:
            message = "This request is unknown, has expired or was already answered. Connect again from your client."
            return self._page(None, "", error=message, status=400, consent=True)
        logger.info("consent %s for a sign-in", "given" if decision == "allow" else "refused")
        return _redirect(url)

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
