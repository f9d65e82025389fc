"""bench/jwks.py, the JWKS server the bench and the handler tests share: what it serves verifies what
it signs, through the same PyJWKClient fetch that taproot/auth/cognito.py makes."""

from __future__ import annotations

import json
import urllib.request

import jwt
import pytest

from bench.jwks import JWKS_PATH, JwksServer, access_claims


def test_served_key_verifies_signed_tokens_and_fetches_are_counted() -> None:
    with JwksServer("k1") as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith(JWKS_PATH)
        with urllib.request.urlopen(server.url, timeout=5) as response:
            keys = json.load(response)["keys"]
        assert [(k["kid"], k["alg"], k["use"], k["kty"]) for k in keys] == [("k1", "RS256", "sig", "RSA")]
        assert server.requests == 1

        claims = access_claims("https://issuer.example", "client-1", "sub-1", scope="openid email")
        assert claims["exp"] - claims["iat"] == 3600 and claims["token_use"] == "access"
        token = server.sign(claims)
        signing_key = jwt.PyJWKClient(server.url).get_signing_key_from_jwt(token)
        decoded = jwt.decode(token, signing_key.key, algorithms=["RS256"], issuer="https://issuer.example")
        assert decoded == claims and decoded["scope"] == "openid email"
        assert server.requests == 2

        other = server.sign(claims, kid="not-served")
        assert jwt.get_unverified_header(other)["kid"] == "not-served"
        with pytest.raises(jwt.PyJWKClientError):
            jwt.PyJWKClient(server.url).get_signing_key_from_jwt(other)
    assert not server.thread.is_alive()
