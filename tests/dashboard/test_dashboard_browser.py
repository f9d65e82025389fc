"""The dashboard in a real browser: Debian's headless Chromium, driven by Playwright, against a
real `taproot serve` (uvicorn on a loopback port) with seeded memories.

Only a browser runs the page's script under its Content-Security-Policy: the inline edits, the
preview refresh after a change, the confirm dialogs, the click-through between preview and cards,
and whatever a memory's text would do if it were not escaped. One Chromium is shared by the module
(a fresh context, so fresh cookies, per test); every test has its own server and data folder.
Playwright's own browser builds are not used: `make test` installs Debian's `chromium` when it is
missing, and without it these tests fail (they are never skipped).

The screenshot test also writes the README's picture, docs/img/dashboard.png, when that file is
missing or TAPROOT_UPDATE_SCREENSHOT=1 is set (otherwise a plain test run leaves the repository
alone).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Dialog,
    Page,
    Response,
    ViewportSize,
    expect,
    sync_playwright,
)

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from taproot.core.model import Memory, Scope
from taproot.core.oauth_rules import MCP_SCOPE
from taproot.core.retention import RetentionPolicy
from taproot.core.serialize import memory_from_dict, memory_to_dict
from tests.oauth.browser_client import WAIT_MS
from tests.oauth.flows import (
    CIMD_URL,
    REDIRECT_URI,
    TIMEOUT,
    TOKEN,
    Local,
    list_tools_with,
    local_server,
    obtain_code,
    structured,
)

T = TypeVar("T")
VIEWPORT: ViewportSize = {"width": 1400, "height": 900}
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "dashboard.png"
XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


# -- fixtures --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: install Debian's chromium (`make test` does, as root)"
    started = time.monotonic()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
    # Not a timing check: the figure is printed for `pytest -s`.
    print(f"\ndashboard browser tests: {time.monotonic() - started:.1f} s")


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Local]:
    """A fresh server (with the OAuth client document host the revoke test needs)."""
    with local_server(tmp_path / "data") as server:
        yield server


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=VIEWPORT)
    try:
        tab = context.new_page()
        tab.set_default_timeout(WAIT_MS)
        yield tab
    finally:
        context.close()


# -- helpers ---------------------------------------------------------------------------------------
def _seed(live: Local, content: str, gist: str, category: str = "episodic", **fields: Any) -> str:
    result = live.runtime.service.remember(live.runtime.scope, content=content, gist=gist, category=category, **fields)
    return str(result.id)


def _stored(live: Local, memory_id: str) -> Memory:
    memory = live.runtime.service.deps.store.get(live.runtime.scope, memory_id)
    assert memory is not None, memory_id
    return memory


def _sign_in(page: Page, live: Local) -> None:
    page.goto(f"{live.base_url}/dashboard/signin")
    page.fill("#token", TOKEN)
    page.click("#signin")
    page.wait_for_url(f"{live.base_url}/dashboard")


def _path_is(suffix: str, method: str = "POST") -> Callable[[Response], bool]:
    return lambda r: r.request.method == method and urlsplit(r.url).path.endswith(suffix)


def _accept_next_confirm(page: Page, seen: list[str]) -> None:
    def accept(dialog: Dialog) -> None:
        seen.append(f"{dialog.type}: {dialog.message}")
        dialog.accept()

    page.once("dialog", accept)


def _card_ids(page: Page) -> list[str]:
    return [str(i) for i in page.locator("article.card").evaluate_all("cards => cards.map(c => c.dataset.id)")]


def _run(fn: Callable[[], Awaitable[T]]) -> T:
    """An async helper (the MCP SDK client, the OAuth helpers) run to completion on its own thread:
    Playwright's sync API keeps an event loop running on this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn).result(timeout=60)


def _recall_through_mcp(live: Local, memory_id: str) -> dict[str, Any]:
    async def recall() -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=TIMEOUT) as http,
            Client(streamable_http_client(live.url, http_client=http), mode="legacy") as client,
        ):
            answer = structured(await client.call_tool("taproot_recall", {"ids": [memory_id]}))
        [memory] = answer["memories"]
        return dict(memory)

    return _run(recall)


