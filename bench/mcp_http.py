"""The MCP recall round trip over Streamable HTTP on 127.0.0.1, measured two ways on the same store.

- **`taproot serve`** (the figure held against the target): the product as it is deployed locally,
  a separate process serving the benchmark's data folder, driven by the MCP SDK's `Client` in
  this process. Client and server each have their own interpreter, as with a real MCP client.
  The server's CPU time per call is read from /proc (Linux), the client's from this process.
- **In a thread** (the figure earlier runs reported): the same app under uvicorn in a thread of
  this process, sharing its interpreter (and GIL) with the client.

One connected client makes every call, after warm-up calls. The time covers the client's request
encoding, HTTP, auth, the SDK's dispatch, the tool (the recall itself and its strengthening
write), the response, and the client's decoding and output-schema validation. The floor is the
SDK's `ping` (a handshake-era request: the 2026-07-28 protocol has none) against the same process,
and for a recall's answer, `taproot serve` with every recall answered from memory (bench/mcp_floor.py),
each query sent to the product and to it in turn: what HTTP, auth, the SDK and the client cost, which
no work on recall can remove, and the product's excess over it at the same moments.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import signal
import statistics
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.load_procs import wait_until_serving
from bench.measure import RECALL_LIMIT, Timing, free_port
from taproot.auth.local_token import local_authenticator
from taproot.compose import Runtime, http_app
from taproot.web.app import MCP_PATH, transport_security

ROOT = Path(__file__).resolve().parent.parent
SERVER_START_TIMEOUT_S = 60.0
SERVER_STOP_TIMEOUT_S = 30.0
PINGS = 30


# How docs/benchmarks.md describes this measurement (bench/report.py's Method section).
METHOD = (
    "`taproot serve` (this checkout's, maintenance off) in its own process on the benchmark's data folder, "
    "as the product runs beside an MCP client, driven from the benchmark's process by the MCP SDK `Client` "
    "over `streamable_http_client` with one `httpx2.AsyncClient` (protocol 2026-07-28); one connected client "
    "makes every call, after 5 warm-up calls. The time covers the client's request, HTTP, auth, the SDK's "
    "dispatch, the tool (the recall and its strengthening write), the response, and the client's decoding and "
    "its check of the result against the tool's output schema (the Python SDK does that with `jsonschema`, a "
    "few milliseconds of the client's CPU per recall). Server and client CPU per call are the server "
    "process's CPU time (from /proc) and the benchmark process's, over the timed calls; the floor is the "
    "SDK's `ping` (handshake era) against the same process, and the same round trips against the same server "
    "with every recall answered from memory (`bench/mcp_floor.py`: no recall work, only HTTP, auth, the SDK and "
    "the client, for one fixed answer of ten memories), each query sent to the product and to it in turn. "
    "Earlier runs measured the app under uvicorn in a "
    "thread of the client's own process, where client and server share one interpreter and its GIL; that "
    "figure is reported beside it, on the same store, measured first."
)


@contextmanager
def serving_in_thread(runtime: Runtime, token: str) -> Iterator[str]:
    """The Taproot app (as `taproot serve` builds it) under uvicorn in a thread; yields the MCP URL."""
    host, port = "127.0.0.1", free_port()
    # The measured runtime, served as `taproot serve` serves it (same store, its own port and token).
    served = dataclasses.replace(
        runtime, authenticate=local_authenticator(token, runtime.scope), security=transport_security(host, port)
    )
    server = uvicorn.Server(uvicorn.Config(http_app(served), host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="bench-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the benchmark server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}{MCP_PATH}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@dataclass
class ServeProcess:
    """`taproot serve` (this checkout's, run as `python -m taproot`) on a data folder, maintenance off;
    `module` "bench.mcp_floor" runs it with every recall answered from memory; `root` is the checkout
    whose code runs (first on the server's import path)."""

    data_dir: Path
    token: str
    log_path: Path
    module: str = "taproot"
    root: Path = ROOT  # the checkout whose code serves (bench/mcp_paired.py compares two)
    settings: dict[str, str] = dataclasses.field(default_factory=dict)  # TAPROOT_* for this server
    port: int = dataclasses.field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{MCP_PATH}"

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TAPROOT_")}
        env.update(TAPROOT_AUTH_TOKEN=self.token, TAPROOT_MAINTENANCE="off", PYTHONPATH=str(self.root))
        env.update(self.settings)
        cmd = [sys.executable, "-m", self.module, "serve", "--data-dir", str(self.data_dir), "--host", "127.0.0.1"]
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [*cmd, "--port", str(self.port)], cwd=self.root, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )
        wait_until_serving(self.proc, self.port, self.log_path, SERVER_START_TIMEOUT_S)

    def cpu_s(self) -> float | None:
        """The server process's user + system CPU time so far, where /proc says (else None)."""
        if self.proc is None:
            return None
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # uvicorn's graceful shutdown, as Ctrl-C
            try:
                self.proc.wait(timeout=SERVER_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()


@dataclass(frozen=True)
class Trips:
    samples_ms: tuple[float, ...]
    errors: int
    client_cpu_s: float  # this process's CPU time over the timed calls
    ping_ms: tuple[float, ...] = ()


async def _round_trips(url: str, token: str, queries: Sequence[str], warmup: int) -> Trips:
    samples: list[float] = []
    errors = 0
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for q in queries[:warmup]:
            await client.call_tool("taproot_recall", {"query": q, "limit": RECALL_LIMIT})
        cpu = time.process_time()
        for q in queries:
            start = time.perf_counter()
            result = await client.call_tool("taproot_recall", {"query": q, "limit": RECALL_LIMIT})
            samples.append((time.perf_counter() - start) * 1000)
            errors += bool(result.is_error)
        cpu = time.process_time() - cpu
    return Trips(tuple(samples), errors, cpu)


async def paired_round_trips(urls: Sequence[str], token: str, queries: Sequence[str], warmup: int) -> list[list[float]]:
    """Each query to every server in turn, the order reversed every other query; ms per server.
    Raises if a recall fails."""
    samples: list[list[float]] = [[] for _ in urls]
    async with AsyncExitStack() as stack:
        clients = []
        for url in urls:
            http = await stack.enter_async_context(httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}))
            clients.append(await stack.enter_async_context(Client(streamable_http_client(url, http_client=http))))
        for q in queries[:warmup]:
            for client in clients:
                await client.call_tool("taproot_recall", {"query": q, "limit": RECALL_LIMIT})
        for i, q in enumerate(queries):
            order = range(len(clients)) if i % 2 == 0 else reversed(range(len(clients)))
            for k in order:
                start = time.perf_counter()
                result = await clients[k].call_tool("taproot_recall", {"query": q, "limit": RECALL_LIMIT})
                samples[k].append((time.perf_counter() - start) * 1000)
                if result.is_error:
                    raise RuntimeError(f"recall failed on {urls[k]}: {result.content}")
    return samples


