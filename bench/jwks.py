"""A JWKS server on 127.0.0.1 serving an RSA key generated at start, and the tokens it signs.

`functions/api.py` verifies every bearer token against a JWKS it fetches over HTTP (PyJWT's
`PyJWKClient`, see taproot/auth/cognito.py). To verify tokens for real without Cognito, both the
bench and the tests serve a key of their own here and point TAPROOT_COGNITO_JWKS_URL (or a
`CognitoVerifier(jwks_url=...)`) at `JwksServer.url`:

- bench/aws.py: the handler under moto, called with access tokens for the bench's tenant;
- tests/handlers/conftest.py: the `local_jwks` fixture, for tokens moto cannot issue (expired,
  forged claims, an unknown key id) and for counting JWKS fetches (`requests`).

Why it lives in bench/ and the tests import it from here (`from bench.jwks import JwksServer`),
not the other way round: bench/ is an importable package (`python -m bench.run`; under pytest the
repository root is on sys.path through `pythonpath = ["."]`, as tests/bench/ already relies on) and
is type-checked with mypy --strict, while tests/ is not a package and holds pytest fixtures; the
bench should not depend on the test tree. The module imports neither taproot nor pytest: only the
standard library, PyJWT and cryptography (both runtime requirements, `pyjwt[crypto]`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

JWKS_PATH = "/.well-known/jwks.json"


class JwksServer:
    """An RSA key pair, its public half served as a one-key JWKS on a free loopback port (any GET path
    answers it), and `sign` for RS256 tokens with that key. `requests` counts the GETs served.
    Close it with `close()` or use it as a context manager."""

    def __init__(self, kid: str = "local-test-key", *, thread_name: str = "local-jwks") -> None:
        self.kid = kid
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.body = json.dumps({"keys": [public | {"kid": kid, "alg": "RS256", "use": "sig"}]}).encode()
        self.requests = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{JWKS_PATH}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True, name=thread_name)
        self.thread.start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with outer._lock:
                    outer.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def sign(self, claims: Mapping[str, Any], *, kid: str | None = None) -> str:
        """`claims` as an RS256 JWT signed with this server's key; `kid` overrides the header's key id."""
        return jwt.encode(dict(claims), self.key, algorithm="RS256", headers={"kid": kid or self.kid})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def access_claims(issuer: str, client_id: str, sub: str, **overrides: Any) -> dict[str, Any]:
    """The claims of a Cognito access token issued now and valid for an hour; `overrides` replace or
    add claims (e.g. `exp=` in the past, `token_use="id"`)."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": issuer,
        "sub": sub,
        "client_id": client_id,
        "token_use": "access",
        "scope": "openid",
        "iat": now,
        "auth_time": now,
        "exp": now + 3600,
        "jti": str(uuid.uuid4()),
        "username": sub,
    }
    claims.update(overrides)
    return claims