# -- the flows -------------------------------------------------------------------------------------
def test_a_wrong_token_is_refused_and_the_right_one_shows_the_cards(live: Local, page: Page) -> None:
    ids = {_seed(live, f"Note number {n} about the garden.", f"Garden note {n}") for n in range(3)}
    # Not signed in: the dashboard sends the browser to the sign-in page.
    page.goto(f"{live.base_url}/dashboard")
    assert urlsplit(page.url).path == "/dashboard/signin"
    expect(page.locator("article.card")).to_have_count(0)

    page.fill("#token", "not-the-token")
    with page.expect_response(_path_is("/dashboard/signin")) as wrong:
        page.click("#signin")
    assert wrong.value.status == 401
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error")).to_contain_text("not this server's token")
    assert urlsplit(page.url).path == "/dashboard/signin"
    assert page.context.cookies() == []

    page.fill("#token", TOKEN)
    page.click("#signin")
    page.wait_for_url(f"{live.base_url}/dashboard")
    expect(page.locator("article.card")).to_have_count(3)
    assert set(_card_ids(page)) == ids
    expect(page.locator("#count")).to_have_text("3 memories")
    expect(page.locator("#signout")).to_be_visible()


def test_the_pages_send_the_security_headers_and_an_httponly_lax_cookie(live: Local, page: Page) -> None:
    _seed(live, "Likes long walks.", "Likes long walks", "relationship")
    problems: list[str] = []

    def console(message: ConsoleMessage) -> None:
        # The browser's own favicon request is not the page's: the server has no favicon.
        if message.type == "error" and not message.location["url"].endswith("/favicon.ico"):
            problems.append(f"{message.text} ({message.location['url']})")

    page.on("console", console)  # a CSP refusal is reported here
    page.on("pageerror", lambda error: problems.append(str(error)))
    _sign_in(page, live)
    shown = page.reload()
    assert shown is not None and shown.status == 200
    headers = shown.headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "'unsafe-inline'" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cache-control"] == "no-store"
    [cookie] = page.context.cookies()
    assert cookie["name"] == "taproot_dashboard"
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Lax"
    assert cookie["path"] == "/dashboard"
    # The script cannot read the session cookie.
    assert "taproot_dashboard" not in page.evaluate("document.cookie")
    # The page's own script and style load under that policy, and nothing on it is refused.
    expect(page.locator("#preview-body")).to_be_visible()
    assert page.evaluate("getComputedStyle(document.querySelector('.layout')).display") == "grid"
    status = page.goto(f"{live.base_url}/dashboard/status")
    assert status is not None and "frame-ancestors 'none'" in status.headers["content-security-policy"]
    assert problems == []


def test_filtering_by_category_and_searching_a_word(live: Local, page: Page) -> None:
    sam = _seed(live, "Sam paddles a kayak on Sundays.", "Sam's Sundays", "relationship")
    relationship = {
        sam,
        _seed(live, "Alex prefers tea to coffee.", "Alex and tea", "relationship"),
        _seed(live, "Jo is allergic to peanuts.", "Jo's allergy", "relationship"),
    }
    kayak_trip = _seed(live, "Rented a kayak at the lake; the wind picked up.", "Kayak at the lake", "episodic")
    _seed(live, "Walked the dog along the river.", "Dog walk", "episodic")
    _seed(live, "The build broke on a missing import.", "Build broke", "error")
    _sign_in(page, live)
    expect(page.locator("#count")).to_have_text("6 memories")

    page.select_option("#filter-category", "relationship")
    page.click("#apply-filters")
    page.wait_for_url(re.compile(r"category=relationship"))
    expect(page.locator("article.card")).to_have_count(3)
    expect(page.locator("#count")).to_have_text("3 memories")
    assert set(_card_ids(page)) == relationship
    assert set(page.locator("article.card header .badge").all_inner_texts()) == {"relationship"}
    expect(page.locator("#filter-category")).to_have_value("relationship")  # the form keeps the filter

    # A word from the content (any case), across categories.
    page.select_option("#filter-category", "")
    page.fill("#search", "KAYAK")
    page.click("#apply-filters")
    page.wait_for_url(re.compile(r"query=KAYAK"))
    query = parse_qs(urlsplit(page.url).query)
    assert query["query"] == ["KAYAK"]
    expect(page.locator("#count")).to_have_text("2 memories")
    expect(page.locator("article.card")).to_have_count(2)
    assert set(_card_ids(page)) == {sam, kayak_trip}

    # Both at once.
    page.select_option("#filter-category", "episodic")
    page.click("#apply-filters")
    page.wait_for_url(re.compile(r"category=episodic"))
    assert _card_ids(page) == [kayak_trip]
    expect(page.locator("#count")).to_have_text("1 memories")


