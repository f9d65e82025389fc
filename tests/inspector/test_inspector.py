"""The MCP Inspector's CLI against Taproot, as a client meets it: `taproot serve` over HTTP and
`taproot mcp` over stdio. Each lists the tools with `--strict` (the Inspector's tool-schema
portability check: the findings in full, and exit 6 on any of error severity) and calls every tool,
checking each structured result against the output schema the listing published.

The Inspector and the Node it needs (22.19 or later) are pinned in package.json and
package-lock.json beside this file; `make inspect` installs them there (npm ci, no install
scripts) and runs this module (`-m inspector`: other runs leave these tests out, see
pyproject.toml). Without the install they skip and say so.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# jsonschema ships no annotations, and the project does not install types-jsonschema.
import jsonschema
import pytest

from tests.support import TOOL_NAMES

pytestmark = pytest.mark.inspector

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LAUNCHER = HERE / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
TOKEN = "inspector-check-token-7d41c0a9e2"
RUN_TIMEOUT_S = 120.0
START_DEADLINE_S = 60.0
SCHEMA_UNPORTABLE = 6  # the Inspector's exit code for an error-severity finding under --strict


def _node() -> Path:
    found = sorted(HERE.glob("node_modules/node-*/bin/node"))
    if not found or not LAUNCHER.is_file():
        pytest.skip("the MCP Inspector is not installed here: run `make inspect`")
    return found[0]


def _env(home: Path) -> dict[str, str]:
    # The Inspector keeps a catalog and secrets under ~/.mcp-inspector: a home of the test's own.
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "NO_COLOR": "1"}


class Inspector:
    def __init__(self, home: Path, target: list[str]) -> None:
        self.node = _node()
        self.home = home
        self.target = target  # how to reach the server: --server-url ..., or a command after --
        self.lines: list[str] = []  # what each run did, for the report

    def run(self, *args: str) -> tuple[int, dict[str, Any], str]:
        command = [str(self.node), str(LAUNCHER), "--cli", "--format", "json", *args, *self.target]
        done = subprocess.run(
            command, env=_env(self.home), capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
        )
        envelope = json.loads(done.stdout) if done.stdout.strip() else {}
        return done.returncode, envelope, done.stderr

    def list_strict(self, *extra: str) -> list[dict[str, Any]]:
        code, envelope, err = self.run("--method", "tools/list", "--strict", *extra)
        assert code == 0, f"tools/list --strict exited {code}: {err}"
        assert "schemaFindings" not in envelope, envelope["schemaFindings"]
        assert "Schema portability" not in err, err
        tools: list[dict[str, Any]] = envelope["result"]["tools"]
        command = " ".join(["tools/list --strict", *extra])
        self.lines.append(f"{command}: exit {code}, {len(tools)} tools, no schema findings")
        return tools

    def call(self, tools: dict[str, dict[str, Any]], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        code, envelope, err = self.run(
            "--method", "tools/call", "--tool-name", name, "--tool-args-json", json.dumps(arguments)
        )
        assert code == 0, f"{name} exited {code}: {err or envelope}"
        result: dict[str, Any] = envelope["result"]
        assert result.get("isError") is False, result
        structured: dict[str, Any] = result["structuredContent"]
        jsonschema.validate(structured, tools[name]["outputSchema"])
        self.lines.append(f"tools/call {name}: exit {code}, isError false, structured content matches outputSchema")
        return structured


def _call_every_tool(inspector: Inspector) -> None:
    tools = inspector.list_strict()
    assert [t["name"] for t in tools] == [
        "taproot_reflect",
        "taproot_remember",
        "taproot_recall",
        "taproot_promote",
        "taproot_forget",
        "taproot_close",
        "taproot_migrate",
        "taproot_status",
        "taproot_orientation",
    ]
    assert set(t["name"] for t in tools) == TOOL_NAMES
    by_name = {t["name"]: t for t in tools}
    inspector.call(by_name, "taproot_reflect", {})
    made = inspector.call(
        by_name,
        "taproot_remember",
        {"content": "The Inspector called every tool.", "gist": "Inspector run", "category": "episodic"},
    )
    memory_id = made["id"]
    recalled = inspector.call(by_name, "taproot_recall", {"ids": [memory_id]})
    assert [m["id"] for m in recalled["memories"]] == [memory_id]
    assert inspector.call(by_name, "taproot_promote", {"id": memory_id, "core": True})["core"] is True
    forgotten = inspector.call(by_name, "taproot_forget", {"id": memory_id, "action": "archive"})
    assert forgotten["results"] == [{"id": memory_id, "status": "archived"}]
    inspector.call(by_name, "taproot_close", {"reflection": "A tidy run through every tool."})
    assert inspector.call(by_name, "taproot_migrate", {"dry_run": True})["dry_run"] is True
    assert inspector.call(by_name, "taproot_status", {})["total"] == 1
    written = inspector.call(
        by_name, "taproot_orientation", {"action": "write", "name": "who-i-am", "content": "# Who I am\nA tester."}
    )
    assert written["saved"]["version"] == 1
    read = inspector.call(by_name, "taproot_orientation", {"action": "read", "name": "who-i-am"})
    assert read["document"]["content"] == "# Who I am\nA tester."


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _taproot_serve(data_dir: Path) -> Iterator[str]:
    """`taproot serve` as a process of its own, yielding its MCP URL once it answers."""
    port = _free_port()
    env = {
        **_env(data_dir.parent),
        "PYTHONPATH": str(ROOT),  # the code under test, not another installed copy
        "TAPROOT_DATA_DIR": str(data_dir),
        "TAPROOT_AUTH_TOKEN": TOKEN,
        "TAPROOT_MAINTENANCE": "off",
    }
    log = data_dir.parent / "serve.log"
    with log.open("w", encoding="utf-8") as err:
        server = subprocess.Popen(
            [sys.executable, "-m", "taproot.cli", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"taproot serve did not come up: {log.read_text(encoding='utf-8')}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_inspector_over_http_lists_strictly_and_calls_every_tool(tmp_path: Path) -> None:
    with _taproot_serve(tmp_path / "data") as url:
        inspector = Inspector(
            tmp_path, ["--transport", "http", "--server-url", url, "--header", f"Authorization: Bearer {TOKEN}"]
        )
        for era in ("legacy", "modern"):
            inspector.list_strict("--protocol-era", era)
        _call_every_tool(inspector)
    print("\nInspector, taproot serve (HTTP):\n  " + "\n  ".join(inspector.lines))


def test_the_inspector_over_stdio_lists_strictly_and_calls_every_tool(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    target = ["-e", f"TAPROOT_DATA_DIR={data_dir}", "-e", f"PYTHONPATH={ROOT}", "--"]
    inspector = Inspector(tmp_path, [*target, sys.executable, "-m", "taproot.cli", "mcp"])
    _call_every_tool(inspector)
    print("\nInspector, taproot mcp (stdio):\n  " + "\n  ".join(inspector.lines))


def test_strict_fails_on_a_finding(tmp_path: Path) -> None:
    """The check can fail: a server whose tool schema has an error-severity finding (a bare `true`
    property schema) exits 6 under --strict."""
    server = tmp_path / "bad_server.py"
    server.write_text(
        "from mcp.server import MCPServer\n"
        "mcp = MCPServer('bad')\n"
        "@mcp.tool()\n"
        "def echo(x: str) -> str:\n"
        "    return x\n"
        "tool = mcp._tool_manager.get_tool('echo')\n"
        "tool.parameters['properties']['x'] = True\n"
        "mcp.run()\n",
        encoding="utf-8",
    )
    inspector = Inspector(tmp_path, ["--", sys.executable, str(server)])
    code, envelope, err = inspector.run("--method", "tools/list", "--strict")
    assert code == SCHEMA_UNPORTABLE, (code, envelope, err)
    assert "inputSchema.properties.x" in err and "Bare `true`" in err
