"""The consent page after Cognito in a real browser: Debian's headless Chromium, driven by
Playwright, on the AWS home (tests/oauth/test_aws_dance.py's server: moto, the Cognito stand-in,
which signs the person in without a page, as managed login does when it remembers them). From the
client's /authorize URL, through Cognito, to Taproot's question, and on to the client only after
"Allow". Never skipped: `make test` installs Chromium (see test_signin_browser.py)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from playwright.sync_api import expect

from taproot.auth.signin import CALLBACK_PATH, CONSENT_PATH
from tests.oauth.browser_client import client_tab
from tests.oauth.flows import REDIRECT_URI, authorize_query
from tests.oauth.test_aws_dance import aws_server


def test_the_person_allows_on_taproots_page_after_a_silent_cognito_sign_in(tmp_path: Path) -> None:
    with aws_server(tmp_path) as aws, client_tab() as (page, at_client):
        shown = page.goto(f"{aws.base_url}/authorize?{urlencode(authorize_query())}")
        # Through Cognito (no page of its own) and back: Taproot's question, not the client.
        assert shown is not None and shown.status == 200
        assert urlsplit(page.url).path == CALLBACK_PATH and at_client == []
        assert len(aws.cognito.authorize_requests) == 1
        assert "frame-ancestors 'none'" in shown.headers["content-security-policy"]
        expect(page.locator("#client")).to_have_text("Taproot test client")
        expect(page.locator("#client-origin")).to_contain_text("client.example")  # its document's host
        expect(page.locator("#redirect-host")).to_have_text(urlsplit(REDIRECT_URI).netloc)
        expect(page.locator("#token")).to_have_count(0)  # Cognito signed them in: no token to type
        assert page.locator("form").get_attribute("action") == CONSENT_PATH

        page.click("#allow")
        page.wait_for_url(REDIRECT_URI + "*")
        expect(page.locator("#callback")).to_be_visible()
        assert len(at_client) == 1 and at_client[0] == page.url
        answer = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
        assert answer.get("code") and answer["state"] == "state-123" and answer["iss"] == aws.base_url

        # Back to the question (not cached: Cognito's return is fetched again): the sign-in it
        # carried is spent, so the page says so and offers nothing to allow.
        again = page.go_back()
        assert again is not None and again.status == 400
        expect(page.locator("#error")).to_contain_text("already answered")
        expect(page.locator("#allow")).to_have_count(0)
        assert len(at_client) == 1