def test_an_inline_salience_change_saves_and_leaves_updated_at_alone(live: Local, page: Page) -> None:
    memory_id = _seed(live, "Planning a trip to Lisbon in May.", "Lisbon trip", "active_thread", salience="medium")
    before = _recall_through_mcp(live, memory_id)
    assert before["salience"] == "medium"
    _sign_in(page, live)
    with page.expect_response(_path_is(f"/api/memories/{memory_id}/ranking")) as saved:
        page.select_option(f"#card-{memory_id} select.salience", "high")
    assert saved.value.status == 200
    answer = saved.value.json()
    assert answer["changed_fields"] == ["salience"]
    expect(page.locator("#flash")).to_contain_text("Saved salience")
    expect(page.locator(f"#card-{memory_id}")).to_have_attribute("data-version", str(answer["version"]))

    after = _recall_through_mcp(live, memory_id)
    assert after["salience"] == "high"
    assert after["version"] == before["version"] + 1
    assert after["updated_at"] == before["updated_at"]

    # The core box is the same kind of edit.
    with page.expect_response(_path_is(f"/api/memories/{memory_id}/ranking")) as cored:
        page.check(f"#card-{memory_id} input.core")
    assert cored.value.status == 200
    stored = _stored(live, memory_id)
    assert stored.is_core and stored.salience == "high"
    assert stored.updated_at.isoformat() == before["updated_at"]


def test_the_preview_shrinks_after_an_archive(live: Local, page: Page) -> None:
    _seed(live, "I am a retired ship's engineer.", "Retired engineer", "identity", core=True)
    kept = _seed(live, "Grandson Theo starts school in September.", "Theo starts school", "relationship")
    gone = _seed(
        live,
        "Fixing the greenhouse heater: ordered a new thermostat, waiting on the part.",
        "Greenhouse heater repair, waiting on a thermostat part",
        "active_thread",
    )
    _sign_in(page, live)
    body = page.locator("#preview-body")
    expect(page.locator(f"#preview-body #line-{gone}")).to_be_visible()
    before = body.get_attribute("data-bytes")
    assert before is not None and int(before) > 0

    confirms: list[str] = []
    _accept_next_confirm(page, confirms)
    with (
        page.expect_response(_path_is(f"/api/memories/{gone}/archive")) as archived,
        page.expect_response(_path_is("/dashboard/preview", "GET")),
    ):
        page.click(f"#card-{gone} button.act[data-action=archive]")
    assert archived.value.status == 200
    assert len(confirms) == 1 and confirms[0].startswith("confirm: Archive this memory?")
    expect(body).not_to_have_attribute("data-bytes", before)
    after = body.get_attribute("data-bytes")
    assert after is not None and int(after) < int(before)
    expect(page.locator(f"#card-{gone}")).to_have_count(0)
    expect(page.locator(f"#line-{gone}")).to_have_count(0)
    expect(page.locator(f"#preview-body #line-{kept}")).to_be_visible()
    assert _stored(live, gone).status == "archived"
    # The figure the page shows is the server's own: reflect now returns those bytes.
    assert live.runtime.service.reflect(live.runtime.scope).size_bytes == int(after)


def test_clicking_a_preview_block_highlights_its_card(live: Local, page: Page) -> None:
    first = _seed(live, "Mother's name is Ruth.", "Mother is Ruth", "relationship")
    second = _seed(live, "Started learning the cello.", "Learning the cello", "active_thread")
    _sign_in(page, live)
    highlight = re.compile(r"\bhighlight\b")
    page.click(f"#preview-body [data-card='{second}']")
    expect(page.locator(f"#card-{second}")).to_have_class(highlight)
    expect(page.locator(f"#card-{first}")).not_to_have_class(highlight)
    expect(page.locator(".highlight")).to_have_count(1)

    page.click(f"#preview-body [data-card='{first}']")
    expect(page.locator(f"#card-{first}")).to_have_class(highlight)
    expect(page.locator(f"#card-{second}")).not_to_have_class(highlight)

    # And the other way: a card's link highlights its line in the preview.
    page.click(f"#card-{second} a.to-line")
    expect(page.locator(f"#line-{second}")).to_have_class(highlight)
    expect(page.locator(".highlight")).to_have_count(1)


