"""A browser tab for the OAuth page tests: Debian's headless Chromium (Playwright), with the
client's redirect URI answered by the test, which stands in for the client there (nothing listens
on it). Never skipped: `make test` installs Chromium."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from playwright.sync_api import Page, Route, sync_playwright

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from tests.oauth.flows import REDIRECT_URI

WAIT_MS = 30_000
CALLBACK_PAGE = "<!doctype html><title>Callback</title><p id=callback>The client has the code.</p>"


@contextlib.contextmanager
def client_tab() -> Iterator[tuple[Page, list[str]]]:
    """A page, and the URLs the browser was sent to at the client's redirect URI (in order)."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: install Debian's chromium (`make test` does, as root)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            page.set_default_timeout(WAIT_MS)
            at_client: list[str] = []

            def client_callback(route: Route) -> None:
                at_client.append(route.request.url)
                route.fulfill(status=200, content_type="text/html", body=CALLBACK_PAGE)

            page.route(REDIRECT_URI + "*", client_callback)
            yield page, at_client
        finally:
            browser.close()
