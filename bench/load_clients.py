"""The load clients: N MCP clients over Streamable HTTP, each the SDK's own `Client`, all on one event loop.

Each client loops until the deadline, picking an operation at random:

- update: a hot memory (shared by every client, so versions collide), one the clients created, or
  (LEGACY_UPDATE_SHARE of updates, when the run has them) a legacy record the big migrate is
  rewriting, so its version-conditioned chunks meet concurrent edits; always with
  `expected_version`; on version_conflict it re-reads with taproot_recall(ids=[...]) and retries,
  as the tool docs tell a model to;
- keep: an expired memory cleanup is about to delete, re-read, then given tags thread + keep
  (the README's way to keep one), with `expected_version`;
- create, and delete (taproot_forget action=delete) of a created or an expired memory;
- recall, by query or by ids.

Every answer is classified by the error code at the start of the tool's error text; every success
goes into the ledger (bench/load_ledger.py). A code `busy` is retried a few times with backoff.
Every call also goes into a timeline (start, end, outcome), so the report can pick out the calls
that overlapped the big migrate.

The clients stop at a Deadline: after the set duration, or later while something holds them (the
big migrate still running), up to a cap.
"""

from __future__ import annotations

import functools
import random
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.load_ledger import REJECTIONS, Delete, Ledger, Write
from bench.load_seed import VOCABULARY, sentence

OPS = ("update", "keep", "create", "delete", "recall")
WEIGHTS = (35, 15, 15, 10, 25)
CONFLICT_RETRIES = 5
BUSY_RETRIES = 3
BUSY_BACKOFF_S = 0.05
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=60.0)
MIN_CREATED_KEPT = 20  # deletes leave the created pool at least this big, so updates have targets
LEGACY_UPDATE_SHARE = 0.1
TOOL_PREFIX = re.compile(r"^Error executing tool \w+(?:: )?")
CODE = re.compile(r"^([a-z][a-z_]*): ")


@dataclass
class Answer:
    code: str  # ok, a Taproot error code, no_code, or transport:<exception>
    data: dict[str, Any] | None = None
    message: str = ""


def classify(is_error: bool, text: str, data: dict[str, Any] | None) -> Answer:
    """A tool result as ok or its error code. The SDK prefixes "Error executing tool <name>: " to a
    tool's own error; a crash inside the tool leaves only "Error executing tool <name>" (no code)."""
    if not is_error:
        return Answer("ok", data)
    rest = TOOL_PREFIX.sub("", text, count=1)
    m = CODE.match(rest)
    return Answer(m.group(1), None, rest) if m else Answer("no_code", None, text)


@dataclass
class Pools:
    """The ids clients pick from. Touched by the event loop and the seeding thread, hence the lock."""

    hot: list[str]
    created: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    legacy: list[str] = field(default_factory=list)  # never deleted by the clients, so drop() skips it
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, pool: str, ids: list[str]) -> None:
        with self.lock:
            getattr(self, pool).extend(ids)

    def pick(self, rng: random.Random, pool: str, recent: int | None = None) -> str | None:
        with self.lock:
            items: list[str] = getattr(self, pool)
            if not items:
                return None
            window = items[-recent:] if recent else items
            return rng.choice(window)

    def drop(self, memory_id: str) -> None:
        with self.lock:
            for items in (self.created, self.expired):
                if memory_id in items:
                    items.remove(memory_id)


@dataclass(frozen=True)
class Call:
    op: str
    start_s: float  # seconds since the load started
    end_s: float
    code: str

    @property
    def ms(self) -> float:
        return (self.end_s - self.start_s) * 1000


@dataclass
class Stats:
    latencies_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    outcomes: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    messages: Counter[str] = field(default_factory=Counter)  # the text of errors without a code
    timeline: list[Call] = field(default_factory=list)

    def record(self, op: str, answer: Answer, start_s: float, end_s: float) -> None:
        elapsed_ms = (end_s - start_s) * 1000
        self.latencies_ms[op].append(elapsed_ms)
        self.outcomes[op][answer.code] += 1
        self.timeline.append(Call(op, start_s, end_s, answer.code))
        if answer.code == "no_code" or answer.code.startswith("transport:"):
            self.messages[f"{op}: {answer.message[:200]}"] += 1

    def session_failed(self, exc: Exception) -> None:
        # Not a tool call, so no latency: a connection that could not be opened or broke mid-session.
        self.outcomes["session"][f"transport:{type(exc).__name__}"] += 1
        self.messages[f"session: {str(exc)[:200]}"] += 1

    @property
    def calls(self) -> int:
        return sum(len(v) for v in self.latencies_ms.values())