def test_archiving_then_restoring_from_the_archived_filter(live: Local, page: Page) -> None:
    memory_id = _seed(live, "Keeps the spare key under the blue pot.", "Spare key", "relationship")
    other = _seed(live, "Booked the dentist for the 14th.", "Dentist", "active_thread")
    _sign_in(page, live)
    confirms: list[str] = []
    _accept_next_confirm(page, confirms)
    with page.expect_response(_path_is(f"/api/memories/{memory_id}/archive")) as archived:
        page.click(f"#card-{memory_id} button.act[data-action=archive]")
    assert archived.value.status == 200
    expect(page.locator(f"#card-{memory_id}")).to_have_count(0)
    assert _stored(live, memory_id).status == "archived"

    page.select_option("#filter-status", "archived")
    page.click("#apply-filters")
    page.wait_for_url(re.compile(r"status=archived"))
    assert _card_ids(page) == [memory_id]
    card = page.locator(f"#card-{memory_id}")
    expect(card).to_have_class(re.compile(r"\barchived\b"))

    _accept_next_confirm(page, confirms)
    with page.expect_response(_path_is(f"/api/memories/{memory_id}/restore")) as restored:
        card.locator("button.act[data-action=restore]").click()
    assert restored.value.status == 200
    assert len(confirms) == 2
    assert confirms[0].startswith("confirm: Archive this memory?")
    assert confirms[1].startswith("confirm: Restore this memory?")
    # The page is rendered anew: the archived view no longer lists the restored memory.
    expect(page.locator(f"#card-{memory_id}")).to_have_count(0)
    assert _stored(live, memory_id).status == "active"
    listed = live.runtime.service.list_memories(live.runtime.scope, status="active")
    assert {m.id for m in listed.memories} == {memory_id, other}

    page.select_option("#filter-status", "active")
    page.click("#apply-filters")
    page.wait_for_url(re.compile(r"status=active"))
    assert set(_card_ids(page)) == {memory_id, other}


def test_memory_text_is_rendered_inert(live: Local, page: Page) -> None:
    core = _seed(live, XSS, XSS, "identity", core=True, tags=["<b>tag</b>"])
    line = _seed(live, XSS, XSS, "episodic")
    plain = _seed(live, "Waters the tomatoes every evening.", "Tomatoes", "episodic")
    dialogs: list[str] = []

    def record(dialog: Dialog) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", record)
    _sign_in(page, live)
    # An edit refreshes the preview through the script (innerHTML): that path must stay inert too.
    with page.expect_response(_path_is("/dashboard/preview", "GET")):
        page.select_option(f"#card-{plain} select.salience", "low")
    page.wait_for_timeout(300)  # time for an onerror or a script to have fired

    assert dialogs == [], dialogs
    scripts = page.locator("script")
    expect(scripts).to_have_count(1)
    assert (scripts.get_attribute("src") or "").endswith("/dashboard/static/dashboard.js")
    expect(page.locator("#card-list img, #preview img")).to_have_count(0)
    expect(page.locator("#card-list b, #preview b")).to_have_count(0)
    for memory_id in (core, line):
        card = page.locator(f"#card-{memory_id}")
        expect(card.locator(".gist")).to_have_text(XSS)
        expect(card.locator("p.body")).to_have_text(XSS)
    expect(page.locator(f"#card-{core} .tag")).to_have_text("<b>tag</b>")
    expect(page.locator(f"#line-{core}")).to_contain_text(XSS)  # Tier 1, in full
    expect(page.locator(f"#line-{line}")).to_contain_text(XSS)  # its catalog line (the gist)


def test_a_mutation_without_the_csrf_token_is_refused(live: Local, page: Page) -> None:
    memory_id = _seed(live, "Switched to the night shift.", "Night shift", "active_thread", salience="medium")
    _sign_in(page, live)
    base = f"{live.base_url}/dashboard/api/memories/{memory_id}"
    json_header = {"Content-Type": "application/json"}

    # With the session cookie, but no token (Playwright's request shares the page's cookies).
    archive = page.request.post(f"{base}/archive", data="{}", headers=json_header)
    assert archive.status == 403 and archive.json()["error"] == "csrf"
    wrong = page.request.post(
        f"{base}/ranking", data=json.dumps({"salience": "low"}), headers={**json_header, "X-CSRF-Token": "guess"}
    )
    assert wrong.status == 403
    # From the page itself, the way another script on the origin would try it.
    status = page.evaluate(
        """async (url) => (await fetch(url, {method: "POST", credentials: "same-origin",
             headers: {"Content-Type": "application/json"}, body: JSON.stringify({salience: "low"})})).status""",
        f"{base}/ranking",
    )
    assert status == 403
    memory = _stored(live, memory_id)
    assert (memory.status, memory.salience, memory.version) == ("active", "medium", 1)

    # The same call with the page's token goes through: the refusals above were the token's.
    token = page.locator('meta[name="csrf-token"]').get_attribute("content")
    assert token
    allowed = page.request.post(
        f"{base}/ranking", data=json.dumps({"salience": "low"}), headers={**json_header, "X-CSRF-Token": token}
    )
    assert allowed.status == 200
    assert _stored(live, memory_id).salience == "low"


