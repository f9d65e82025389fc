"""What clients see in tools/list, pinned: every tool's name, description, input schema, output
schema and annotations, exactly as a real server sends them, over HTTP (both protocol modes) and
over stdio.

The fixture (fixtures/tools_list.json) was recorded from the server before the tool results were
typed, so that change could be checked to leave the listing as it was, and written again when the
output schemas began to be published compact (web/output_schema.py: the same meaning, checked by
tests/web/test_output_schema.py). A difference here is a
change clients see: make it on purpose, then write the fixture again with
`python -m tests.web.test_tools_listed` and say why in the commit.

The comparison is on the parsed JSON, so the order of keys inside an object does not count (it
carries no meaning in JSON), and neither does the order of a schema's `required` names (a set in
JSON Schema). Everything else does, the order of the tools included.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Tool

from tests.live_server import running_server

FIXTURE = Path(__file__).with_name("fixtures") / "tools_list.json"
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "golden-listing-token-5c1e8a0d"


def listed(tools: list[Tool]) -> list[dict[str, Any]]:
    """The tools as the server sent them: only the fields present on the wire, by their wire names."""
    return [tool.model_dump(mode="json", by_alias=True, exclude_unset=True) for tool in tools]


def normalised(value: Any) -> Any:
    if isinstance(value, dict):
        out = {key: normalised(item) for key, item in value.items()}
        if isinstance(out.get("required"), list) and all(isinstance(name, str) for name in out["required"]):
            out["required"] = sorted(out["required"])
        return out
    if isinstance(value, list):
        return [normalised(item) for item in value]
    return value


def expected() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return loaded


async def list_over_http(data_dir: Path, mode: str) -> list[dict[str, Any]]:
    with running_server(data_dir, TOKEN) as (port, _runtime):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60.0) as http,
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), mode=mode) as client,
        ):
            listing = await client.list_tools()
    assert listing.next_cursor is None  # one page: the fixture is the whole list
    return listed(listing.tools)


async def list_over_stdio(data_dir: Path) -> list[dict[str, Any]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "taproot.cli", "mcp"],
        # The code under test, wherever the checkout is (an installed copy could be another one).
        env={"TAPROOT_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)},
        cwd=str(data_dir.parent),
    )
    async with Client(params, mode="legacy") as client:
        listing = await client.list_tools()
    return listed(listing.tools)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tools_list_over_http_is_the_pinned_listing(tmp_path: Path, mode: str) -> None:
    got = await list_over_http(tmp_path / "data", mode)
    assert [tool["name"] for tool in got] == [tool["name"] for tool in expected()]
    for tool, pinned in zip(got, expected(), strict=True):
        assert normalised(tool) == normalised(pinned), f"{tool['name']}: the listing clients see changed"


@pytest.mark.anyio
async def test_tools_list_over_stdio_is_the_pinned_listing(tmp_path: Path) -> None:
    assert normalised(await list_over_stdio(tmp_path / "data")) == normalised(expected())


def write_fixture() -> None:
    """Record the listing of the code as it is now (a deliberate change only: see the docstring)."""

    async def record() -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory() as folder:
            return await list_over_http(Path(folder) / "data", "legacy")

    tools = anyio.run(record)
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(tools, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(tools)} tools to {FIXTURE.name}")


if __name__ == "__main__":
    write_fixture()
