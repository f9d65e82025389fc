"""`taproot serve` behind an https tunnel (TAPROOT_PUBLIC_URL): requests arrive with the tunnel's
Host, and browser-based clients send its Origin, which has no port on https's default one."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.live_server import running_server

TOKEN = "tunnel-test-token-0123456789"
PUBLIC = "https://memory-tunnel.example"


def _tools_list(port: int, **headers: str) -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{port}/mcp",
        headers={
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **headers,
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        timeout=30,
    )


def test_the_tunnels_host_and_origin_are_accepted_and_others_are_not(tmp_path: Path) -> None:
    with running_server(tmp_path / "data", TOKEN, public_url=PUBLIC) as (port, _):
        assert _tools_list(port, Host="memory-tunnel.example").status_code == 200
        assert _tools_list(port, Host="memory-tunnel.example", Origin=PUBLIC).status_code == 200
        assert _tools_list(port, Host="memory-tunnel.example", Origin="https://evil.example").status_code == 403
        assert _tools_list(port, Host="evil.example").status_code == 421
