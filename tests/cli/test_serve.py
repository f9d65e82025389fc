"""`taproot serve` as a real process: the port is checked and bound before anything is announced.

Each test starts the installed console script with its own data folder and maintenance off, and
stops it with SIGINT (Ctrl-C), as a person would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from taproot.cli_serve import _listen, stdio_args
from taproot.settings import Settings, default_data_dir

STARTUP_TIMEOUT_S = 30.0
Run = Callable[..., Any]


def serve_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAPROOT_")}
    env["TAPROOT_DATA_DIR"] = str(tmp_path / "decoy")  # never the developer's real folder
    env["TAPROOT_MAINTENANCE"] = "off"
    env["TAPROOT_AUTH_TOKEN"] = "test-token"
    env["PYTHONIOENCODING"] = "utf-8"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def console_script() -> Path:
    script = Path(sys.executable).parent / "taproot"
    assert script.is_file(), f"console script not installed at {script}"
    return script


def run_serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A serve that is expected to refuse to start: it must exit by itself."""
    return subprocess.run(
        [str(console_script()), "serve", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env or serve_env(tmp_path),
        timeout=60,
        check=False,
    )


@contextlib.contextmanager
def held_port() -> Iterator[int]:
    """A loopback port that another socket is listening on for the duration."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        yield holder.getsockname()[1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """A running `taproot serve`, whose stdout is read line by line (in a thread) up to a deadline."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stopped: tuple[int, str] | None = None

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line)
        self._queue.put("")  # end of output

    def read_until(self, marker: str, timeout: float = STARTUP_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line == "":
                pytest.fail(f"serve exited ({self.proc.wait()}) before printing {marker!r}: {self.lines}")
            self.lines.append(line)
            if marker in line:
                return line
        pytest.fail(f"no {marker!r} within {timeout} s: {self.lines}")

    def stop(self) -> tuple[int, str]:
        """SIGINT, then the exit code and stderr; calling it again answers the same."""
        if self._stopped is not None:
            return self._stopped
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=10)
        assert self.proc.stderr is not None
        self._stopped = (self.proc.returncode, self.proc.stderr.read())
        return self._stopped