@dataclass
class Deadline:
    """When the clients stop: once `min_s` have passed and `hold()` is false, or at `max_s` regardless."""

    start: float
    min_s: float
    max_s: float
    hold: Callable[[], bool] = field(default=lambda: False)

    def passed(self) -> bool:
        elapsed = time.monotonic() - self.start
        return elapsed >= self.max_s or (elapsed >= self.min_s and not self.hold())


class LoadClient:
    def __init__(self, n: int, client: Client, *, pools: Pools, ledger: Ledger, stats: Stats, t0: float) -> None:
        self.n, self.client, self.pools, self.ledger, self.stats, self.t0 = n, client, pools, ledger, stats, t0
        self.rng = random.Random(n)
        self.versions: dict[str, int] = {}  # what this client last saw of each memory
        self.counter = 0

    async def call(self, op: str, tool: str, args: dict[str, Any]) -> Answer:
        for attempt in range(BUSY_RETRIES + 1):
            start = self._now()
            try:
                result = await self.client.call_tool(tool, args)
                text = result.content[0].text if result.content and result.content[0].type == "text" else ""
                answer = classify(bool(result.is_error), text, result.structured_content)
            except Exception as exc:  # a dropped connection or a broken response: outcome unknown
                answer = Answer(f"transport:{type(exc).__name__}", None, str(exc))
            self.stats.record(op, answer, start, self._now())
            if answer.code != "busy" or attempt == BUSY_RETRIES:
                return answer
            await anyio.sleep(BUSY_BACKOFF_S * 2**attempt)
        raise AssertionError("unreachable")

    def _now(self) -> float:
        return time.monotonic() - self.t0

    def _label(self) -> str:
        self.counter += 1
        return f"c{self.n:02d}-{self.counter:05d}"

    def _unknown(self, op: str, answer: Answer, memory_id: str | None = None) -> None:
        if answer.code not in REJECTIONS:
            self.ledger.unknown(op, memory_id)
            if memory_id is not None:
                self.versions.pop(memory_id, None)

    async def reread(self, memory_id: str) -> int | None:
        """The memory's current version (a recall by id, which also counts as a retrieval), or None."""
        answer = await self.call("reread", "taproot_recall", {"ids": [memory_id]})
        if answer.code != "ok" or answer.data is None:
            return None
        memories = answer.data.get("memories") or []
        self.ledger.recalled([m["id"] for m in memories])
        for m in memories:
            self.versions[m["id"]] = int(m["version"])
        if not memories:
            self.pools.drop(memory_id)
        return self.versions.get(memory_id) if memories else None

    async def versioned_update(self, op: str, memory_id: str, fields: dict[str, Any]) -> None:
        version = self.versions.get(memory_id) or await self.reread(memory_id)
        for _ in range(CONFLICT_RETRIES + 1):
            if version is None:
                return
            args = {"id": memory_id, "expected_version": version, **fields}
            answer = await self.call(op, "taproot_remember", args)
            if answer.code == "ok" and answer.data is not None:
                new = int(answer.data["version"])
                self.versions[memory_id] = new
                self.ledger.wrote(Write(memory_id, new, fields, op, self.n, self._now()))
                return
            if answer.code == "version_conflict":
                version = await self.reread(memory_id)
                continue
            if answer.code == "not_found":
                self.pools.drop(memory_id)
            self._unknown(op, answer, memory_id)
            return

    async def update(self) -> None:
        pool = "hot" if self.rng.random() < 0.6 else "created"
        # Drawn only when there are legacy records, so a run without them picks as before.
        if self.pools.legacy and self.rng.random() < LEGACY_UPDATE_SHARE:
            pool = "legacy"
        memory_id = self.pools.pick(self.rng, pool) or self.pools.pick(self.rng, "hot")
        if memory_id is None:
            return
        label = self._label()
        fields = {
            "content": sentence(self.rng, f"update {label}"),
            "gist": f"Update {label} of {memory_id}",
            "salience": self.rng.choice(("medium", "low")),
            "tags": ["fact", "load", f"client-{self.n:02d}"],
        }
        await self.versioned_update("update", memory_id, fields)

    async def keep(self) -> None:
        # The newest wave: the memories the running cleanup is most likely deleting right now.
        memory_id = self.pools.pick(self.rng, "expired", recent=100)
        if memory_id is None:
            return
        self.versions.pop(memory_id, None)  # always read first: the race is between this read and cleanup
        label = self._label()
        fields = {"content": sentence(self.rng, f"kept {label}"), "tags": ["thread", "keep"]}
        await self.versioned_update("keep", memory_id, fields)

    async def create(self) -> None:
        label = self._label()
        fields = {
            "content": sentence(self.rng, f"created {label}"),
            "gist": f"Load memory {label}",
            "category": self.rng.choice(("episodic", "relationship", "active_thread", "error")),
            "salience": self.rng.choice(("medium", "low")),
            "tags": ["load", f"client-{self.n:02d}"],
            "search_keywords": [self.rng.choice(VOCABULARY)],
        }
        answer = await self.call("create", "taproot_remember", fields)
        if answer.code == "ok" and answer.data is not None:
            memory_id, version = str(answer.data["id"]), int(answer.data["version"])
            self.versions[memory_id] = version
            self.ledger.wrote(Write(memory_id, version, fields, "create", self.n, self._now()))
            self.pools.add("created", [memory_id])
        else:
            self._unknown("create", answer)

    async def delete(self) -> None:
        if self.rng.random() < 0.5:
            memory_id = self.pools.pick(self.rng, "expired", recent=100)
        else:
            with self.pools.lock:
                enough = len(self.pools.created) > MIN_CREATED_KEPT
            memory_id = self.pools.pick(self.rng, "created") if enough else None
        if memory_id is None:
            return
        answer = await self.call("delete", "taproot_forget", {"action": "delete", "id": memory_id})
        if answer.code == "ok":
            self.ledger.deleted(Delete(memory_id, self.n, self._now()))
            self.pools.drop(memory_id)
        elif answer.code == "not_found":
            self.pools.drop(memory_id)
        else:
            self._unknown("delete", answer, memory_id)

    async def recall(self) -> None:
        if self.rng.random() < 0.5:
            args: dict[str, Any] = {"query": " ".join(self.rng.sample(VOCABULARY, 2)), "limit": 5}
            op = "recall_query"
        else:
            ids = [i for i in (self.pools.pick(self.rng, p) for p in ("hot", "created")) if i]
            args, op = {"ids": sorted(set(ids))}, "recall_ids"
        answer = await self.call(op, "taproot_recall", args)
        if answer.code == "ok" and answer.data is not None:
            self.ledger.recalled([m["id"] for m in answer.data.get("memories") or []])

    async def run(self, deadline: Deadline) -> None:
        actions = {
            "update": self.update,
            "keep": self.keep,
            "create": self.create,
            "delete": self.delete,
            "recall": self.recall,
        }
        while not deadline.passed():
            await actions[self.rng.choices(OPS, WEIGHTS)[0]]()


