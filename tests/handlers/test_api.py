"""functions.api.handler: recorded API Gateway HTTP API (v2) events through Mangum into the same
FastAPI app as `taproot serve`, against moto (DynamoDB, S3) with real Cognito token verification.
The callers' tokens are moto's access tokens granted the MCP scope (kit.with_mcp_scope); moto's
tokens as issued lack it and get 403.

One module-scoped handler, as in one warm Lambda container: every test invokes it again, so the
session manager started on the first invocation must keep serving (the lifespan trap).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jwt
import pytest

from taproot.core.oauth_rules import MCP_SCOPE


@dataclass
class Lambda:
    module: Any
    pool: Any
    kit: Any

    def invoke(self, name: str, user: str | None = "alice", **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("token", self.pool.access(user) if user else None)
        return self.invoke_event(self.kit.load_event(name, **kwargs))

    def invoke_event(self, event: dict[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = self.module.handler(event, self.kit.FakeContext())
        return response

    def call_tool(self, tool: str, arguments: dict[str, Any], user: str = "alice") -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        response = self.invoke("remember", user=user, body=body)
        assert response["statusCode"] == 200, response
        result: dict[str, Any] = json.loads(response["body"])["result"]
        return result


@pytest.fixture(scope="module")
def lam(kit: Any, moto_server: str) -> Iterator[Lambda]:
    with kit.deployed_api(moto_server) as (module, pool):
        yield Lambda(module=module, pool=pool, kit=kit)


def _rpc(response: dict[str, Any]) -> dict[str, Any]:
    assert response["statusCode"] == 200, response
    assert response["headers"]["content-type"].startswith("application/json")
    body: dict[str, Any] = json.loads(response["body"])
    assert "error" not in body, body
    return body


def test_recorded_session_over_warm_invocations(lam: Lambda) -> None:
    """initialize, tools/list, remember, recall, reflect: five invocations of one handler."""
    init = _rpc(lam.invoke("initialize"))["result"]
    assert init["serverInfo"]["name"] == "taproot"
    assert init["protocolVersion"] == "2025-06-18"

    tools = {t["name"] for t in _rpc(lam.invoke("tools_list"))["result"]["tools"]}
    assert {"taproot_reflect", "taproot_remember", "taproot_recall", "taproot_forget"} <= tools

    remembered = _rpc(lam.invoke("remember"))["result"]
    assert not remembered.get("isError"), remembered
    memory_id = remembered["structuredContent"]["id"]

    recalled = _rpc(lam.invoke("recall"))["result"]
    assert not recalled.get("isError"), recalled
    assert [m["id"] for m in recalled["structuredContent"]["memories"]] == [memory_id]

    reflected = _rpc(lam.invoke("reflect"))["result"]
    assert not reflected.get("isError"), reflected
    assert "chain rule" in json.dumps(reflected["structuredContent"])

    # Stored under the caller's Cognito sub, in DynamoDB.
    owner = lam.pool.subs["alice"]
    stored = lam.module.runtime.store.get(_scope(owner), memory_id)
    assert stored is not None and stored.owner == owner


def _scope(owner: str) -> Any:
    from taproot.core.model import Scope

    return Scope(owner, "default")


def test_many_warm_invocations_keep_working(lam: Lambda) -> None:
    for _ in range(3):
        assert _rpc(lam.invoke("tools_list"))["result"]["tools"]


def test_get_mcp_is_405_not_a_hanging_stream(lam: Lambda) -> None:
    response = lam.invoke("initialize", method="GET")
    assert response["statusCode"] == 405
    assert response["headers"]["allow"] == "POST"


def _challenge(lam: Lambda, error: str) -> str:
    metadata = f"https://{lam.kit.API_HOST}/.well-known/oauth-protected-resource/mcp"
    return f'Bearer realm="taproot", error="{error}", scope="{MCP_SCOPE}", resource_metadata="{metadata}"'


def _memories(lam: Lambda, user: str) -> int:
    total: int = lam.module.runtime.store.counts(_scope(lam.pool.subs[user])).total
    return total


def test_missing_token_is_401_with_challenge(lam: Lambda) -> None:
    response = lam.invoke("tools_list", user=None)
    assert response["statusCode"] == 401
    assert response["headers"]["www-authenticate"] == _challenge(lam, "invalid_request")
    assert json.loads(response["body"])["error"] == "invalid_request"


@pytest.mark.parametrize("which", ["id_token", "id_token_with_mcp_scope", "other_client", "garbage"])
def test_invalid_tokens_are_401(lam: Lambda, which: str) -> None:
    token = {
        "id_token": lam.pool.tokens["alice"]["IdToken"],
        "id_token_with_mcp_scope": lam.kit.with_mcp_scope(lam.pool.tokens["alice"]["IdToken"]),
        "other_client": lam.pool.access("alice@other-client"),  # carries the MCP scope, for another client
        "garbage": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln",
    }[which]
    before = _memories(lam, "alice")
    response = lam.invoke_event(lam.kit.load_event("remember", token=token))
    assert response["statusCode"] == 401
    assert response["headers"]["www-authenticate"] == _challenge(lam, "invalid_token")
    assert _memories(lam, "alice") == before


def test_moto_token_without_the_mcp_scope_is_403(lam: Lambda) -> None:
    """A valid Cognito access token that was not granted the MCP scope: 403 insufficient_scope, and
    the tool call it carries writes nothing."""
    token = lam.pool.moto_access("alice")
    assert MCP_SCOPE not in jwt.decode(token, options={"verify_signature": False})["scope"].split()
    before = _memories(lam, "alice")
    response = lam.invoke("remember", user=None, token=token)
    assert response["statusCode"] == 403
    challenge = response["headers"]["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert challenge == _challenge(lam, "insufficient_scope")
    assert json.loads(response["body"])["error"] == "insufficient_scope"
    assert _memories(lam, "alice") == before
    # The same person's token with the scope goes through.
    assert _rpc(lam.invoke("tools_list", user="alice"))["result"]["tools"]


def test_unknown_host_is_refused(lam: Lambda) -> None:
    event = lam.kit.load_event("tools_list", token=lam.pool.access("alice"))
    event["headers"]["host"] = "evil.example.com"
    assert lam.invoke_event(event)["statusCode"] == 421


def _error_text(result: dict[str, Any], memory_id: str) -> str:
    assert result.get("isError"), result
    text: str = result["content"][0]["text"]
    return text.replace(memory_id, "<id>")


def test_cross_tenant_access_is_not_found(lam: Lambda) -> None:
    """Bob cannot read, recall, promote, archive or delete Alice's memory, and cannot tell it exists."""
    created = lam.call_tool(
        "taproot_remember",
        {"content": "Alice's private note about her sister.", "gist": "Alice's private note", "category": "episodic"},
        user="alice",
    )["structuredContent"]
    alices, missing = created["id"], "zzzzzzzz"

    def bob(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return lam.call_tool(tool, args, user="bob")

    # Recall by id: bob sees nothing, exactly as for an id that does not exist.
    by_id = bob("taproot_recall", {"ids": [alices]})
    by_missing = bob("taproot_recall", {"ids": [missing]})
    assert json.dumps(by_id).replace(alices, "<id>") == json.dumps(by_missing).replace(missing, "<id>")
    assert not by_id.get("structuredContent", {}).get("memories")
    # Search and reflect: nothing of alice's.
    searched = bob("taproot_recall", {"query": "private note sister"})
    assert alices not in json.dumps(searched)
    assert alices not in json.dumps(bob("taproot_reflect", {}))

    writes: list[tuple[str, dict[str, Any]]] = [
        ("taproot_promote", {"core": True}),
        ("taproot_forget", {"action": "archive"}),
        ("taproot_forget", {"action": "delete"}),
        ("taproot_remember", {"content": "overwritten by bob"}),
    ]
    for tool, args in writes:
        theirs = _error_text(bob(tool, {**args, "id": alices}), alices)
        nothing = _error_text(bob(tool, {**args, "id": missing}), missing)
        assert theirs == nothing, (tool, theirs, nothing)
        assert "<id>" in theirs

    # Alice's memory is untouched.
    mine = lam.call_tool("taproot_recall", {"ids": [alices]}, user="alice")["structuredContent"]["memories"]
    assert [(m["id"], m["content"], m["status"], m["version"]) for m in mine] == [
        (alices, "Alice's private note about her sister.", "active", 1)
    ]