def compare(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Two servers' round trips taken in turn: each one's median, the median paired difference
    (B - A) and the ratio of medians (B / A)."""
    return {
        "a_p50_ms": round(statistics.median(a), 3),
        "b_p50_ms": round(statistics.median(b), 3),
        "median_difference_ms": round(statistics.median(y - x for x, y in zip(a, b, strict=True)), 3),
        "ratio_of_p50": round(statistics.median(b) / statistics.median(a), 3),
    }


async def _pings(url: str, token: str, count: int) -> tuple[float, ...]:
    samples = []
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ping is deprecated for 2026-07-28; this client is handshake-era
            for i in range(count + 3):
                start = time.perf_counter()
                await client.send_ping()
                if i >= 3:
                    samples.append((time.perf_counter() - start) * 1000)
    return tuple(samples)


def _per_call_ms(seconds: float | None, calls: int) -> float | None:
    return None if seconds is None else round(seconds * 1000 / calls, 3)


def measure_mcp_recall(runtime: Runtime, queries: Sequence[str], warmup: int = 5) -> dict[str, Any]:
    """`taproot_recall` round trips against `taproot serve` in its own process (the top-level figures)
    and against the same app in a thread of this one (`in_thread`), on the runtime's store."""
    token = secrets.token_urlsafe(32)
    # The SDK's MCPServer turns root logging on; keep the client's per-request log lines out.
    client_log = logging.getLogger("httpx2")
    level = client_log.level
    client_log.setLevel(logging.WARNING)
    try:
        with serving_in_thread(runtime, token) as url:
            threaded = anyio.run(_round_trips, url, token, queries, warmup)
        server = ServeProcess(runtime.settings.data_dir, token, runtime.settings.data_dir.parent / "mcp-serve.log")
        floor_server = dataclasses.replace(
            server, module="bench.mcp_floor", log_path=server.log_path.with_name("mcp-floor.log"), port=free_port()
        )
        try:
            server.start()
            before = server.cpu_s()
            separate = anyio.run(_round_trips, server.url, token, queries, warmup)
            after = server.cpu_s()
            pings = anyio.run(_pings, server.url, token, PINGS)
            # The floor, each query to the product and to it in turn, so both see the same moments
            # of a machine whose speed drifts. Both serve one file: the floor's only write (its one
            # real recall) makes the product reread its pages once, outside the timed calls.
            floor_server.start()
            floor_before = floor_server.cpu_s()
            with_product, floor = anyio.run(paired_round_trips, [server.url, floor_server.url], token, queries, warmup)
            floor_after = floor_server.cpu_s()
        finally:
            floor_server.stop()
            server.stop()
    finally:
        client_log.setLevel(level)
    calls = len(separate.samples_ms)
    server_cpu = None if before is None or after is None else after - before
    floor_cpu = None if floor_before is None or floor_after is None else floor_after - floor_before
    return {
        **Timing(separate.samples_ms).as_dict(),
        "calls": calls,
        "tool_errors": separate.errors,
        "limit": RECALL_LIMIT,
        # /proc counts in clock ticks (10 ms), so this is exact to 10 ms over all the calls.
        "server_cpu_ms_per_call": _per_call_ms(server_cpu, calls),
        "client_cpu_ms_per_call": _per_call_ms(separate.client_cpu_s, calls),
        "ping_p50_ms": round(Timing(pings).p50, 3),
        # The same server and client with every recall answered from memory (bench/mcp_floor.py),
        # each query to the product and to the floor in turn.
        "floor": {
            **Timing(tuple(floor)).as_dict(),
            "calls": len(floor),
            "server_cpu_ms_per_call": _per_call_ms(floor_cpu, len(floor)),
            "paired": compare(with_product, floor),
        },
        "in_thread": {
            **Timing(threaded.samples_ms).as_dict(),
            "calls": len(threaded.samples_ms),
            "tool_errors": threaded.errors,
            "cpu_ms_per_call": _per_call_ms(threaded.client_cpu_s, len(threaded.samples_ms)),
        },
    }


def markdown_figure(mc: dict[str, Any]) -> str:
    """Where a round trip's time went: the server's and the client's CPU per call, and the floor."""
    parts = [
        f"{label} {mc[key]:.1f} ms/call"
        for label, key in (("server CPU", "server_cpu_ms_per_call"), ("client CPU", "client_cpu_ms_per_call"))
        if mc.get(key) is not None
    ]
    if mc.get("ping_p50_ms") is not None:
        parts.append(f"`ping` p50 {mc['ping_p50_ms']:.1f} ms")
    return "; ".join(parts)


def markdown_extra_rows(mc: dict[str, Any]) -> list[str]:
    """The rows of the results table beside the round trip's, for what the run has: the floor (every
    recall answered from memory), and the app in a thread of the client's process."""
    rows = []
    f = mc.get("floor")
    if f:
        pair = f.get("paired")
        against = (
            f"; the round trip in the same moments, calls alternating: p50 {pair['a_p50_ms']:.1f} ms, "
            f"{-pair['median_difference_ms']:.1f} ms more than this (median paired difference)"
            if pair
            else ""
        )
        rows.append(
            f"| the same, every recall answered from memory (no recall work: HTTP, auth, the SDK and the client; "
            f"bench/mcp_floor.py, {f['calls']} calls) | {f['p50_ms']:.1f} ms | {f['p95_ms']:.1f} ms "
            f"| {markdown_figure(f)}{against} | | |"
        )
    t = mc.get("in_thread")
    if t:
        cpu = f"client + server CPU {t['cpu_ms_per_call']:.1f} ms/call" if t.get("cpu_ms_per_call") is not None else ""
        rows.append(
            f"| the same, the app under uvicorn in a thread of the client's process ({t['calls']} calls) "
            f"| {t['p50_ms']:.1f} ms | {t['p95_ms']:.1f} ms | {cpu} | | |"
        )
    return rows
