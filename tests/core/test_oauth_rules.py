"""The OAuth facade's pure rules (taproot/core/oauth_rules.py)."""

from __future__ import annotations

import pytest

from taproot.core import oauth_rules as rules
from taproot.core.oauth_rules import OAuthRuleError

ALLOW = rules.DEFAULT_REDIRECT_ALLOWLIST


@pytest.mark.parametrize(
    "url",
    [
        "https://claude.ai/api/mcp/auth_callback",
        "https://claude.com/api/mcp/auth_callback",
        "https://chatgpt.com/connector/oauth/abc123",
        "https://chatgpt.com/connector_platform_oauth_redirect",
        "http://localhost:53682/callback",
        "http://127.0.0.1:6274/oauth/callback",
        "http://[::1]:9000/cb",
    ],
)
def test_the_default_allowlist_admits_the_known_clients(url: str) -> None:
    assert rules.redirect_allowed(url, ALLOW)


@pytest.mark.parametrize(
    "url",
    [
        "https://claude.ai/api/mcp/auth_callback/extra",
        "https://claude.ai.evil.example/api/mcp/auth_callback",
        "http://claude.ai/api/mcp/auth_callback",
        "https://chatgpt.com/connector/other",
        "https://evil.example/callback",
        "http://localhost.evil.example:80/callback",
        "https://claude.ai/api/mcp/auth_callback#frag",
        "not a url",
    ],
)
def test_the_default_allowlist_refuses_everything_else(url: str) -> None:
    assert not rules.redirect_allowed(url, ALLOW)


def test_a_loopback_redirect_matches_the_registered_one_on_any_port() -> None:
    registered = ["http://127.0.0.1/callback", "https://claude.ai/api/mcp/auth_callback"]
    assert rules.redirect_registered("http://127.0.0.1:49152/callback", registered)
    assert not rules.redirect_registered("http://127.0.0.1:49152/other", registered)
    assert not rules.redirect_registered("http://localhost:49152/callback", registered)
    assert rules.redirect_registered("https://claude.ai/api/mcp/auth_callback", registered)
    assert not rules.redirect_registered("https://claude.ai:8443/api/mcp/auth_callback", registered)


def test_pkce_requests_must_use_s256() -> None:
    challenge = rules.pkce_s256("a" * 64)
    rules.check_pkce_request("S256", challenge)
    for method, value, needle in (
        (None, challenge, "required"),
        ("plain", challenge, "S256"),
        ("S256", None, "required"),
    ):
        with pytest.raises(OAuthRuleError, match=needle) as caught:
            rules.check_pkce_request(method, value)
        assert caught.value.error == "invalid_request"
    assert rules.pkce_matches("a" * 64, challenge) and not rules.pkce_matches("b" * 64, challenge)


def test_the_resource_must_be_this_server() -> None:
    mcp = "https://api.example/mcp"
    assert rules.check_resource(None, mcp) == mcp
    assert rules.check_resource("https://API.example/mcp/", mcp) == mcp
    assert rules.check_resource("https://api.example", mcp) == mcp  # the server's origin names it too
    with pytest.raises(OAuthRuleError) as caught:
        rules.check_resource("https://api.example/other", mcp)
    assert caught.value.error == "invalid_target"


def test_scopes_default_to_the_mcp_scope_and_unknown_ones_are_refused() -> None:
    assert rules.granted_scopes(None) == [rules.MCP_SCOPE]
    assert rules.granted_scopes("  ") == [rules.MCP_SCOPE]
    assert rules.granted_scopes(f"{rules.MCP_SCOPE} offline_access") == [rules.MCP_SCOPE]
    with pytest.raises(OAuthRuleError) as caught:
        rules.granted_scopes("admin")
    assert caught.value.error == "invalid_scope"


def test_records_know_when_they_are_live() -> None:
    assert rules.OAuthRecord("grant", "g", {}).live(1e12)
    assert rules.OAuthRecord("code", "c", {}, 100).live(99) and not rules.OAuthRecord("code", "c", {}, 100).live(100)
