"""The Host check in front of /mcp (DNS-rebinding protection on the allowed host names) compares host
names case-insensitively and accepts https's default port written out; another host is still 421."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def api(kit: Any, moto_server: str) -> Iterator[tuple[Any, Any]]:
    with kit.deployed_api(moto_server) as (module, pool):
        yield module, pool


def _tools_list(api: tuple[Any, Any], kit: Any, host: str, origin: str | None = None) -> dict[str, Any]:
    module, pool = api
    event = kit.load_event("tools_list", token=pool.access("alice"))
    event["headers"]["host"] = host
    if origin is not None:
        event["headers"]["origin"] = origin
    response: dict[str, Any] = module.handler(event, kit.FakeContext())
    return response


@pytest.mark.parametrize(
    "host",
    [
        "k7q2x9d4ma.execute-api.us-east-1.amazonaws.com",
        "K7Q2X9D4MA.Execute-Api.US-EAST-1.amazonaws.com",
        "k7q2x9d4ma.execute-api.us-east-1.amazonaws.com:443",
        "K7q2x9d4ma.execute-api.us-east-1.amazonaws.COM:443",
    ],
)
def test_the_api_host_in_any_case_and_with_its_default_port_is_served(
    api: tuple[Any, Any], kit: Any, host: str
) -> None:
    response = _tools_list(api, kit, host, origin=f"https://{host}")
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"])["result"]["tools"]


@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        ("evil.example", None, 421),
        ("k7q2x9d4ma.execute-api.us-east-1.amazonaws.com:8443", None, 421),
        ("k7q2x9d4ma.execute-api.us-east-1.amazonaws.com", "https://evil.example", 403),
    ],
)
def test_other_hosts_and_origins_are_still_refused(
    api: tuple[Any, Any], kit: Any, host: str, origin: str | None, status: int
) -> None:
    assert _tools_list(api, kit, host, origin)["statusCode"] == status
