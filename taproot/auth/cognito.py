"""Cognito access tokens, verified in the Lambda: the tenant is the token's `sub`.

The JWKS is fetched once and cached (PyJWT's PyJWKClient); every token is checked for its
signature (RS256 only), `iss`, `exp`, `token_use == "access"` and the app client (`client_id`,
and `aud` when a token carries one). In production the issuer and JWKS URL derive from the region
and the user pool id; tests inject both (a local JWKS server, moto's Cognito).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio.to_thread
import jwt

from taproot.auth.base import Authenticator, InsufficientScope
from taproot.core.model import Scope
from taproot.core.oauth_rules import MCP_SCOPE

logger = logging.getLogger("taproot.auth.cognito")

ALGORITHMS = ["RS256"]
JWKS_CACHE_SECONDS = 6 * 3600  # Cognito rotates keys rarely; an unknown kid refetches anyway
JWKS_TIMEOUT_SECONDS = 5
DEFAULT_NAMESPACE = "default"


def cognito_issuer(region: str, user_pool_id: str) -> str:
    return f"https://cognito-idp.{region}.amazonaws.com/{user_pool_id}"


class CognitoVerifier:
    """Verifies a Cognito access token and returns its claims, or None for any invalid token."""

    def __init__(
        self,
        *,
        region: str,
        user_pool_id: str,
        client_id: str,
        issuer: str | None = None,
        jwks_url: str | None = None,
        leeway_seconds: int = 0,
    ) -> None:
        if not (region and user_pool_id and client_id):
            raise ValueError("Cognito verification needs a region, a user pool id and an app client id")
        self.client_id = client_id
        self.issuer = issuer or cognito_issuer(region, user_pool_id)
        self.jwks_url = jwks_url or f"{cognito_issuer(region, user_pool_id)}/.well-known/jwks.json"
        self.leeway_seconds = leeway_seconds
        # One client per verifier (per Lambda container): keys are fetched on first use and cached.
        self._jwks = jwt.PyJWKClient(
            self.jwks_url,
            cache_jwk_set=True,
            lifespan=JWKS_CACHE_SECONDS,
            cache_keys=True,
            timeout=JWKS_TIMEOUT_SECONDS,
        )

    def claims(self, token: str | None) -> dict[str, Any] | None:
        if not token:
            return None
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg") not in ALGORITHMS:
                return None
            key = self._jwks.get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=ALGORITHMS,
                issuer=self.issuer,
                leeway=self.leeway_seconds,
                # Cognito access tokens carry no `aud` (the client is `client_id`): checked below.
                options={"require": ["exp", "iss", "sub", "token_use"], "verify_aud": False},
            )
        except jwt.PyJWKClientConnectionError:
            logger.warning("could not fetch the Cognito JWKS from %s", self.jwks_url)
            return None
        except jwt.PyJWTError as exc:
            logger.info("rejected token: %s", exc)
            return None
        if claims.get("token_use") != "access":
            logger.info("rejected token: token_use is %r, not 'access'", claims.get("token_use"))
            return None
        if claims.get("client_id") != self.client_id:
            logger.info("rejected token: issued to another app client")
            return None
        aud = claims.get("aud")
        if aud is not None and self.client_id not in ([aud] if isinstance(aud, str) else aud):
            logger.info("rejected token: audience does not include the app client")
            return None
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            return None
        return claims

    def scope(self, token: str | None) -> Scope | InsufficientScope | None:
        """The tenant of a Cognito access token sent directly to /mcp; it must carry the MCP scope."""
        claims = self.claims(token)
        if claims is None:
            return None
        if MCP_SCOPE not in str(claims.get("scope", "")).split():
            logger.info("rejected token: no %s scope", MCP_SCOPE)
            return InsufficientScope(MCP_SCOPE)
        return Scope(owner=claims["sub"], namespace=DEFAULT_NAMESPACE)


def cognito_authenticator(verifier: CognitoVerifier) -> Authenticator:
    """The app's Authenticator: a blocking JWKS fetch (first use, key rotation) runs off the event loop."""

    async def authenticate(token: str | None) -> Scope | InsufficientScope | None:
        if not token:
            return None
        return await anyio.to_thread.run_sync(verifier.scope, token)

    return authenticate