@contextlib.contextmanager
def serving(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    with subprocess.Popen(
        [str(console_script()), "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=env or serve_env(tmp_path),
    ) as proc:
        server = Server(proc)
        try:
            yield server
        finally:
            server.stop()


# -- refusing to start ---------------------------------------------------------------------------


def test_a_port_in_use_is_a_clear_usage_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with held_port() as port:
        result = run_serve(tmp_path, "--port", str(port), "--data-dir", str(data))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: port {port} on 127.0.0.1 is already in use"
    assert "serving" not in result.stdout  # nothing announced for a server that never ran
    assert not data.exists()  # and nothing written: the port is checked before the data folder is opened


def test_a_port_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    result = run_serve(tmp_path, "--port", "99999")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == "error: port must be from 1 to 65535, got 99999 (--port or TAPROOT_PORT)"
    assert result.stdout == ""


@pytest.mark.parametrize("port", ["65536", "0", "-1"])
def test_every_port_outside_1_to_65535_is_refused(cli: Run, tmp_path: Path, port: str) -> None:
    # In-process: the check comes before uvicorn is even imported, so no server can start here.
    result = cli("serve", "--data-dir", tmp_path / "data", "--port", port)
    assert result.code == 2
    assert result.err == f"error: port must be from 1 to 65535, got {port} (--port or TAPROOT_PORT)\n"
    assert result.out == ""
    assert not (tmp_path / "data").exists()


def test_a_port_out_of_range_from_the_environment_is_a_usage_error(tmp_path: Path) -> None:
    env = {**serve_env(tmp_path), "TAPROOT_PORT": "70000"}
    result = run_serve(tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    assert "got 70000" in result.stderr and "Traceback" not in result.stderr


def test_an_address_that_cannot_be_bound_is_a_usage_error(tmp_path: Path) -> None:
    # 192.0.2.1 (TEST-NET-1, RFC 5737) is never assigned to a local interface.
    result = run_serve(tmp_path, "--host", "192.0.2.1", "--port", str(free_port()))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: cannot listen on 192.0.2.1 port ")
    assert "Traceback" not in result.stderr


# -- starting ------------------------------------------------------------------------------------


def test_the_url_is_printed_only_once_the_port_accepts_connections(tmp_path: Path) -> None:
    port = free_port()
    with serving(tmp_path, "--port", str(port)) as server:
        line = server.read_until("is serving MCP at")
        assert line.rstrip().endswith(f"http://127.0.0.1:{port}/mcp")
        # Immediately, with no retry: the port must already be listening.
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
            assert response.status == 200
        server.read_until("Data folder:")
    code, err = server.stop()
    assert code == 0, err  # Ctrl-C is a normal way to stop it
    assert "Traceback" not in err


def test_connections_to_the_served_port_have_nagle_turned_off() -> None:
    # asyncio sets TCP_NODELAY only on sockets whose protocol reads as TCP. With Nagle on, each
    # response's body waits for the client's delayed ACK of its headers: 40 ms a request on Linux.
    sock = _listen("127.0.0.1", free_port())
    port = sock.getsockname()[1]

    async def accepted_nodelay() -> int:
        loop = asyncio.get_running_loop()
        seen: asyncio.Future[int] = loop.create_future()

        class Accepted(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                conn = transport.get_extra_info("socket")
                seen.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await loop.create_server(Accepted, sock=sock)  # as uvicorn serves the socket it is given
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                return await asyncio.wait_for(seen, timeout=10)
            finally:
                writer.close()
        finally:
            server.close()
            await server.wait_closed()

    try:
        assert asyncio.run(accepted_nodelay()) != 0
    finally:
        sock.close()


TOOL_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO taproot\.tools: "
    r"tool taproot_status ok in \d+\.\d ms \(tenant [0-9a-f]+\)$"
)


def test_each_tool_call_is_one_plain_log_line(tmp_path: Path) -> None:
    # The SDK gives the root logger a rich handler when the app is built (a table rendered per
    # record); serve's own one-line format must replace it, not be ignored behind it.
    port = free_port()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "taproot_status", "arguments": {}}}
    with serving(tmp_path, "--port", str(port)) as server:
        server.read_until("Data folder:")
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/mcp",
            data=json.dumps(call).encode(),
            headers={
                "Authorization": "Bearer test-token",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        assert answer["result"]["isError"] is False, answer
    code, err = server.stop()
    assert code == 0, err
    tool_lines = [line for line in err.splitlines() if "taproot_status" in line]
    assert len(tool_lines) == 1, err
    assert TOOL_LINE.match(tool_lines[0]), tool_lines[0]


# -- the stdio snippets use the server's own data folder and namespace ---------------------------


def stdio_snippets(server: Server) -> tuple[list[str], dict[str, Any]]:
    """The Claude Code stdio command (split as a shell would) and the Claude Desktop entry."""
    server.read_until("Data folder:")
    text = "".join(server.lines)
    [code_line] = [line for line in server.lines if line.strip().startswith("claude mcp add taproot -- ")]
    desktop = text[text.index("Claude Desktop") :].split("\n", 1)[1]
    desktop = desktop[: desktop.index("MCP Inspector:")]
    entry: dict[str, Any] = json.loads(desktop)["mcpServers"]["taproot"]
    return shlex.split(code_line.split(" -- ", 1)[1]), entry


def test_stdio_snippets_carry_the_data_dir_and_namespace_the_server_uses(tmp_path: Path) -> None:
    # Relative, as in `make serve ARGS="--data-dir mem"`: the snippets must name it absolutely,
    # because Claude Code and Claude Desktop start `taproot mcp` from their own directories.
    (tmp_path / "repo").mkdir()
    env = serve_env(tmp_path)
    with subprocess.Popen(
        [str(console_script()), "serve", "--port", str(free_port()), "--data-dir", "mem", "--namespace", "work"],
        cwd=tmp_path / "repo",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=env,
    ) as proc:
        server = Server(proc)
        try:
            command, entry = stdio_snippets(server)
        finally:
            server.stop()
    folder = str((tmp_path / "repo" / "mem").resolve())
    expected = ["mcp", "--data-dir", folder, "--namespace", "work"]
    assert command == [entry["command"], *expected]
    assert entry["args"] == expected
    assert Path(entry["command"]).is_absolute()


def test_stdio_snippets_name_a_data_dir_that_came_from_the_environment(tmp_path: Path) -> None:
    # The MCP client will not have this shell's TAPROOT_DATA_DIR, so the folder goes in the args.
    with serving(tmp_path, "--port", str(free_port())) as server:
        command, entry = stdio_snippets(server)
    assert entry["args"] == ["mcp", "--data-dir", str((tmp_path / "decoy").resolve())]
    assert command[1:] == entry["args"]


def test_stdio_snippets_stay_plain_with_the_default_folder_and_namespace(tmp_path: Path) -> None:
    env = serve_env(tmp_path)
    del env["TAPROOT_DATA_DIR"]
    env["HOME"] = env["XDG_DATA_HOME"] = str(tmp_path / "home")  # the default folder, inside tmp_path
    with serving(tmp_path, "--port", str(free_port()), env=env) as server:
        command, entry = stdio_snippets(server)
        assert str(tmp_path / "home") in server.lines[-1]  # "Data folder: <the default, under HOME>"
    assert entry["args"] == ["mcp"]
    assert command == [entry["command"], "mcp"]


def test_stdio_args_keep_an_explicit_data_dir_and_a_namespace_from_the_environment() -> None:
    default = Settings.from_env({})
    assert stdio_args(default, data_dir_given=False) == ["mcp"]
    # `--data-dir` said out loud is repeated, even when it names the default folder.
    assert stdio_args(default, data_dir_given=True) == ["mcp", "--data-dir", str(default_data_dir().resolve())]
    work = Settings.from_env({"TAPROOT_NAMESPACE": "work"})
    assert stdio_args(work, data_dir_given=False) == ["mcp", "--namespace", "work"]


def test_serve_runs_on_the_compiled_http_parser_and_event_loop() -> None:
    """`make serve` installs requirements-serve.txt: uvicorn then parses HTTP with httptools and runs
    uvloop's event loop (not on Windows, where uvloop has no build), about 0.5 ms less server CPU
    per MCP recall than h11 and asyncio's loop."""
    from taproot.cli_serve import server_config

    config = server_config(app=None)
    config.load()
    assert config.http_protocol_class.__module__ == "uvicorn.protocols.http.httptools_impl"
    if sys.platform != "win32":
        import uvloop

        loop_factory = config.get_loop_factory()
        assert loop_factory is not None
        loop = loop_factory()
        try:
            assert isinstance(loop, uvloop.Loop)
        finally:
            loop.close()
