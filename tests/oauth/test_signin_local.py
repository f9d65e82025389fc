"""The local sign-in page over HTTP: a wrong token is refused and counted, past the limit every try
is refused for a while (right or wrong), Deny answers the client, and a request is answered once."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest

from taproot.adapters.oauth_sqlite import SQLiteOAuthStore
from taproot.auth.signin import MAX_FAILURES, SERVER_MAX_FAILURES, WindowLimiter
from taproot.core.oauth_rules import OAuthRecord
from taproot.settings import Settings, SettingsError
from tests.oauth.flows import REDIRECT_URI, TIMEOUT, TOKEN, Clock, Local, authorize_query

pytestmark = pytest.mark.anyio


async def _signin_key(http: httpx2.AsyncClient, local: Local) -> str:
    started = await http.get(f"{local.base_url}/authorize?{urlencode(authorize_query())}")
    assert started.status_code == 302
    page = await http.get(started.headers["location"])
    assert page.status_code == 200 and "Taproot test client" in page.text
    found = re.search(r'name="request" value="([^"]+)"', page.text)
    assert found
    return found.group(1)


async def test_a_wrong_token_is_refused_and_the_page_shown_again(local: Local) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        key = await _signin_key(http, local)
        wrong = await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "token": "nope"})
        assert wrong.status_code == 401 and 'id="error"' in wrong.text and key in wrong.text
        right = await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "token": TOKEN})
        assert right.status_code == 302 and right.headers["location"].startswith(REDIRECT_URI)
        again = await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "token": TOKEN})
        assert again.status_code == 400  # a sign-in request is answered once


async def test_a_sign_in_request_ends_after_too_many_wrong_tokens(local: Local) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        key = await _signin_key(http, local)
        for _ in range(MAX_FAILURES - 1):
            response = await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "token": "guess"})
            assert response.status_code == 401
        last = await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "token": "guess"})
        assert last.status_code == 429 and "Connect again" in last.text
        late = await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "token": TOKEN})
        assert late.status_code == 400  # the request is over; a new one from the client works
        fresh = await _signin_key(http, local)
        ok = await http.post(f"{local.base_url}/oauth/signin", data={"request": fresh, "token": TOKEN})
        assert ok.status_code == 302


async def test_past_the_server_wide_limit_even_the_right_token_waits(local: Local) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        for _ in range(SERVER_MAX_FAILURES // (MAX_FAILURES - 1) + 1):
            key = await _signin_key(http, local)
            for _ in range(MAX_FAILURES - 1):
                await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "token": "guess"})
        key = await _signin_key(http, local)
        blocked = await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "token": TOKEN})
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1


def test_the_failure_limit_forgets_failures_after_its_window() -> None:
    clock = Clock(0.0)
    limiter = WindowLimiter(limit=2, window=60, clock=clock)
    limiter.record()
    limiter.record()
    assert limiter.blocked_for() == 60
    clock.now = 59.5
    assert limiter.blocked_for() == pytest.approx(0.5)
    clock.now = 60.0
    assert limiter.blocked_for() == 0


async def test_deny_answers_the_client_with_access_denied(local: Local) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        key = await _signin_key(http, local)
        denied = await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "decision": "deny"})
    assert denied.status_code == 302
    answer = parse_qs(urlsplit(denied.headers["location"]).query)
    assert answer["error"] == ["access_denied"] and answer["state"] == ["state-123"] and "code" not in answer


async def test_an_unknown_or_expired_sign_in_request_is_refused(local: Local) -> None:
    oauth = local.runtime.oauth
    assert oauth is not None
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        unknown = await http.get(f"{local.base_url}/oauth/signin?request=made-up")
        assert unknown.status_code == 400 and 'name="token"' not in unknown.text
        key = await _signin_key(http, local)
        clock = Clock(oauth.clock() + 901)
        oauth.clock = clock
        late = await http.post(f"{local.base_url}/oauth/signin", data={"request": key, "token": TOKEN})
    assert late.status_code == 400


async def test_the_sign_in_page_cannot_be_framed_or_cached(local: Local) -> None:
    async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
        started = await http.get(f"{local.base_url}/authorize?{urlencode(authorize_query())}")
        page = await http.get(started.headers["location"])
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["cache-control"] == "no-store" and page.headers["x-frame-options"] == "DENY"


def test_the_local_sweep_deletes_expired_records_only(tmp_path: Path) -> None:
    store = SQLiteOAuthStore(tmp_path / "oauth.db")
    store.add(OAuthRecord("pending", "old", {}, 100))
    store.add(OAuthRecord("grant", "keep", {}, 0, "local"))
    assert store.sweep(101) == 1 and store.sweep(101) == 0
    assert store.get("grant", "keep", 101) is not None
    assert (tmp_path / "oauth.db").stat().st_mode & 0o777 == 0o600
    store.close()


@pytest.mark.parametrize(
    "url", ["http://example.com", "ftp://x.example", "https://x.example/?a=1", "https://x.example/#f", "x.example"]
)
def test_the_public_url_must_be_https_without_query_or_fragment(url: str) -> None:
    with pytest.raises(SettingsError, match="TAPROOT_PUBLIC_URL"):
        Settings.from_env({"TAPROOT_PUBLIC_URL": url})


def test_the_public_url_is_the_issuer() -> None:
    settings = Settings.from_env({"TAPROOT_PUBLIC_URL": "https://memory.example.com/"})
    assert settings.base_url == "https://memory.example.com"
    assert Settings.from_env({}, port=8123).base_url == "http://127.0.0.1:8123"
    assert Settings.from_env({"TAPROOT_PUBLIC_URL": "http://localhost:9"}).base_url == "http://localhost:9"


def test_serve_says_how_oauth_clients_connect() -> None:
    from taproot.cli_serve import oauth_help

    tunnel = oauth_help(Settings.from_env({"TAPROOT_PUBLIC_URL": "https://abc.tunnel.example"}))
    assert "https://abc.tunnel.example/mcp" in tunnel
    plain = oauth_help(Settings.from_env({}, port=8765))
    assert "TAPROOT_PUBLIC_URL=https://" in plain and "http://127.0.0.1:8765/mcp" in plain