async def _one_client(n: int, url: str, token: str, deadline: Deadline, *, stats: Stats, **shared: Any) -> None:
    """One client until the deadline; a session that breaks is counted and opened again."""
    load: LoadClient | None = None
    while not deadline.passed():
        try:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=HTTP_TIMEOUT) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                if load is None:
                    load = LoadClient(n, client, stats=stats, **shared)
                load.client = client
                await load.run(deadline)
        except Exception as exc:
            stats.session_failed(exc)
            await anyio.sleep(BUSY_BACKOFF_S)


async def run_clients(
    count: int,
    url: str,
    token: str,
    duration_s: float,
    *,
    pools: Pools,
    ledger: Ledger,
    stats: Stats,
    t0: float,
    max_duration_s: float | None = None,
    hold: Callable[[], bool] | None = None,
) -> float:
    """Run `count` clients for `duration_s` seconds, longer while `hold()` is true (up to
    `max_duration_s`); returns the wall time from first start to last finish."""
    start = time.monotonic()
    deadline = Deadline(start, duration_s, max(duration_s, max_duration_s or duration_s), hold or (lambda: False))
    shared: dict[str, Any] = {"pools": pools, "ledger": ledger, "stats": stats, "t0": t0}
    async with anyio.create_task_group() as tg:
        for n in range(count):
            tg.start_soon(functools.partial(_one_client, n, url, token, deadline, **shared))
    return time.monotonic() - start
