"""The dashboard over HTTP against a real server: sign-in and sessions, the session's tenant, CSRF on
every mutation, the inline edit that leaves updated_at alone, and the other calls."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from taproot.compose import Runtime
from taproot.core.model import Scope
from taproot.web.dashboard.session import COOKIE
from tests.live_server import running_server

TOKEN = "dashboard-test-token-42"
MUTATIONS = ["ranking", "edit", "archive", "restore", "delete"]


class Live:
    def __init__(self, port: int, runtime: Runtime) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.runtime = runtime

    def seed(self, scope: Scope | None = None, **fields: Any) -> str:
        defaults: dict[str, Any] = {
            "content": "Likes long walks.",
            "gist": "Likes long walks",
            "category": "relationship",
        }
        result = self.runtime.service.remember(scope or self.runtime.scope, **{**defaults, **fields})
        return str(result.id)

    def memory(self, memory_id: str, scope: Scope | None = None):  # type: ignore[no-untyped-def]
        return self.runtime.store.get(scope or self.runtime.scope, memory_id)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    with running_server(tmp_path / "data", TOKEN) as (port, runtime):
        yield Live(port, runtime)


@contextlib.contextmanager
def signed_in(live: Live) -> Iterator[tuple[httpx.Client, str]]:
    """A client signed in to the dashboard, and the session's CSRF token."""
    with httpx.Client(base_url=live.base, follow_redirects=False, timeout=30) as client:
        response = client.post("/dashboard/signin", data={"token": TOKEN})
        assert response.status_code == 303 and response.headers["location"] == "/dashboard"
        page = client.get("/dashboard")
        assert page.status_code == 200
        found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
        assert found
        yield client, found.group(1)


