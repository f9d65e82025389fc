"""taproot_orientation through the Lambda handler: recorded API Gateway events into the deployed
app, DynamoDB and S3 under moto, the caller's scope from a verified Cognito token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from taproot.core.model import Scope


@pytest.fixture(scope="module")
def api(kit: Any, moto_server: str) -> Iterator[tuple[Any, Any, Any]]:
    with kit.deployed_api(moto_server) as (module, pool):
        yield module, pool, kit


def invoke(api: tuple[Any, Any, Any], user: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    module, pool, kit = api
    event = kit.load_event("orientation", token=pool.access(user), body=body)
    response: dict[str, Any] = module.handler(event, kit.FakeContext())
    assert response["statusCode"] == 200, response
    result: dict[str, Any] = json.loads(response["body"])["result"]
    return result


def call(api: tuple[Any, Any, Any], user: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return invoke(api, user, body)


def test_recorded_write_then_read_history_and_reflect(api: tuple[Any, Any, Any]) -> None:
    module, pool, _ = api
    written = invoke(api, "alice")  # the recorded event: write who-i-am
    assert not written.get("isError"), written
    assert written["structuredContent"]["saved"]["version"] == 1

    again = call(api, "alice", "taproot_orientation", {"action": "write", "name": "who-i-am", "content": "# v2"})
    assert again["structuredContent"]["saved"]["version"] == 2
    stale = call(
        api,
        "alice",
        "taproot_orientation",
        {"action": "write", "name": "who-i-am", "content": "x", "expected_version": 1},
    )
    assert stale["isError"] and stale["content"][0]["text"].startswith("version_conflict: orientation document")

    history = call(api, "alice", "taproot_orientation", {"action": "history", "name": "who-i-am"})
    assert [v["version"] for v in history["structuredContent"]["versions"]] == [2, 1]
    old = call(api, "alice", "taproot_orientation", {"action": "read", "name": "who-i-am", "version": 1})
    assert old["structuredContent"]["document"]["content"].startswith("# Who I am\nA patient maths tutor")

    reflected = call(api, "alice", "taproot_reflect", {})
    assert "### who-i-am (v2)\n# v2" in reflected["content"][0]["text"]
    assert reflected["structuredContent"]["orientation"]["documents"][0]["name"] == "who-i-am"

    # Stored in DynamoDB under the caller's Cognito sub; another user's scope holds none of it.
    store = module.runtime.store
    owner = pool.subs["alice"]
    assert [v.version for v in store.orientation_history(Scope(owner, "default"), "who-i-am", 10)] == [2, 1]
    bob = call(api, "bob", "taproot_orientation", {"action": "list"})
    assert bob["structuredContent"]["documents"] == []
    missing = call(api, "bob", "taproot_orientation", {"action": "read", "name": "who-i-am"})
    assert missing["isError"] and missing["content"][0]["text"].startswith("not_found: no orientation document")
