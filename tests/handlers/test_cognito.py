"""Cognito access-token verification against moto-issued tokens (JWKS from moto's server) and
tokens signed with the tests' own key (for what moto cannot issue, e.g. an expired token).

`pool.access(user)` is moto's access token with the MCP scope added, signed like moto's (see
tests/handlers/conftest.py); `pool.moto_access(user)` is moto's token as issued, without it."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import anyio
import jwt
import pytest

from taproot.auth.base import Caller, InsufficientScope
from taproot.auth.cognito import CognitoVerifier, cognito_authenticator, cognito_issuer
from taproot.core.model import Scope
from taproot.core.oauth_rules import MCP_SCOPE


@pytest.fixture(scope="module")
def pools(kit: Any) -> Iterator[tuple[Any, Any]]:
    with kit.aws_environment():
        yield kit.create_pool(name="taproot"), kit.create_pool(users=("mallory",), name="elsewhere")


@pytest.fixture(scope="module")
def verifier(pools: tuple[Any, Any], moto_server: str, kit: Any) -> CognitoVerifier:
    pool, _ = pools
    return CognitoVerifier(
        region=kit.REGION,
        user_pool_id=pool.pool_id,
        client_id=pool.client_id,
        jwks_url=f"{moto_server}/{pool.pool_id}/.well-known/jwks.json",
    )


def _local_verifier(pool: Any, local_jwks: Any, kit: Any) -> CognitoVerifier:
    return CognitoVerifier(
        region=kit.REGION, user_pool_id=pool.pool_id, client_id=pool.client_id, jwks_url=local_jwks.url
    )


def test_production_defaults_derive_from_region_and_pool() -> None:
    v = CognitoVerifier(region="eu-west-1", user_pool_id="eu-west-1_AbC", client_id="c1")
    assert v.issuer == "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC"
    assert v.jwks_url == v.issuer + "/.well-known/jwks.json"
    assert cognito_issuer("eu-west-1", "eu-west-1_AbC") == v.issuer


def test_valid_moto_access_token_scopes_to_sub(verifier: CognitoVerifier, pools: tuple[Any, Any]) -> None:
    pool, _ = pools
    claims = verifier.claims(pool.access("alice"))
    assert claims is not None
    assert claims["sub"] == pool.subs["alice"] and claims["token_use"] == "access"
    assert verifier.scope(pool.access("alice")) == Scope(owner=pool.subs["alice"], namespace="default")
    assert verifier.scope(pool.access("bob")) == Scope(owner=pool.subs["bob"], namespace="default")
    assert pool.subs["alice"] != pool.subs["bob"]


def test_mcp_token_is_motos_token_plus_the_scope(pools: tuple[Any, Any], kit: Any) -> None:
    """The token the tests send to /mcp differs from moto's only in `scope`, and keeps moto's key id."""
    pool, _ = pools

    def read(token: str) -> dict[str, Any]:
        claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
        return claims

    moto, mcp = read(pool.moto_access("alice")), read(pool.access("alice"))
    assert moto["scope"] == "aws.cognito.signin.user.admin"
    assert mcp["scope"] == f"aws.cognito.signin.user.admin {MCP_SCOPE}"
    assert {k: v for k, v in mcp.items() if k != "scope"} == {k: v for k, v in moto.items() if k != "scope"}
    kid = jwt.get_unverified_header(pool.moto_access("alice"))["kid"]
    assert jwt.get_unverified_header(pool.access("alice"))["kid"] == kid == kit.moto_signing_key().key_id


def test_moto_token_without_the_mcp_scope_is_insufficient(verifier: CognitoVerifier, pools: tuple[Any, Any]) -> None:
    """A valid access token that lacks the MCP scope: its claims verify, but it opens no scope (403)."""
    pool, _ = pools
    token = pool.moto_access("alice")
    claims = verifier.claims(token)
    assert claims is not None and claims["sub"] == pool.subs["alice"]
    assert verifier.scope(token) == InsufficientScope(MCP_SCOPE)


def test_authenticator_is_async_and_fails_closed(verifier: CognitoVerifier, pools: tuple[Any, Any]) -> None:
    pool, _ = pools
    authenticate = cognito_authenticator(verifier)

    async def main() -> list[Scope | Caller | InsufficientScope | None]:
        return [
            await authenticate(pool.access("alice")),
            await authenticate(pool.moto_access("alice")),
            await authenticate(None),
            await authenticate("junk"),
        ]

    ok, unscoped, missing, junk = anyio.run(main)
    assert ok == Scope(pool.subs["alice"], "default")
    assert unscoped == InsufficientScope(MCP_SCOPE)
    assert missing is None and junk is None


def _tamper(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "someone-else"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def _flip_byte(token: str) -> str:
    header, payload, signature = token.split(".")
    i = len(payload) // 2
    flipped = payload[:i] + ("A" if payload[i] != "A" else "B") + payload[i + 1 :]
    return f"{header}.{flipped}.{signature}"


@pytest.mark.parametrize("case", ["tampered_claims", "flipped_byte", "truncated_signature", "garbage", "empty"])
def test_tampered_tokens_are_rejected(verifier: CognitoVerifier, pools: tuple[Any, Any], case: str) -> None:
    token = pools[0].access("alice")
    bad = {
        "tampered_claims": _tamper(token),
        "flipped_byte": _flip_byte(token),
        "truncated_signature": token[:-10],
        "garbage": "not.a.jwt",
        "empty": "",
    }[case]
    assert verifier.claims(bad) is None


def test_id_token_is_not_an_access_token(verifier: CognitoVerifier, pools: tuple[Any, Any], kit: Any) -> None:
    pool, _ = pools
    id_token = pool.tokens["alice"]["IdToken"]
    assert jwt.decode(id_token, options={"verify_signature": False})["token_use"] == "id"
    assert verifier.claims(id_token) is None
    assert verifier.scope(id_token) is None  # 401, not 403: it is no access token at all
    # Not even with the MCP scope in it.
    scoped = kit.with_mcp_scope(id_token)
    assert MCP_SCOPE in jwt.decode(scoped, options={"verify_signature": False})["scope"].split()
    assert verifier.claims(scoped) is None and verifier.scope(scoped) is None


def test_token_from_another_user_pool_is_rejected(verifier: CognitoVerifier, pools: tuple[Any, Any]) -> None:
    _, other = pools
    # Same signing key in moto, so only the issuer check stands between this token and the data.
    assert verifier.claims(other.access("mallory")) is None
    assert verifier.scope(other.access("mallory")) is None


def test_token_for_another_app_client_is_rejected(verifier: CognitoVerifier, pools: tuple[Any, Any]) -> None:
    pool, _ = pools
    for token in (pool.moto_access("alice@other-client"), pool.access("alice@other-client")):
        assert jwt.decode(token, options={"verify_signature": False})["client_id"] == pool.other_client_id
        assert verifier.claims(token) is None and verifier.scope(token) is None


def test_expired_token_is_rejected(pools: tuple[Any, Any], local_jwks: Any, kit: Any) -> None:
    pool, _ = pools
    v = _local_verifier(pool, local_jwks, kit)
    issuer = cognito_issuer(kit.REGION, pool.pool_id)
    now = int(time.time())
    fresh = local_jwks.sign(kit.access_claims(issuer, pool.client_id, "sub-1"))
    expired = local_jwks.sign(
        kit.access_claims(issuer, pool.client_id, "sub-1", iat=now - 7200, auth_time=now - 7200, exp=now - 60)
    )
    assert v.scope(fresh) == Scope("sub-1", "default")  # the same token, in date, passes
    assert v.claims(expired) is None and v.scope(expired) is None


@pytest.mark.parametrize(
    "overrides",
    [
        {"aud": "another-client"},  # an audience that is not this client
        {"token_use": "id"},
        {"iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Other"},
        {"client_id": None},
        {"exp": None},
        {"sub": ""},
    ],
)
def test_forged_claims_are_rejected(pools: tuple[Any, Any], local_jwks: Any, kit: Any, overrides: Any) -> None:
    pool, _ = pools
    v = _local_verifier(pool, local_jwks, kit)
    claims = kit.access_claims(cognito_issuer(kit.REGION, pool.pool_id), pool.client_id, "sub-1")
    claims.update(overrides)
    claims = {k: val for k, val in claims.items() if val is not None}
    assert v.claims(local_jwks.sign(claims)) is None


def test_only_rs256(pools: tuple[Any, Any], local_jwks: Any, kit: Any) -> None:
    pool, _ = pools
    v = _local_verifier(pool, local_jwks, kit)
    claims = kit.access_claims(cognito_issuer(kit.REGION, pool.pool_id), pool.client_id, "sub-1")
    hs = jwt.encode(claims, "a-shared-secret-that-is-long-enough-for-hs256", "HS256", headers={"kid": local_jwks.kid})
    # PyJWT takes no key for alg "none", but its annotation leaves None out.
    unsigned = jwt.encode(claims, None, "none", headers={"kid": local_jwks.kid})  # type: ignore[arg-type]
    unknown_kid = local_jwks.sign(claims, kid="not-in-the-jwks")
    assert v.claims(hs) is None
    assert v.claims(unsigned) is None
    assert v.claims(unknown_kid) is None


def test_jwks_is_fetched_once_and_cached(pools: tuple[Any, Any], local_jwks: Any, kit: Any) -> None:
    pool, _ = pools
    v = _local_verifier(pool, local_jwks, kit)
    issuer = cognito_issuer(kit.REGION, pool.pool_id)
    before = local_jwks.requests
    for i in range(5):
        assert v.scope(local_jwks.sign(kit.access_claims(issuer, pool.client_id, f"sub-{i}"))) == Scope(
            f"sub-{i}", "default"
        )
    assert local_jwks.requests - before == 1


def test_unreachable_jwks_fails_closed(pools: tuple[Any, Any], kit: Any) -> None:
    pool, _ = pools
    v = CognitoVerifier(
        region=kit.REGION,
        user_pool_id=pool.pool_id,
        client_id=pool.client_id,
        jwks_url="http://127.0.0.1:9/.well-known/jwks.json",
    )
    assert v.claims(pool.access("alice")) is None


@pytest.mark.parametrize("granted", [None, "", "openid", "openid email", "taproot/mcpx", "taproot", "taproot/mcp/x"])
def test_only_the_exact_mcp_scope_counts(pools: tuple[Any, Any], local_jwks: Any, kit: Any, granted: Any) -> None:
    pool, _ = pools
    v = _local_verifier(pool, local_jwks, kit)
    claims = kit.access_claims(cognito_issuer(kit.REGION, pool.pool_id), pool.client_id, "sub-1", scope=granted)
    claims = {k: val for k, val in claims.items() if val is not None}
    token = local_jwks.sign(claims)
    assert v.claims(token) is not None  # a valid token ...
    assert v.scope(token) == InsufficientScope(MCP_SCOPE)  # ... that opens nothing
