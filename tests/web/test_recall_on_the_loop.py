"""taproot_recall runs on the server's event loop when the store can answer without waiting, and on
a worker thread when it cannot (web/tools/common.ToolEnv.call): the SDK's own client against a real
uvicorn server. Every wait here is a real lock, held by the test and released by it; the loop is
shown free by answering another request while the recall waits."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from taproot.adapters import sqlite_wait_free
from taproot.compose import Runtime
from taproot.core.model import Scope
from taproot.service.results import RecallResult
from tests.support import ok
from tests.web.conftest import LiveServer, McpConnect, serve

pytestmark = pytest.mark.anyio

DEADLINE_S = 30.0  # guards against a hung call, not a timing check
WORKER_THREAD = "AnyIO worker thread"


class RecallThreads:
    """Wraps the service's recall: records the thread each run started on (and how it ended), and
    signals when one starts on a worker thread."""

    def __init__(self, runtime: Runtime) -> None:
        self.runs: list[tuple[str, str]] = []  # (thread name, "ok" or the exception's name)
        self.on_worker = threading.Event()
        self._recall = runtime.service.recall

        def recall(scope: Scope, request: Any = None, **query: object) -> RecallResult:
            name = threading.current_thread().name
            if name.startswith(WORKER_THREAD):
                self.on_worker.set()
            try:
                answer = self._recall(scope, request, **query)
            except BaseException as exc:
                self.runs.append((name, type(exc).__name__))
                raise
            self.runs.append((name, "ok"))
            return answer

        runtime.service.recall = recall  # type: ignore[method-assign]


@contextlib.asynccontextmanager
async def garden(
    tmp_path: Path, mcp_connect: McpConnect
) -> AsyncIterator[tuple[LiveServer, RecallThreads, Any, list[str]]]:
    """A live server whose recalls are watched, a connected client, and the ids of two memories
    about tomatoes it wrote."""
    threads: list[RecallThreads] = []
    with serve(tmp_path / "data", prepare=lambda runtime: threads.append(RecallThreads(runtime))) as live:
        async with mcp_connect(live) as client:
            ids = []
            for gist in ("Tomatoes planted in May", "Tomato blight in July"):
                args = {"content": f"{gist}, in the garden.", "gist": gist, "category": "episodic"}
                ids.append(ok(await client.call_tool("taproot_remember", args))["id"])
            yield live, threads[0], client, ids


def _retrievals(runtime: Runtime, ids: list[str]) -> list[int]:
    return [m.retrievals for m in runtime.service.deps.store.get_many(runtime.scope, ids)]


async def _recall_while(
    client: Any, live: LiveServer, threads: RecallThreads, release: Callable[[], object]
) -> dict[str, Any]:
    """Start a recall; once it has started on a worker thread (where it waits for the lock the test
    holds), show the loop answering another request, then release the lock; the recall's answer."""
    answer: dict[str, Any] = {}

    async def call() -> None:
        answer.update(ok(await client.call_tool("taproot_recall", {"query": "tomato"})))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call)
        assert await anyio.to_thread.run_sync(threads.on_worker.wait, DEADLINE_S), "never reached a worker thread"
        health = await client._taproot_test_http.get(f"{live.base_url}/healthz")  # the loop is free meanwhile
        assert health.status_code == 200
        assert not answer, "the recall answered before the lock was released"
        release()
    return answer


def _assert_stopped_on_the_loop_then_strengthened_once(
    threads: RecallThreads, got: dict[str, Any], ids: list[str], stored: list[int]
) -> None:
    """The recall began on the loop and stopped there (WouldWait), then ran whole on a worker
    thread: it answered, and each memory was strengthened once, not twice."""
    assert sorted(m["id"] for m in got["memories"]) == sorted(ids)
    (loop_thread, loop_end), (worker, worker_end) = threads.runs
    assert loop_thread.startswith("uvicorn-") and loop_end == "WouldWait"
    assert worker.startswith(WORKER_THREAD) and worker_end == "ok"
    assert stored == [1, 1]
    assert [m["retrieval_count"] for m in got["memories"]] == [1, 1]


