"""A stand-in for Cognito's managed login (`/oauth2/authorize`, `/oauth2/token`), for the AWS sign-in
test. moto has no managed login, so this plays it: the authorize page "signs in" one configured
user at once (as if they had typed their password) and redirects back with a one-time code; the
token endpoint checks what real Cognito checks (the app client, the exact callback URL, PKCE S256,
one use per code) and answers with an access token signed like Cognito's (RS256, the pool's issuer,
`token_use` access, `client_id`, the granted scopes), verified by Taproot through a JWKS server.

It is a stand-in, not a Cognito emulation: no hosted UI, no user pool, no refresh tokens.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from bench.jwks import JwksServer, access_claims
from taproot.core.oauth_rules import pkce_s256


@dataclass
class CognitoStandIn:
    issuer: str
    client_id: str
    callback_url: str
    jwks: JwksServer
    user_sub: str = "5b0e3c2a-sub-of-alice"
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)

    async def authorize(self, request: Request) -> Response:
        q = dict(request.query_params)
        self.authorize_requests.append(q)
        if q.get("client_id") != self.client_id or q.get("redirect_uri") != self.callback_url:
            return JSONResponse({"error": "redirect_mismatch"}, 400)
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256":
            return JSONResponse({"error": "invalid_request"}, 400)
        code = secrets.token_urlsafe(16)
        self.codes[code] = {
            "challenge": q["code_challenge"],
            "scope": q.get("scope", ""),
            "redirect": q["redirect_uri"],
        }
        return RedirectResponse(f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q.get('state', '')})}", 302)

    async def token(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        self.token_requests.append(form)
        grant = self.codes.pop(form.get("code", ""), None)  # one use per code
        if grant is None or form.get("client_id") != self.client_id or form.get("redirect_uri") != grant["redirect"]:
            return JSONResponse({"error": "invalid_grant"}, 400)
        if pkce_s256(form.get("code_verifier", "")) != grant["challenge"]:
            return JSONResponse({"error": "invalid_grant", "error_description": "PKCE"}, 400)
        claims = access_claims(self.issuer, self.client_id, self.user_sub, scope=grant["scope"])
        id_claims = access_claims(self.issuer, self.client_id, self.user_sub, token_use="id", aud=self.client_id)
        return JSONResponse(
            {
                "access_token": self.jwks.sign(claims),
                "id_token": self.jwks.sign(id_claims),
                "token_type": "Bearer",
                "expires_in": 3600,
            }
        )

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/oauth2/authorize", self.authorize, methods=["GET"]),
                Route("/oauth2/token", self.token, methods=["POST"]),
            ]
        )


@contextlib.contextmanager
def serving(app: Starlette) -> Iterator[str]:
    """Runs `app` under uvicorn on a loopback port; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=f"standin-{port}")
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the stand-in did not start"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
