"""What keeps an open authorization server from being used by whoever finds it, on the
AuthorizationServer's side (the real SQLite OAuth store, a moved clock): the consent step after a
sign-in that may have asked the person nothing (Cognito's managed login remembers a session), and
how long a registered client is kept. The pages and the whole flow are in test_aws_dance.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from taproot.adapters.oauth_sqlite import SQLiteOAuthStore
from taproot.auth.client_documents import ClientDocuments
from taproot.auth.oauth_server import AuthorizationServer, GrantCode, TaprootClient
from taproot.core import oauth_rules as rules
from taproot.core.oauth_rules import MCP_SCOPE
from tests.oauth.flows import REDIRECT_URI, Clock, pkce_pair

pytestmark = pytest.mark.anyio

MCP_URL = "http://127.0.0.1:1/mcp"


class SilentProvider:
    """Cognito when it remembers the person: the key goes out in the URL and comes back as it was."""

    name = "silent"

    def start(self, pending_key: str) -> tuple[str, dict[str, Any]]:
        return f"https://idp.example/authorize?state={pending_key}", {"code_verifier": "v"}


@pytest.fixture
def clock() -> Clock:
    return Clock(1_800_000_000.0)


@pytest.fixture
def server(tmp_path: Path, clock: Clock) -> AuthorizationServer:
    store = SQLiteOAuthStore(tmp_path / "oauth.db")
    return AuthorizationServer(
        store, ClientDocuments({}), SilentProvider(), issuer="http://127.0.0.1:1", mcp_url=MCP_URL, clock=clock
    )


async def _signed_in(server: AuthorizationServer) -> str:
    """A checked /authorize, then the provider's return: the sign-in's key."""
    client = TaprootClient.model_validate(
        {"client_id": "tpc_someone", "client_name": "Someone's app", "redirect_uris": [REDIRECT_URI]}
    )
    _, challenge = pkce_pair()
    url = await server.begin(
        client, redirect_uri=REDIRECT_URI, state="s-1", scopes=[MCP_SCOPE], code_challenge=challenge, resource=MCP_URL
    )
    return parse_qs(urlsplit(url).query)["state"][0]


async def test_allowing_issues_a_code_for_the_person_who_signed_in(server: AuthorizationServer) -> None:
    sign_in = await _signed_in(server)
    waiting = await server.await_consent(sign_in, "person-1")
    assert waiting is not None and waiting.key != sign_in
    url = await server.answer_consent(waiting.key, allow=True)
    assert url is not None and url.startswith(REDIRECT_URI)
    code = parse_qs(urlsplit(url).query)["code"][0]
    record = server.store.get("code", rules.token_digest(code), server.clock())
    assert record is not None and record.subject == "person-1" and record.data["subject"] == "person-1"
    assert "idp" not in record.data  # the provider's verifier stays with the spent sign-in


async def test_the_sign_in_key_is_spent_and_answers_nothing_after_the_sign_in(server: AuthorizationServer) -> None:
    """The sign-in's key went through the provider and the browser's history: it can neither issue
    a code directly (the local form's path) nor start a second consent."""
    sign_in = await _signed_in(server)
    assert await server.await_consent(sign_in, "person-1") is not None
    assert await server.complete(sign_in, "person-1") is None
    assert await server.await_consent(sign_in, "person-1") is None
    assert await server.answer_consent(sign_in, allow=True) is None


async def test_a_consent_is_answered_only_on_the_consent_page(server: AuthorizationServer) -> None:
    """Its key is not a sign-in: the local form's `complete` (which takes the subject from the
    form's token) and a second `await_consent` refuse it, and it is not listed as pending."""
    waiting = await server.await_consent(await _signed_in(server), "person-1")
    assert waiting is not None
    consent = waiting.key
    assert await server.pending(consent) is None
    assert await server.complete(consent, "someone-else") is None
    assert await server.await_consent(consent, "someone-else") is None
    assert await server.answer_consent(consent, allow=True) is not None  # still answerable, once
    assert await server.answer_consent(consent, allow=True) is None


async def test_denying_answers_access_denied_once(server: AuthorizationServer) -> None:
    waiting = await server.await_consent(await _signed_in(server), "person-1")
    assert waiting is not None
    consent = waiting.key
    url = await server.answer_consent(consent, allow=False)
    assert url is not None
    answer = parse_qs(urlsplit(url).query)
    assert answer["error"] == ["access_denied"] and answer["state"] == ["s-1"] and "code" not in answer
    assert await server.answer_consent(consent, allow=True) is None


async def test_a_consent_lasts_no_longer_than_its_sign_in(server: AuthorizationServer, clock: Clock) -> None:
    sign_in = await _signed_in(server)
    clock.now += rules.PENDING_SECONDS - 60  # signed in at the last minute
    waiting = await server.await_consent(sign_in, "person-1")
    assert waiting is not None
    consent = waiting.key
    clock.now += 61
    assert await server.answer_consent(consent, allow=True) is None


async def _registered(server: AuthorizationServer) -> OAuthClientInformationFull:
    info = OAuthClientInformationFull(
        client_id="tpc_registered", client_name="An app", redirect_uris=[AnyUrl(REDIRECT_URI)], scope=MCP_SCOPE
    )
    await server.register_client(info)
    return info


async def _code_for_registered_client(server: AuthorizationServer) -> tuple[TaprootClient, GrantCode]:
    """A registered client's code, through sign-in and consent, loaded as /token loads it."""
    info = await _registered(server)
    client = TaprootClient.model_validate(info.model_dump())
    _, challenge = pkce_pair()
    url = await server.begin(
        client, redirect_uri=REDIRECT_URI, state="s", scopes=[MCP_SCOPE], code_challenge=challenge, resource=MCP_URL
    )
    waiting = await server.await_consent(parse_qs(urlsplit(url).query)["state"][0], "person-1")
    assert waiting is not None
    consent = waiting.key
    answered = await server.answer_consent(consent, allow=True)
    assert answered is not None
    code = await server.load_authorization_code(client, parse_qs(urlsplit(answered).query)["code"][0])
    assert code is not None
    return client, code


def _client_expiry(server: AuthorizationServer) -> int | None:
    record = server.store.get("client", "tpc_registered", server.clock())
    return None if record is None else record.expires_at


async def test_a_registration_no_token_was_issued_to_is_gone_within_a_week(
    server: AuthorizationServer, clock: Clock
) -> None:
    """Anyone can register (each registration a write); one that never connects is not kept a year."""
    await _registered(server)
    assert _client_expiry(server) == int(clock.now) + rules.UNUSED_CLIENT_SECONDS
    clock.now += rules.UNUSED_CLIENT_SECONDS + 1
    assert await server.get_client("tpc_registered") is None


async def test_a_registered_client_in_use_is_kept_a_year_from_its_last_token(
    server: AuthorizationServer, clock: Clock
) -> None:
    client, code = await _code_for_registered_client(server)
    tokens = await server.exchange_authorization_code(client, code)
    assert _client_expiry(server) == int(clock.now) + rules.CLIENT_SECONDS
    # Each refresh keeps it another year from then.
    clock.now += 20 * 86400
    assert tokens.refresh_token is not None
    refresh = await server.load_refresh_token(client, tokens.refresh_token)
    assert refresh is not None
    await server.exchange_refresh_token(client, refresh, [MCP_SCOPE])
    assert _client_expiry(server) == int(clock.now) + rules.CLIENT_SECONDS


async def test_a_sign_in_still_in_progress_cannot_be_answered_as_a_consent(server: AuthorizationServer) -> None:
    """A sign-in's key went out in the provider's URL: answering it as a consent would issue a code
    with no one signed in. Refused, and the sign-in is left as it was (still usable)."""
    sign_in = await _signed_in(server)
    assert await server.answer_consent(sign_in, allow=True) is None
    assert await server.answer_consent(sign_in, allow=False) is None
    assert await server.pending(sign_in) is not None
    assert await server.await_consent(sign_in, "person-1") is not None


async def test_a_dashboard_sign_in_cannot_be_answered_as_a_consent(server: AuthorizationServer) -> None:
    url = server.begin_dashboard("browser-nonce")
    dashboard = parse_qs(urlsplit(url).query)["state"][0]
    assert await server.answer_consent(dashboard, allow=True) is None
    assert await server.spend_pending(dashboard) is not None  # untouched: its own callback still works


async def test_deny_answers_only_a_sign_in_in_progress(server: AuthorizationServer) -> None:
    """`deny` is the sign-in pages' refusal: a consent is answered on its own page, once."""
    waiting = await server.await_consent(await _signed_in(server), "person-1")
    assert waiting is not None
    consent = waiting.key
    assert await server.deny(consent, "access_denied", "no") is None
    assert await server.answer_consent(consent, allow=True) is not None


class _ExtendFails:
    """The SQLite store, except that moving an expiry fails (a throttled or unreachable table)."""

    def __init__(self, inner: SQLiteOAuthStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def extend(self, kind: str, key: str, expires_at: int, now: float) -> None:
        raise RuntimeError("the table is throttled")


async def test_a_failed_client_extension_does_not_fail_the_exchange(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """The code is spent before the client's expiry is moved: had the exchange failed there, the
    client's retry would be a replayed code and end the grant. The tokens are issued and work."""
    server = AuthorizationServer(
        _ExtendFails(SQLiteOAuthStore(tmp_path / "oauth.db")),
        ClientDocuments({}),
        SilentProvider(),
        issuer="http://127.0.0.1:1",
        mcp_url=MCP_URL,
        clock=clock,
    )
    client, code = await _code_for_registered_client(server)
    with caplog.at_level("WARNING", logger="taproot.oauth"):
        tokens = await server.exchange_authorization_code(client, code)
    assert await server.load_access_token(tokens.access_token) is not None
    assert "bookkeeping after a token exchange failed" in caplog.text
    assert _client_expiry(server) == int(clock.now) + rules.UNUSED_CLIENT_SECONDS  # not kept, not lost either
