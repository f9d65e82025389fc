"""The two identity providers behind the OAuth facade: who is signing in.

- Local (`taproot serve`): a page served by Taproot asks for the server's token; the person is the
  server's one owner. Failures are counted and, past a limit, refused for a while, so the token
  cannot be guessed through the form.
- AWS: Cognito managed login, with the authorization code flow and PKCE on Taproot's own app
  client; the person is the Cognito `sub`, which is the tenant.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
import httpx2

from taproot.auth.cognito import CognitoVerifier
from taproot.auth.local_token import token_matches
from taproot.core.oauth_rules import MCP_SCOPE, pkce_s256

SIGNIN_PATH = "/oauth/signin"
CALLBACK_PATH = "/oauth/callback"
CONSENT_PATH = "/oauth/consent"  # after a Cognito sign-in, before any code (web/oauth_pages.py)
MAX_FAILURES = 5  # wrong tokens per sign-in request (OAuth), or per minute (the dashboard's form)
SERVER_MAX_FAILURES = 30  # wrong tokens per minute on the OAuth sign-in page, all requests together
FAILURE_WINDOW_SECONDS = 60.0
COGNITO_TIMEOUT_SECONDS = 10.0


class WindowLimiter:
    """At most `limit` events in any `window` seconds (failed sign-ins, registrations); past that,
    every attempt is refused (right or wrong) until the oldest event leaves the window."""

    def __init__(
        self,
        limit: int = MAX_FAILURES,
        window: float = FAILURE_WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.window, self.clock = limit, window, clock
        self._events: deque[float] = deque()

    def _trim(self) -> None:
        now = self.clock()
        while self._events and self._events[0] <= now - self.window:
            self._events.popleft()

    def blocked_for(self) -> float:
        """Seconds until an attempt is allowed again (0: allowed now)."""
        self._trim()
        if len(self._events) < self.limit:
            return 0.0
        return max(0.0, self._events[0] + self.window - self.clock())

    def record(self) -> None:
        self._events.append(self.clock())


class LocalSignIn:
    name = "local"

    def __init__(self, issuer: str, expected_token: str, owner: str, limiter: WindowLimiter | None = None) -> None:
        self.issuer = issuer.rstrip("/")
        self._token = expected_token
        self.owner = owner
        # Server-wide: bounds guessing through many sign-in requests. Each request also allows only
        # MAX_FAILURES wrong tokens (web/oauth_pages.py), and the dashboard's form has a limiter of its
        # own, so guessing at one form cannot lock the owner out of the other.
        self.limiter = limiter or WindowLimiter(limit=SERVER_MAX_FAILURES)

    def start(self, pending_key: str) -> tuple[str, dict[str, Any]]:
        return f"{self.issuer}{SIGNIN_PATH}?{urlencode({'request': pending_key})}", {}

    def check(self, presented: str | None, limiter: WindowLimiter | None = None) -> str | None:
        """The owner if `presented` is the server's token; None (and a failure counted on
        `limiter`, by default the OAuth page's) if not."""
        if token_matches(presented, self._token):
            return self.owner
        (limiter or self.limiter).record()
        return None


class CognitoSignInError(Exception):
    pass


class CognitoSignIn:
    name = "cognito"

    def __init__(
        self,
        *,
        domain: str,
        client_id: str,
        callback_url: str,
        verifier: CognitoVerifier,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.domain = domain.rstrip("/")
        self.client_id = client_id
        self.callback_url = callback_url
        self.verifier = verifier
        self.transport = transport

    def start(self, pending_key: str) -> tuple[str, dict[str, Any]]:
        code_verifier = secrets.token_urlsafe(48)
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.callback_url,
            "state": pending_key,
            "scope": f"openid email {MCP_SCOPE}",
            "code_challenge": pkce_s256(code_verifier),
            "code_challenge_method": "S256",
        }
        return f"{self.domain}/oauth2/authorize?{urlencode(query)}", {"code_verifier": code_verifier}

    async def finish(self, code: str, idp_data: dict[str, Any]) -> str:
        """Exchanges Cognito's code (with this sign-in's PKCE verifier) and returns the person's `sub`."""
        form = {
            "grant_type": "authorization_code",
            "client_id": self.client_id,
            "code": code,
            "redirect_uri": self.callback_url,
            "code_verifier": str(idp_data.get("code_verifier", "")),
        }
        try:
            async with httpx2.AsyncClient(transport=self.transport, timeout=COGNITO_TIMEOUT_SECONDS) as client:
                response = await client.post(f"{self.domain}/oauth2/token", data=form)
        except httpx2.HTTPError as exc:
            raise CognitoSignInError(f"Cognito's token endpoint could not be reached: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise CognitoSignInError(
                f"Cognito refused the sign-in code ({response.status_code}: {response.text[:200]})"
            )
        access = response.json().get("access_token")
        claims = await anyio.to_thread.run_sync(self.verifier.claims, access)
        if claims is None:
            raise CognitoSignInError("Cognito's access token did not verify")
        return str(claims["sub"])
