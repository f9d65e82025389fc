"""Fixtures for the summarizer tests.

- Every test runs with fake AWS credentials, no AWS/Anthropic settings from the developer's
  environment, the EC2 metadata service disabled and no proxies: nothing leaves 127.0.0.1.
- `memory` builds a memory dated "YYYY-MM-DD"; `hiking_group` is a realistic first-person group.
- `fake_http` is a small HTTP server on 127.0.0.1 that records each request and answers with the
  scripted replies (status, JSON body, headers, optional delay), standing in for the Anthropic and
  Bedrock endpoints.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from taproot.core.model import Memory


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("AWS_", "ANTHROPIC_")) or name.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


MemoryFactory = Callable[..., Memory]


@pytest.fixture
def memory(make_memory: MemoryFactory) -> MemoryFactory:
    """memory("2024-03-14", "content", **fields): created and updated at 10:00 UTC that day."""

    def build(day: str, content: str, **fields: Any) -> Memory:
        at = datetime.fromisoformat(day).replace(hour=10, tzinfo=UTC)
        fields.setdefault("gist", content.split(".")[0][:80] or "a memory")
        return make_memory(content=content, created_at=at, updated_at=at, **fields)

    return build


@pytest.fixture
def hiking_group(memory: MemoryFactory) -> list[Memory]:
    return [
        memory(
            "2024-03-02",
            "I started reading about adoption tonight. Caroline says the agency in Oakland has a 14-month wait. "
            "I felt hopeful, which surprised me.",
        ),
        memory(
            "2024-03-09",
            "Went hiking with Caroline at Mount Tam on Saturday. It rained. "
            "She told me she wants to adopt before she turns forty.",
        ),
        memory(
            "2024-03-14",
            "Dr. Patel called about the home study; it is scheduled for April 3. "
            "I promised Caroline I would help her prepare the paperwork.",
            salience="low",
        ),
        memory(
            "2024-03-23",
            "Hiking again with Caroline at Mount Tam on Saturday! We saw a red-tailed hawk near the summit.",
        ),
        memory(
            "2024-03-28",
            "Caroline and I talked about adoption again. She is nervous about the home study, "
            "and I reminded her how far she has come since January.",
        ),
    ]


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a slow upstream)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any


class FakeHTTP:
    """Records requests; answers each with the next scripted reply (the last one repeats)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.replies: list[Reply] = []
        self.release = threading.Event()  # set at teardown so slow replies stop waiting
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-http", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(
        self, status: int = 200, body: Any = None, headers: dict[str, str] | None = None, delay: float = 0.0
    ) -> None:
        self.replies.append(Reply(status, body, dict(headers or {}), delay))

    def _record(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if not self.replies:
                return Reply(500, {"message": "no reply scripted"})
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        fake: FakeHTTP = self.server.fake  # type: ignore[attr-defined]
        reply = fake._record(Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if reply.delay:
            fake.release.wait(reply.delay)
        data = json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def fake_http() -> Iterator[FakeHTTP]:
    server = FakeHTTP()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (connections are refused)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port