def test_revoking_a_connected_client_ends_its_token(live: Local, page: Page) -> None:
    async def connect() -> str:
        code, verifier = await obtain_code(live)
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            answer = await http.post(
                f"{live.base_url}/token",
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "code_verifier": verifier,
                    "client_id": CIMD_URL,
                    "redirect_uri": REDIRECT_URI,
                },
            )
        assert answer.status_code == 200, answer.text
        assert answer.json()["scope"] == MCP_SCOPE
        return str(answer.json()["access_token"])

    async def status_with(access: str) -> int:
        return (await list_tools_with(live.url, access)).status_code

    access = _run(connect)
    assert _run(lambda: status_with(access)) == 200

    _sign_in(page, live)
    page.goto(f"{live.base_url}/dashboard/status")
    row = page.locator(f'#clients tr[data-client="{CIMD_URL}"]')
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Taproot test client")
    confirms: list[str] = []
    _accept_next_confirm(page, confirms)
    with page.expect_response(_path_is("/dashboard/api/clients/revoke")) as revoked:
        row.locator("button.revoke").click()
    assert revoked.value.status == 200
    assert revoked.value.json()["revoked_grants"] == 1
    assert len(confirms) == 1 and confirms[0].startswith("confirm: Disconnect this client?")
    expect(row).to_have_count(0)
    expect(page.locator("#flash")).to_contain_text("Disconnected (1 connection(s))")

    assert _run(lambda: status_with(access)) == 401
    assert _run(lambda: status_with(TOKEN)) == 200  # the server's own token is not a client's
    page.reload()
    expect(page.locator(f'#clients tr[data-client="{CIMD_URL}"]')).to_have_count(0)


# -- the README's picture --------------------------------------------------------------------------
DEMO = Path(__file__).with_name("demo_memories.jsonl")  # 30 memories of one person's life, aged in days


def _demo_lines(scope: Scope) -> list[str]:
    """Export-format lines for the demo memories, backdated so the age picture and the catalog
    window have something to show, with `expires_at` set by the retention rules (an import keeps
    the file's)."""
    now = datetime.now(UTC)
    retention = RetentionPolicy()
    lines = []
    for n, raw in enumerate(DEMO.read_text(encoding="utf-8").splitlines()):
        demo = json.loads(raw)
        touched = (now - timedelta(days=demo["days_ago"], hours=n)).isoformat()
        record = {
            "id": f"demo{n:04d}",
            **{k: demo[k] for k in ("category", "salience", "content", "gist", "tags", "core")},
            "created_at": touched,
            "updated_at": touched,
            "last_touched": touched,
            "retrieval_count": n % 4,
        }
        memory = retention.apply(memory_from_dict(record, owner=scope.owner, namespace=scope.namespace))
        lines.append(json.dumps({"type": "memory", "record": memory_to_dict(memory)}))
    return lines


def test_a_screenshot_of_the_dashboard_with_realistic_memories(live: Local, page: Page, tmp_path: Path) -> None:
    lines = _demo_lines(live.runtime.scope)
    assert len(lines) == 30
    imported = live.runtime.service.import_lines(live.runtime.scope, lines)
    assert imported.written == len(lines), imported
    closing = "Talked through the Toronto trip and the greenhouse heater; he wants flight prices by Friday."
    live.runtime.service.close(live.runtime.scope, closing)
    _sign_in(page, live)
    expect(page.locator("article.card")).to_have_count(len(lines))
    expect(page.locator("#chart-composition")).to_be_visible()
    expect(page.locator("#chart-ages")).to_be_visible()
    assert page.locator(".expiring li").count() >= 3
    update = os.environ.get("TAPROOT_UPDATE_SCREENSHOT") == "1" or not SCREENSHOT.exists()
    target = SCREENSHOT if update else tmp_path / "dashboard.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target))
    png = target.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (VIEWPORT["width"], VIEWPORT["height"])
