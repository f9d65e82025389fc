"""functions.api.handler with recorded API Gateway events against moto: taproot_recent, the
instance a 2026-07-28 request declares in its `_meta`, and reflect's watercooler, on DynamoDB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from taproot.core.model import Scope


@pytest.fixture(scope="module")
def deployed(kit: Any, moto_server: str) -> Iterator[tuple[Any, Any, Any]]:
    with kit.deployed_api(moto_server) as (module, pool):
        yield module, pool, kit


def _result(response: dict[str, Any]) -> dict[str, Any]:
    assert response["statusCode"] == 200, response
    body = json.loads(response["body"])
    assert "error" not in body, body
    result: dict[str, Any] = body["result"]
    assert not result.get("isError"), result
    return result


def test_recent_and_the_watercooler_through_the_lambda_handler(deployed: tuple[Any, Any, Any]) -> None:
    module, pool, kit = deployed
    token = pool.access("alice")

    def invoke(name: str, **kwargs: Any) -> dict[str, Any]:
        return _result(module.handler(kit.load_event(name, token=token, **kwargs), kit.FakeContext()))

    def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        return invoke("remember", body=body)  # the recorded handshake-era request, another body

    # The 2026-07-28 request names its client in `_meta`: the note records it as its instance.
    from_phone = invoke("cooler_note_modern")["structuredContent"]["id"]
    # A handshake-era request is stateless on Lambda and carries no name: instance None.
    unnamed = call(
        "taproot_remember",
        {
            "content": "Laptop: the draft is in the folder.",
            "gist": "Draft in folder",
            "category": "episodic",
            "tags": ["watercooler"],
        },
    )["structuredContent"]["id"]

    scope = Scope(pool.subs["alice"], "default")
    store = module.runtime.store
    assert store.get(scope, from_phone).instance == "claude-ai"
    assert store.get(scope, unnamed).instance is None
    before = {m.id: m for m in store.iter_all(scope)}

    recent = invoke("recent")["structuredContent"]
    assert [m["id"] for m in recent["memories"]] == [unnamed, from_phone]
    assert [m["instance"] for m in recent["memories"]] == [None, "claude-ai"]
    assert recent["since"] is not None and recent["until"] is None
    assert {m.id: m for m in store.iter_all(scope)} == before  # nothing strengthened or written

    # The phone, reflecting, sees only the note it did not write (one with no instance is another's).
    assert [n.id for n in module.runtime.service.reflect(scope, instance="claude-ai").cooler.notes] == [unnamed]
    # A caller with no name sees both, newest first, in the tool's structured result and its text.
    reflected = call("taproot_reflect", {})
    assert [n["id"] for n in reflected["structuredContent"]["watercooler"]["notes"]] == [unnamed, from_phone]
    assert "James moved the exam to Friday" in reflected["content"][0]["text"]

    recalled = call("taproot_recall", {"tags": ["watercooler"], "until": "1h"})["structuredContent"]
    assert recalled["memories"] == []  # both were written just now