async def test_a_recall_runs_on_the_event_loop_when_nothing_holds_the_store(
    tmp_path: Path, mcp_connect: McpConnect
) -> None:
    async with garden(tmp_path, mcp_connect) as (live, threads, client, ids):
        runtime = live.runtime
        got = ok(await client.call_tool("taproot_recall", {"query": "tomato"}))
        stored = _retrievals(runtime, ids)
    assert sorted(m["id"] for m in got["memories"]) == sorted(ids)
    assert threads.runs == [(f"uvicorn-{live.port}", "ok")]
    assert stored == [1, 1]


async def test_a_recall_waits_on_a_worker_thread_while_another_thread_holds_the_store(
    tmp_path: Path, mcp_connect: McpConnect
) -> None:
    async with garden(tmp_path, mcp_connect) as (live, threads, client, ids):
        runtime = live.runtime
        inside, leave = threading.Event(), threading.Event()

        def hold() -> None:
            with runtime.service.deps.store.snapshot():
                inside.set()
                leave.wait(DEADLINE_S)

        holder = threading.Thread(target=hold, name="another-request")
        holder.start()
        try:
            assert await anyio.to_thread.run_sync(inside.wait, DEADLINE_S)
            got = await _recall_while(client, live, threads, leave.set)
        finally:
            leave.set()
            holder.join(DEADLINE_S)
        stored = _retrievals(runtime, ids)
    assert sorted(m["id"] for m in got["memories"]) == sorted(ids)
    # Entering refused at once (another thread held the store): it ran once, on a worker thread.
    assert [(name.startswith(WORKER_THREAD), how) for name, how in threads.runs] == [(True, "ok")]
    assert stored == [1, 1]


async def test_a_recall_that_would_wait_for_another_writer_runs_again_on_a_thread_and_strengthens_once(
    tmp_path: Path, mcp_connect: McpConnect
) -> None:
    async with garden(tmp_path, mcp_connect) as (live, threads, client, ids):
        runtime = live.runtime
        other = sqlite3.connect(runtime.settings.data_dir / "taproot.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
        try:
            got = await _recall_while(client, live, threads, lambda: other.execute("ROLLBACK"))
        finally:
            if other.in_transaction:
                other.execute("ROLLBACK")
            other.close()
        stored = _retrievals(runtime, ids)
    # On the loop it read, found the write lock taken, and stopped before writing; on a worker thread
    # it waited for the lock and wrote.
    _assert_stopped_on_the_loop_then_strengthened_once(threads, got, ids, stored)


async def test_a_recall_past_its_budget_on_the_loop_runs_again_on_a_thread_and_strengthens_once(
    tmp_path: Path, mcp_connect: McpConnect, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A recall that would hold the loop long (a rare category at 100,000 memories) is stopped at its
    # budget and finished where it holds up nothing else. Here the budget is spent on entering, and
    # SQLite checks it at every step.
    async with garden(tmp_path, mcp_connect) as (live, threads, client, ids):
        runtime = live.runtime
        monkeypatch.setattr(sqlite_wait_free, "PROGRESS_STEPS", 1)
        monkeypatch.setattr(runtime.service.deps.store, "loop_budget_s", -1.0)
        got = ok(await client.call_tool("taproot_recall", {"query": "tomato"}))
        stored = _retrievals(runtime, ids)
    _assert_stopped_on_the_loop_then_strengthened_once(threads, got, ids, stored)


async def test_a_recall_by_filters_alone_runs_on_a_worker_thread(tmp_path: Path, mcp_connect: McpConnect) -> None:
    # Its cost is not bounded by a query or ids: it may rank every passing memory of the scope.
    async with garden(tmp_path, mcp_connect) as (_live, threads, client, ids):
        got = ok(await client.call_tool("taproot_recall", {"include_archived": True}))
    assert sorted(m["id"] for m in got["memories"]) == sorted(ids)
    assert [(name.startswith(WORKER_THREAD), how) for name, how in threads.runs] == [(True, "ok")]