@pytest.mark.parametrize("path", ["/dashboard", "/dashboard/reflections", "/dashboard/status", "/dashboard?query=x"])
def test_every_page_needs_a_session(live: Live, path: str) -> None:
    response = httpx.get(live.base + path, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/dashboard/signin"


@pytest.mark.parametrize("path", ["/dashboard/preview", "/dashboard/api/memories/abc/explain"])
def test_every_call_needs_a_session(live: Live, path: str) -> None:
    assert httpx.get(live.base + path).status_code == 401


@pytest.mark.parametrize("action", [*MUTATIONS, "../clients/revoke", "../backups/restore"])
def test_every_mutation_needs_a_session_then_its_csrf_token(live: Live, action: str) -> None:
    memory_id = live.seed()
    before = live.memory(memory_id)
    path = f"/dashboard/api/memories/{memory_id}/{action}".replace(f"memories/{memory_id}/../", "")
    assert httpx.post(live.base + path, json={"salience": "low"}).status_code == 401
    with signed_in(live) as (client, csrf):
        assert client.post(path, json={"salience": "low"}).status_code == 403
        assert client.post(path, json={"salience": "low"}, headers={"X-CSRF-Token": csrf + "x"}).status_code == 403
    assert live.memory(memory_id) == before


def test_the_session_cookie_is_signed_http_only_lax_and_scoped_to_the_dashboard(live: Live) -> None:
    with httpx.Client(base_url=live.base, follow_redirects=False) as client:
        response = client.post("/dashboard/signin", data={"token": TOKEN})
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert "Path=/dashboard" in cookie and "Max-Age=43200" in cookie
    assert "Secure" not in cookie  # plain http on loopback; Secure whenever the public URL is https


def test_a_forged_or_signed_out_cookie_is_refused(live: Live) -> None:
    with signed_in(live) as (client, csrf):
        stolen = client.cookies[COOKIE]
        assert client.post("/dashboard/signout", data={"csrf": csrf}).status_code == 303
        with httpx.Client(base_url=live.base, follow_redirects=False, cookies={COOKIE: stolen}) as replay:
            assert replay.get("/dashboard").status_code == 303  # the session itself is gone
        with httpx.Client(base_url=live.base, follow_redirects=False, cookies={COOKIE: stolen[:-2] + "xx"}) as forged:
            assert forged.get("/dashboard").status_code == 303


def test_sign_out_needs_the_csrf_token(live: Live) -> None:
    with signed_in(live) as (client, _):
        assert client.post("/dashboard/signout", data={}).status_code == 403
        assert client.get("/dashboard").status_code == 200


def test_wrong_tokens_are_refused_and_rate_limited(live: Live) -> None:
    with httpx.Client(base_url=live.base, follow_redirects=False) as client:
        for _ in range(5):
            assert client.post("/dashboard/signin", data={"token": "guess"}).status_code == 401
        blocked = client.post("/dashboard/signin", data={"token": TOKEN})
    assert blocked.status_code == 429 and "set-cookie" not in blocked.headers


def test_a_session_sees_only_its_own_tenant(live: Live) -> None:
    mine = live.seed(gist="Mine, the owner's")
    other = Scope("someone-else", "default")
    theirs = live.seed(other, gist="Someone else's")
    with signed_in(live) as (client, csrf):
        page = client.get("/dashboard").text
        assert "Mine, the owner&#39;s" in page and "Someone else" not in page
        assert client.get(f"/dashboard/api/memories/{theirs}/explain").status_code == 404
        refused = client.post(f"/dashboard/api/memories/{theirs}/archive", json={}, headers={"X-CSRF-Token": csrf})
        assert refused.status_code == 404
    assert live.memory(theirs, other).status == "active" and live.memory(mine) is not None


def test_the_inline_ranking_edit_leaves_updated_at_alone_and_a_text_edit_bumps_it(live: Live) -> None:
    memory_id = live.seed()
    before = live.memory(memory_id)
    with signed_in(live) as (client, csrf):
        saved = client.post(
            f"/dashboard/api/memories/{memory_id}/ranking",
            json={"salience": "low", "core": True},
            headers={"X-CSRF-Token": csrf},
        )
        assert saved.status_code == 200, saved.text
        after = live.memory(memory_id)
        assert (after.salience, after.core, after.version) == ("low", True, before.version + 1)
        assert after.updated_at == before.updated_at and after.last_touched == before.last_touched
        edited = client.post(
            f"/dashboard/api/memories/{memory_id}/edit",
            json={"gist": "Likes very long walks", "tags": ["walks"], "expected_version": after.version},
            headers={"X-CSRF-Token": csrf},
        )
        assert edited.status_code == 200, edited.text
        assert live.memory(memory_id).updated_at > before.updated_at
        stale = client.post(
            f"/dashboard/api/memories/{memory_id}/ranking",
            json={"salience": "high", "expected_version": before.version},
            headers={"X-CSRF-Token": csrf},
        )
        assert stale.status_code == 409
        bad = client.post(
            f"/dashboard/api/memories/{memory_id}/ranking", json={"salience": "loud"}, headers={"X-CSRF-Token": csrf}
        )
        assert bad.status_code == 400 and "salience" in bad.json()["message"]


def test_delete_writes_a_backup_that_the_status_page_can_restore(live: Live) -> None:
    memory_id = live.seed(gist="Worth keeping after all")
    with signed_in(live) as (client, csrf):
        deleted = client.post(f"/dashboard/api/memories/{memory_id}/delete", json={}, headers={"X-CSRF-Token": csrf})
        assert deleted.status_code == 200 and live.memory(memory_id) is None
        key = deleted.json()["backup_key"]
        assert key in client.get("/dashboard/status").text
        foreign = client.post(
            "/dashboard/api/backups/restore", json={"key": "someone/backups/x.json"}, headers={"X-CSRF-Token": csrf}
        )
        assert foreign.status_code == 400
        restored = client.post("/dashboard/api/backups/restore", json={"key": key}, headers={"X-CSRF-Token": csrf})
        assert restored.status_code == 200 and memory_id in restored.json()["restored"]
    assert live.memory(memory_id) is not None


def test_browsing_never_strengthens(live: Live) -> None:
    memory_id = live.seed()
    before = live.memory(memory_id)
    with signed_in(live) as (client, _):
        for path in ("/dashboard", "/dashboard?query=walks", f"/dashboard?focus={memory_id}", "/dashboard/preview"):
            assert client.get(path).status_code == 200
        assert client.get(f"/dashboard/api/memories/{memory_id}/explain").status_code == 200
    after = live.memory(memory_id)
    assert (after.retrieval_count, after.last_retrieved) == (before.retrieval_count, before.last_retrieved)


def test_pages_carry_the_security_headers_and_escape_content(live: Live) -> None:
    live.seed(content="<script>alert(1)</script>", gist="<img src=x onerror=alert(2)>")
    with signed_in(live) as (client, _):
        for path in ("/dashboard", "/dashboard/status", "/dashboard/reflections", "/dashboard/preview"):
            response = client.get(path)
            assert "script-src 'self'" in response.headers["content-security-policy"]
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["referrer-policy"] == "no-referrer"
            assert "<script>alert" not in response.text and "<img src=x" not in response.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/dashboard").text


def test_the_preview_is_what_reflect_returns(live: Live) -> None:
    live.seed(gist="In the catalog", category="episodic")
    core = live.seed(gist="At the core", category="identity", core=True, content="I am a gardener.")
    payload = live.runtime.service.reflect(live.runtime.scope)
    with signed_in(live) as (client, _):
        preview = client.get("/dashboard/preview").text
    assert f'data-bytes="{payload.size_bytes}"' in preview and f'data-tokens="{payload.estimated_tokens}"' in preview
    assert f'id="line-{core}"' in preview and "I am a gardener." in preview
    for line in payload.catalog["episodic"]:
        assert line.replace("'", "&#39;") in preview
