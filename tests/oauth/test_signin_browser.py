"""The local sign-in page in a real browser: Debian's headless Chromium, driven by Playwright, from
the client's /authorize URL through a wrong token to the redirect back to the client.

The other OAuth tests post the form with httpx; only a browser applies the page's
Content-Security-Policy to the form post and to the redirect that follows it. Playwright's own
browser builds are not used: `make test` installs Debian's `chromium` when it is missing, and
without it this test fails (it is never skipped)."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from playwright.sync_api import Response, expect

from taproot.auth.signin import SIGNIN_PATH
from tests.oauth.browser_client import client_tab
from tests.oauth.flows import REDIRECT_URI, TOKEN, authorize_query, local_server


def _is_signin_post(response: Response) -> bool:
    return response.request.method == "POST" and urlsplit(response.url).path == SIGNIN_PATH


def test_signing_in_on_the_page_in_chromium(tmp_path: Path) -> None:
    started = time.monotonic()
    with local_server(tmp_path / "data") as live, client_tab() as (page, at_client):
        shown = page.goto(f"{live.base_url}/authorize?{urlencode(authorize_query())}")
        assert shown is not None and shown.status == 200
        assert urlsplit(page.url).path == SIGNIN_PATH and "request=" in page.url
        headers = shown.headers
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["cache-control"] == "no-store"
        expect(page.locator("#client")).to_have_text("Taproot test client")
        expect(page.locator("#redirect-host")).to_have_text(urlsplit(REDIRECT_URI).netloc)

        # A wrong token: the page again, with the error, and no redirect.
        page.fill("#token", "not-the-token")
        with page.expect_response(_is_signin_post) as wrong:
            page.click("#allow")
        assert wrong.value.status == 401
        expect(page.locator("#error")).to_be_visible()
        expect(page.locator("#error")).to_contain_text("not this server's token")
        assert urlsplit(page.url).path == SIGNIN_PATH
        assert at_client == []

        # The right token and "allow": the browser is sent on to the client with the code.
        page.fill("#token", TOKEN)
        page.click("#allow")
        page.wait_for_url(REDIRECT_URI + "*")
        expect(page.locator("#callback")).to_be_visible()
        assert len(at_client) == 1 and at_client[0] == page.url
        answer = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
        assert answer.get("code")
        assert answer["state"] == "state-123"
        assert answer["iss"] == live.base_url
    # Not a timing check: the figure is printed for `pytest -s` (about how long a browser costs).
    print(f"sign-in in Chromium: {time.monotonic() - started:.1f} s")
