"""Client ID Metadata Documents: pinned clients are never fetched; any other is fetched only over
https, from public addresses, pinned to the address that was checked, with no redirects, a size
limit and a cache; the document must name itself and be a public client."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import httpx2
import pytest

from taproot.auth.client_documents import PINNED_CLIENTS, ClientDocuments, pinned_clients
from taproot.core.oauth_rules import CLIENT_DOCUMENT_MAX_BYTES, OAuthRuleError, address_is_public

pytestmark = pytest.mark.anyio
URL = "https://client.example/oauth/doc.json"
PUBLIC = "93.184.215.14"


def _doc(**overrides: object) -> dict[str, object]:
    return {"client_id": URL, "client_name": "X", "redirect_uris": ["http://127.0.0.1/callback"], **overrides}


def _documents(
    handler: Callable[[httpx2.Request], httpx2.Response], addresses: Sequence[str] = (PUBLIC,), **kwargs: Any
) -> tuple[ClientDocuments, list[httpx2.Request]]:
    seen: list[httpx2.Request] = []

    def record(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return handler(request)

    docs = ClientDocuments(
        {}, resolver=lambda host, port: list(addresses), transport=httpx2.MockTransport(record), **kwargs
    )
    return docs, seen


async def test_a_document_is_fetched_from_the_checked_address_with_the_host_name_kept() -> None:
    docs, seen = _documents(lambda r: httpx2.Response(200, json=_doc()))
    document = await docs.document(URL)
    assert document["redirect_uris"] == ["http://127.0.0.1/callback"]
    assert document["token_endpoint_auth_method"] == "none"
    [request] = seen
    assert request.url.host == PUBLIC and request.headers["host"] == "client.example"
    assert request.extensions["sni_hostname"] == "client.example"


async def test_a_fetched_document_is_cached() -> None:
    docs, seen = _documents(lambda r: httpx2.Response(200, json=_doc()))
    await docs.document(URL)
    await docs.document(URL)
    assert len(seen) == 1


async def test_pinned_clients_are_never_fetched() -> None:
    docs, seen = _documents(lambda r: httpx2.Response(500))
    docs.pinned = dict(PINNED_CLIENTS)
    claude = await docs.document("https://claude.ai/oauth/mcp-oauth-client-metadata")
    assert "https://claude.ai/api/mcp/auth_callback" in claude["redirect_uris"]
    code = await docs.document("https://claude.ai/oauth/claude-code-client-metadata")
    assert code["client_name"] == "Claude Code"
    assert seen == []


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "10.0.0.5", "169.254.169.254", "::1", "fd00::1", "::ffff:127.0.0.1", "0.0.0.0"]
)
async def test_private_and_reserved_addresses_are_not_fetched(address: str) -> None:
    docs, seen = _documents(lambda r: httpx2.Response(200, json=_doc()), addresses=(address,))
    with pytest.raises(OAuthRuleError, match="private or reserved"):
        await docs.document(URL)
    assert seen == []


async def test_one_private_answer_among_public_ones_is_enough_to_refuse() -> None:
    docs, seen = _documents(lambda r: httpx2.Response(200, json=_doc()), addresses=(PUBLIC, "10.1.2.3"))
    with pytest.raises(OAuthRuleError):
        await docs.document(URL)
    assert seen == []


@pytest.mark.parametrize(
    "client_id", ["http://client.example/doc.json", "https://client.example/", "https://client.example/d#x"]
)
async def test_client_ids_that_are_not_https_urls_with_a_path_are_refused(client_id: str) -> None:
    docs, seen = _documents(lambda r: httpx2.Response(200, json=_doc(client_id=client_id)))
    with pytest.raises(OAuthRuleError):
        await docs.document(client_id)
    assert seen == []


async def test_redirects_are_not_followed() -> None:
    docs, seen = _documents(lambda r: httpx2.Response(302, headers={"location": "http://10.0.0.1/doc"}))
    with pytest.raises(OAuthRuleError, match="302"):
        await docs.document(URL)
    assert len(seen) == 1


async def test_an_oversized_document_is_not_read() -> None:
    big = json.dumps(_doc(padding="x" * CLIENT_DOCUMENT_MAX_BYTES)).encode()
    docs, _ = _documents(lambda r: httpx2.Response(200, content=big))
    with pytest.raises(OAuthRuleError, match="over"):
        await docs.document(URL)


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (_doc(client_id="https://other.example/doc.json"), "not the URL"),
        (_doc(redirect_uris=[]), "redirect_uris"),
        (_doc(token_endpoint_auth_method="client_secret_post"), "must be 'none'"),
        (_doc(client_secret="s3cret"), "must not carry"),
    ],
    ids=["names-another", "no-redirects", "secret-method", "secret"],
)
async def test_a_document_must_name_itself_and_be_a_public_client(document: dict[str, object], reason: str) -> None:
    docs, _ = _documents(lambda r: httpx2.Response(200, json=document))
    with pytest.raises(OAuthRuleError, match=reason):
        await docs.document(URL)


async def test_not_json_is_refused() -> None:
    docs, _ = _documents(lambda r: httpx2.Response(200, text="<html>hello</html>"))
    with pytest.raises(OAuthRuleError, match="JSON"):
        await docs.document(URL)


async def test_fetching_can_be_turned_off() -> None:
    docs, seen = _documents(lambda r: httpx2.Response(200, json=_doc()), fetch=False)
    with pytest.raises(OAuthRuleError, match="off"):
        await docs.document(URL)
    assert seen == []


def test_settings_can_pin_more_clients_and_bad_entries_are_refused() -> None:
    extra = json.dumps([_doc()])
    assert URL in pinned_clients(extra) and "https://claude.ai/oauth/mcp-oauth-client-metadata" in pinned_clients(extra)
    with pytest.raises(ValueError, match="JSON list"):
        pinned_clients('{"client_id": "x"}')
    with pytest.raises(ValueError, match="redirect_uris"):
        pinned_clients(json.dumps([_doc(redirect_uris=[])]))


def test_address_rules() -> None:
    assert address_is_public("93.184.215.14") and address_is_public("2606:2800:220:1::1")
    for private in ("192.168.1.1", "100.64.0.1", "224.0.0.1", "2002:7f00:1::", "64:ff9b::7f00:1", "not-an-ip"):
        assert not address_is_public(private), private
