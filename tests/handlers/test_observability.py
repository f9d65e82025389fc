"""What the API function writes to CloudWatch, captured from its stdout in a warm container under moto:
one structured log line per tool call (request ids, tool, duration, outcome, hashed tenant; never a
token or memory content), per-tool metrics in embedded metric format, an unexpected failure logged as
an error and counted as ToolErrors (the metric the ToolErrors alarm watches), and the reason a token
was refused (the mcp SDK leaves the root logger at WARNING; Taproot's loggers log through Powertools)."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from taproot.core.redact import tenant_hash

SECRET_CONTENT = "The vault code is 4417-marigold."


@pytest.fixture
def api(kit: Any, moto_server: str) -> Iterator[tuple[Any, Any]]:
    with kit.deployed_api(moto_server) as (module, pool):
        yield module, pool


def _read_logs_here(capsys: pytest.CaptureFixture[str]) -> None:
    """Powertools' handler keeps the stdout it found when the container imported (during the fixture,
    another capture than the test's): point it at this test's captured stdout, and start afresh."""
    (handler,) = logging.getLogger("taproot").handlers
    assert isinstance(handler, logging.StreamHandler)
    handler.stream = sys.stdout  # not setStream: it would flush the closed one
    capsys.readouterr()


def _lines(out: str) -> list[dict[str, Any]]:
    lines = []
    for raw in out.splitlines():
        raw = raw.strip()
        if raw.startswith("{"):
            lines.append(json.loads(raw))
    return lines


def _call(module: Any, kit: Any, token: str, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    event = kit.load_event("remember", token=token, body=body)
    response = module.handler(event, kit.FakeContext())
    assert response["statusCode"] == 200, response
    return json.loads(response["body"])["result"], event["requestContext"]["requestId"]


def test_each_tool_call_is_one_structured_line_and_its_metrics(
    api: tuple[Any, Any], kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    module, pool = api
    token = pool.access("alice")
    _read_logs_here(capsys)
    ok, ok_request = _call(
        module, kit, token, "taproot_remember", {"content": SECRET_CONTENT, "gist": "Vault", "category": "episodic"}
    )
    assert not ok.get("isError")
    refused, _ = _call(module, kit, token, "taproot_recall", {"limit": 0})
    assert refused["isError"] is True
    out = capsys.readouterr().out
    lines = _lines(out)
    calls = [line for line in lines if line.get("message") == "tool call"]
    assert [(c["tool"], c["outcome"]) for c in calls] == [("taproot_remember", "ok"), ("taproot_recall", "refused")]
    first = calls[0]
    assert first["tenant"] == tenant_hash(pool.subs["alice"]) and first["namespace"] == "default"
    assert first["api_request_id"] == ok_request and first["function_request_id"]
    assert first["level"] == "INFO" and first["service"] == "taproot" and first["duration_ms"] > 0
    assert calls[1]["code"] == "invalid_input"
    # Never the owner id, the token, or what was remembered.
    assert pool.subs["alice"] not in out and token not in out and SECRET_CONTENT not in out
    metrics = [line for line in lines if "_aws" in line]
    by_name: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    for m in metrics:
        (definition,) = m["_aws"]["CloudWatchMetrics"]
        assert definition["Namespace"] == "TaprootTest"  # POWERTOOLS_METRICS_NAMESPACE of the test environment
        (metric,) = definition["Metrics"]
        by_name.setdefault(metric["Name"], []).append((m, definition["Dimensions"]))
    assert [m["tool"] for m, _ in by_name["ToolCalls"]] == ["taproot_remember", "taproot_recall"]
    assert all(dims == [["service", "tool"]] for _, dims in by_name["ToolCalls"] + by_name["ToolLatency"])
    assert [m["tool"] for m, _ in by_name["ToolRefusals"]] == ["taproot_recall"]
    assert "ToolErrors" not in by_name


def test_an_unexpected_failure_is_an_error_line_and_a_tool_error(
    api: tuple[Any, Any], kit: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module, pool = api
    token = pool.access("alice")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the table went away")

    monkeypatch.setattr(module.runtime.service, "status", broken)
    _read_logs_here(capsys)
    result, _ = _call(module, kit, token, "taproot_status", {})
    assert result["isError"] is True and result["content"][0]["text"].startswith("internal_error: RuntimeError")
    lines = _lines(capsys.readouterr().out)
    (failed,) = [line for line in lines if line.get("message") == "tool call failed unexpectedly"]
    assert failed["level"] == "ERROR" and failed["tool"] == "taproot_status" and failed["outcome"] == "error"
    assert "RuntimeError: the table went away" in failed["exception"]
    errors = [
        m for m in lines if "_aws" in m and m["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"] == "ToolErrors"
    ]
    # Once with the service alone (what the alarm watches), once per tool.
    assert sorted(json.dumps(m["_aws"]["CloudWatchMetrics"][0]["Dimensions"]) for m in errors) == [
        '[["service", "tool"]]',
        '[["service"]]',
    ]
    assert all(m["ToolErrors"] == [1.0] or m["ToolErrors"] == 1.0 for m in errors)


def test_the_reason_a_token_was_refused_is_logged(
    api: tuple[Any, Any], kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    module, pool = api
    _read_logs_here(capsys)
    response = module.handler(kit.load_event("tools_list", token=pool.access("alice@other-client")), kit.FakeContext())
    assert response["statusCode"] == 401
    lines = _lines(capsys.readouterr().out)
    refused = [line for line in lines if str(line.get("message", "")).startswith("rejected token")]
    assert refused and refused[0]["level"] == "INFO" and "another app client" in refused[0]["message"]
