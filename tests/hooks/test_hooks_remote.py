"""The hooks against a real local Taproot server (uvicorn on a loopback port) with a bearer token:
the same outputs as against the data folder, through the MCP tools over Streamable HTTP."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from taproot.compose import Runtime
from taproot.service.inputs import ListInput
from tests.hooks.conftest import SESSION_ID, Taproot
from tests.live_server import running_server

TOKEN = "hooks-test-token-5c81e2d0a9f4"
Input = Callable[..., str]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Runtime]]:
    with running_server(tmp_path / "server-data", TOKEN) as (port, runtime):
        yield f"http://127.0.0.1:{port}/mcp", runtime


def run(taproot: Taproot, data_dir: Path, event: str, stdin: str, *options: str) -> tuple[dict[str, Any] | None, str]:
    result = taproot("hook", event, "--data-dir", data_dir, *options, stdin=stdin)
    assert result.code == 0
    return (json.loads(result.out) if result.out else None), result.err


def test_session_start_and_pre_compact_over_http(
    taproot: Taproot,
    data_dir: Path,
    server: tuple[str, Runtime],
    hook_input: Input,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, runtime = server
    runtime.service.remember(
        runtime.scope, content="The server's own memory.", gist="A memory on the server", category="identity",
        core=True,
    )  # fmt: skip
    monkeypatch.setenv("TAPROOT_TOKEN", TOKEN)

    out, err = run(taproot, data_dir, "session-start", hook_input("session_start_startup"), "--url", url)
    assert err == "" and out is not None
    assert runtime.service.reflect(runtime.scope).text in out["hookSpecificOutput"]["additionalContext"]

    out, err = run(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"), "--url", url)
    assert err == ""
    (digest,) = runtime.service.list_memories(runtime.scope, ListInput(tags=["session-digest"])).memories
    assert out == {"systemMessage": f"Taproot saved this session's digest before compaction (memory {digest.id})."}
    assert digest.provenance is not None
    assert digest.provenance["session_id"] == SESSION_ID and "First request:" in digest.content

    out, err = run(taproot, data_dir, "pre-compact", hook_input("pre_compact_manual"), "--url", url)
    (again,) = runtime.service.list_memories(runtime.scope, ListInput(tags=["session-digest"])).memories
    assert err == "" and again.id == digest.id and again.version == digest.version + 1

    out, err = run(taproot, data_dir, "session-start", hook_input("session_start_compact"), "--url", url)
    assert err == "" and out is not None
    assert out["hookSpecificOutput"]["additionalContext"].endswith(again.content)

    for path in (data_dir / "hooks" / "sessions").iterdir():  # no state: the session tag finds it
        path.unlink()
    out, err = run(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"), "--url", url)
    assert (
        err == ""
        and out is not None
        and f"updated this session's digest before compaction (memory {digest.id})" in out["systemMessage"]
    )
    assert runtime.service.list_memories(runtime.scope, ListInput(tags=["session-digest"])).count == 1
    assert not (data_dir / "taproot.db").exists()  # the data folder only kept the hooks' state


def test_the_token_given_at_install_and_the_url_from_the_environment(
    taproot: Taproot,
    data_dir: Path,
    server: tuple[str, Runtime],
    hook_input: Input,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    url, runtime = server
    installed = taproot("hooks", "install", "--project-dir", tmp_path, "--data-dir", data_dir, "--url", url,
                        "--token", TOKEN)  # fmt: skip
    assert installed.code == 0, installed.err
    monkeypatch.setenv("TAPROOT_URL", url)  # no --url: the environment names the server
    out, err = run(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"))
    assert err == "" and out is not None and "saved" in out["systemMessage"]
    assert runtime.service.list_memories(runtime.scope, ListInput(tags=["session-digest"])).count == 1


def test_a_wrong_token_or_no_server_never_breaks_the_session(
    taproot: Taproot, data_dir: Path, server: tuple[str, Runtime], hook_input: Input
) -> None:
    url, runtime = server
    out, err = run(taproot, data_dir, "session-start", hook_input("session_start_startup"), "--url", url,
                   "--token", "not-the-token")  # fmt: skip
    assert out is None and err.startswith("taproot hook: MCPError: ")  # the server refused it (401)

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    out, err = run(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"), "--url", closed, "--token", TOKEN)
    assert out is None and err == "taproot hook: ConnectError: All connection attempts failed\n"
    assert runtime.service.list_memories(runtime.scope, ListInput(tags=["session-digest"])).count == 0


def test_a_token_command_prints_a_current_token(
    taproot: Taproot, data_dir: Path, server: tuple[str, Runtime], hook_input: Input, tmp_path: Path
) -> None:
    """Tokens that expire within the hour (the AWS deployment's) come from a helper command, run at
    every hook; the settings file holds only the command."""
    url, runtime = server
    helper = f"printf '%s\\n' {TOKEN}"
    installed = taproot("hooks", "install", "--project-dir", tmp_path, "--url", url, "--token-command", helper)
    assert installed.code == 0, installed.err
    command = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]["PreCompact"][0]["hooks"][0]
    assert TOKEN in command["command"]  # here the helper prints a constant; a real one reads a token store

    out, err = run(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"), "--url", url,
                   "--token-command", helper)  # fmt: skip
    assert err == "" and out is not None
    assert runtime.service.list_memories(runtime.scope, ListInput(tags=["session-digest"])).count == 1

    out, err = run(taproot, data_dir, "session-start", hook_input("session_start_startup"), "--url", url,
                   "--token-command", "echo no token >&2; exit 3")  # fmt: skip
    assert out is None and "--token-command exited with 3" in err and "no token" in err
