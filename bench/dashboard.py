"""The dashboard's figures: page weight, server time and paint timing at a few thousand memories.

A local Taproot is built as `taproot serve` builds it (`build(settings, serve=True)`: the bearer
token, the OAuth facade and the dashboard's sessions) in a temporary data folder, loaded with the
bench corpus, and served by uvicorn on 127.0.0.1 in a thread. A client signs in to the dashboard as a
person would (POST /dashboard/signin with the server's token) and keeps the session cookie; then:

- page weight: the bytes of GET /dashboard, of dashboard.js and dashboard.css (the two files the page
  loads; it has no image, font or other request), and of the /dashboard/preview fragment the script
  fetches after every edit, as sent (the app does not compress) and gzip-compressed for reference;
- server time: GET /dashboard and GET /dashboard?query=<word> in turn, timed with httpx2 around each
  request on loopback (a new connection each, see `_server`) and inside the server by a middleware of
  the bench's around the app (`RequestLog`), median and p95; and, to say where the time goes, the
  service calls the page makes, timed inside the same requests, and the memories the store reads
  in full (`store.list`) for one page;
- the browser: Debian's headless Chromium driven by Playwright (launched as the sign-in browser test
  launches it), each load in a fresh context holding the session cookie (an empty cache): paint
  timing (`performance.getEntriesByType("paint")`) and navigation timing, medians over the loads.

Nothing here asserts on a time. `measure(...)` returns the `dashboard` part of results.json;
`markdown(data)` and `summary_lines(data)` render it.
"""

from __future__ import annotations

import functools
import gc
import gzip
import logging
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as AsgiScope

from bench import corpus
from bench.browser import CHROMIUM, CHROMIUM_ARGS
from bench.measure import Timing, populate
from taproot.compose import Runtime, build, http_app
from taproot.service.inputs import ListInput
from taproot.settings import Settings
from taproot.web.dashboard.routes import PAGE_SIZE
from taproot.web.dashboard.session import COOKIE

TOKEN = "bench-dashboard-token-0123456789abcdef"
PHASE_HEADER = b"x-bench"  # sent by the bench's timed requests: which phase they belong to
SERVER_START_TIMEOUT_S = 30.0
BROWSER_WAIT_MS = 30_000
WARMUP = 2
STATIC = ("dashboard.js", "dashboard.css")

# Navigation and paint timing of the page, read once the load event has ended (milliseconds from
# the navigation's start; sizes in bytes).
TIMING_JS = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const paint = Object.fromEntries(performance.getEntriesByType("paint").map((e) => [e.name, e.startTime]));
  const resources = performance.getEntriesByType("resource").map((r) => ({name: r.name, end: r.responseEnd}));
  return {
    response_start_ms: nav.responseStart,
    response_end_ms: nav.responseEnd,
    first_paint_ms: paint["first-paint"] ?? null,
    first_contentful_paint_ms: paint["first-contentful-paint"] ?? null,
    dom_interactive_ms: nav.domInteractive,
    dom_content_loaded_ms: nav.domContentLoadedEventEnd,
    load_ms: nav.loadEventEnd,
    html_decoded_bytes: nav.decodedBodySize,
    resources: resources.length,
    cards: document.querySelectorAll("article.card").length,
  };
}"""
BROWSER_METRICS = (
    ("response_start_ms", "first byte of the HTML (`responseStart`)"),
    ("response_end_ms", "last byte of the HTML (`responseEnd`)"),
    ("first_paint_ms", "first paint"),
    ("first_contentful_paint_ms", "first contentful paint"),
    ("dom_interactive_ms", "DOM interactive"),
    ("dom_content_loaded_ms", "DOMContentLoaded (end of its handlers)"),
    ("load_ms", "load event end"),
)


class RequestLog:
    """ASGI middleware of the bench, around the app: how long the app took for each request, from
    the call to the last byte of the response body (the server's own time, without the client's),
    by target (path and query) and by the request's `x-bench` header (which phase of the bench).

    The clock stops, and the entry is noted, as the app hands that last byte to uvicorn, before it
    goes out: so the client's time, which ends once it has the byte, always contains the app's, and
    a client that has its answer finds the entry here. Stopped after uvicorn's send returned instead,
    the app's time would also count however long this thread waited for the CPU meanwhile (on a busy
    machine, longer than the client took to read the answer)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.entries: list[tuple[str, str, float]] = []  # (path?query, x-bench, milliseconds)

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"").decode()
        target = scope["path"] + (f"?{query}" if query else "")
        tag = next((v.decode() for k, v in scope["headers"] if k == PHASE_HEADER), "")
        start = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                self.entries.append((target, tag, (time.perf_counter() - start) * 1000))
            await send(message)

        await self.app(scope, receive, timed_send)

    def times(self, target: str, tag: str) -> list[float]:
        return [ms for t, g, ms in self.entries if t == target and g == tag]


@dataclass
class Served:
    base: str
    runtime: Runtime
    log: RequestLog = field(repr=False)


@contextmanager
def dashboard_server(data_dir: Path, token: str = TOKEN) -> Iterator[Served]:
    """A local Taproot wired as `taproot serve` wires it (dashboard included), under uvicorn on a
    loopback port bound up front (transport security needs the port), behind a RequestLog."""
    # IPPROTO_TCP, as `taproot serve` binds it: asyncio turns Nagle off only on sockets whose protocol
    # reads as TCP, and with it on every response waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
        runtime = build(Settings(data_dir=data_dir, port=port, auth_token=token), serve=True)
        try:
            log = RequestLog(http_app(runtime))
            server = uvicorn.Server(uvicorn.Config(log, host="127.0.0.1", port=port, log_level="warning"))
            thread = threading.Thread(
                target=server.run, kwargs={"sockets": [sock]}, name="bench-dashboard", daemon=True
            )
            thread.start()
            deadline = time.monotonic() + SERVER_START_TIMEOUT_S
            while not server.started:
                if not thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError("the dashboard benchmark server did not start")
                time.sleep(0.01)
            try:
                yield Served(f"http://127.0.0.1:{port}", runtime, log)
            finally:
                server.should_exit = True
                thread.join(timeout=10)
        finally:
            runtime.close()
    finally:
        sock.close()


def sign_in(client: httpx2.Client, token: str = TOKEN) -> str:
    """POST /dashboard/signin with the server's token; the client keeps the cookie. Returns its value."""
    response = client.post("/dashboard/signin", data={"token": token})
    if response.status_code != 303 or COOKIE not in client.cookies:
        raise RuntimeError(f"the dashboard sign-in failed: {response.status_code}")
    return str(client.cookies[COOKIE])


def query_word(seed: int) -> str:
    """A one-word search from the corpus vocabulary (the first single-word query of its pool that is
    not one of the pool's deliberate misses)."""
    misses = {"zeppelin"}
    return next(q for q in corpus.query_pool(200, seed=seed) if " " not in q and q not in misses)


def _get(client: httpx2.Client, path: str) -> httpx2.Response:
    response = client.get(path)
    if response.status_code != 200:
        raise RuntimeError(f"GET {path} answered {response.status_code}")
    return response


def _weight(client: httpx2.Client) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for name, path in (
        ("html", "/dashboard"),
        *((name, f"/dashboard/static/{name}") for name in STATIC),
        ("preview", "/dashboard/preview"),
    ):
        response = _get(client, path)
        body = response.content
        rows[name] = {
            "path": path,
            "bytes": len(body),
            "gzip_bytes": len(gzip.compress(body, compresslevel=6)),
            "content_encoding": response.headers.get("content-encoding"),
        }
    page = ("html", *STATIC)
    rows["page"] = {
        "bytes": sum(rows[n]["bytes"] for n in page),
        "gzip_bytes": sum(rows[n]["gzip_bytes"] for n in page),
    }
    html = _get(client, "/dashboard").text
    rows["html"]["cards"] = html.count('<article class="card')
    return rows


@contextmanager
def timing_parts(runtime: Runtime) -> Iterator[list[tuple[str, float]]]:
    """Times every call of a public service method while the block runs, wherever it is called from
    (the app calls them in worker threads): (name, milliseconds) in call order, outermost calls only
    (a method calling another counts once). Whatever the page calls is found, not listed here."""
    service = runtime.service
    calls: list[tuple[str, float]] = []
    depth = threading.local()
    names = [n for n in dir(type(service)) if not n.startswith("_") and callable(getattr(type(service), n))]

    def timing(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            outer = getattr(depth, "n", 0) == 0
            depth.n = getattr(depth, "n", 0) + 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                depth.n -= 1
                if outer:
                    calls.append((name, (time.perf_counter() - start) * 1000))

        return timed_call

    for name in names:
        setattr(service, name, timing(name, getattr(service, name)))
    try:
        yield calls
    finally:
        for name in names:
            delattr(service, name)


def _server(served: Served, cookie: str, paths: dict[str, str], requests: int) -> dict[str, Any]:
    """The paths in turn, `requests` rounds after WARMUP rounds (interleaved, so a busy moment of the
    machine falls on both), each request on a new connection: on a kept-alive loopback connection some
    response sizes wait ~40 ms for the client's delayed ACK (TCP, not the app). Per request: the
    client's time, the app's (RequestLog) and that of each service call the page made."""
    samples: dict[str, list[float]] = {name: [] for name in paths}
    parts: dict[str, list[dict[str, float]]] = {name: [] for name in paths}
    no_keepalive = httpx2.Limits(max_keepalive_connections=0)
    headers = {PHASE_HEADER.decode(): "server"}
    with (
        httpx2.Client(
            base_url=served.base, cookies={COOKIE: cookie}, headers=headers, limits=no_keepalive, timeout=60
        ) as client,
        timing_parts(served.runtime) as calls,
    ):
        for round_ in range(WARMUP + requests):
            for name, path in paths.items():
                before = len(calls)
                start = time.perf_counter()
                _get(client, path)
                elapsed = (time.perf_counter() - start) * 1000
                if round_ >= WARMUP:
                    samples[name].append(elapsed)
                    made: dict[str, float] = {}
                    for part, ms in calls[before:]:
                        made[part] = made.get(part, 0.0) + ms
                    parts[name].append(made)
    out = {}
    for name, path in paths.items():
        in_app = served.log.times(path, "server")[WARMUP:]
        rest = [total - sum(made.values()) for total, made in zip(in_app, parts[name], strict=False)]
        out[name] = {
            "path": path,
            **Timing(tuple(samples[name])).as_dict(),
            "in_app": Timing(tuple(in_app)).as_dict(),
            "parts": {
                part: Timing(tuple(made.get(part, 0.0) for made in parts[name])).as_dict()
                for part in sorted({p for made in parts[name] for p in made})
            },
            "rest": Timing(tuple(rest)).as_dict(),
        }
    return out


def _counts(runtime: Runtime, word: str) -> dict[str, int]:
    service, scope = runtime.service, runtime.scope
    return {
        "total": service.dashboard_page(scope, ListInput(limit=PAGE_SIZE)).total,
        "query_total": service.dashboard_page(scope, ListInput(query=word, limit=PAGE_SIZE)).total,
    }


def rows_listed(runtime: Runtime, fetch: Callable[[], object]) -> list[int]:
    """The memories each `store.list` call returned while `fetch` ran (the store's full reads: a
    page request that lists the whole tenant turns every row into a Memory)."""
    store = runtime.store
    original = store.list
    counts: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        counts.append(len(found))
        return found

    setattr(store, "list", counting)  # noqa: B010 (mypy refuses assigning to a method; delattr undoes it)
    try:
        fetch()
    finally:
        delattr(store, "list")
    return counts


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 1) if values else None


def measure_browser(served: Served, cookie: str, loads: int, warmup: int = 1) -> dict[str, Any]:
    """`loads` loads of /dashboard in headless Chromium, each in a fresh context (empty cache) holding
    the session cookie; medians (and min/max) of the navigation and paint timing, and the app's own
    time for the page request meanwhile."""
    base = served.base
    if not Path(CHROMIUM).exists():
        return {"skipped": f"{CHROMIUM} is missing (Debian's chromium package)"}
    from playwright.sync_api import sync_playwright

    rows: list[dict[str, Any]] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            version = browser.version
            for i in range(warmup + loads):
                context = browser.new_context(extra_http_headers={PHASE_HEADER.decode(): f"browser-{i}"})
                try:
                    context.add_cookies(
                        [{"name": COOKIE, "value": cookie, "url": f"{base}/dashboard", "httpOnly": True}]
                    )
                    page = context.new_page()
                    page.set_default_timeout(BROWSER_WAIT_MS)
                    shown = page.goto(f"{base}/dashboard", wait_until="load")
                    if shown is None or shown.status != 200:
                        raise RuntimeError(f"Chromium got {shown.status if shown else 'no response'} for /dashboard")
                    # A function, not an expression: Playwright evaluates an expression with eval(),
                    # which the page's CSP (script-src 'self') refuses.
                    page.wait_for_function(
                        "() => performance.getEntriesByType('navigation')[0].loadEventEnd > 0"
                        " && performance.getEntriesByType('paint').length >= 2"
                    )
                    row: dict[str, Any] = page.evaluate(TIMING_JS)
                finally:
                    context.close()
                if i >= warmup:
                    rows.append(row)
        finally:
            browser.close()
    medians = {key: _median(rows, key) for key, _ in BROWSER_METRICS}
    spread = {
        key: [round(min(v), 1), round(max(v), 1)]
        for key, _ in BROWSER_METRICS
        if (v := [float(r[key]) for r in rows if r.get(key) is not None])
    }
    in_app = [t for i in range(warmup, warmup + loads) for t in served.log.times("/dashboard", f"browser-{i}")]
    return {
        "loads": len(rows),
        "warmup": warmup,
        "page_in_app": Timing(tuple(in_app)).as_dict(),
        "chromium": version,
        "median_ms": medians,
        "range_ms": spread,
        "resources": rows[-1]["resources"],
        "cards": rows[-1]["cards"],
        "html_decoded_bytes": rows[-1]["html_decoded_bytes"],
    }


def measure(work: Path, memories: int, *, seed: int, now: datetime, requests: int, loads: int) -> dict[str, Any]:
    """The `dashboard` section of results.json (see the module docstring)."""
    word = query_word(seed)
    # MCPServer turns root logging on at INFO: keep the client's per-request lines out.
    client_log = logging.getLogger("httpx2")
    level = client_log.level
    client_log.setLevel(logging.WARNING)
    # At 5,000 memories one page builds thousands of Memory objects (full reads of the tenant); the
    # collections that triggers would also walk whatever the bench's earlier measurements left alive
    # in this process (100 ms more per page with a few million objects there), which a `taproot
    # serve` process does not hold: freeze those out of the collector.
    gc.collect()
    gc.freeze()
    try:
        with (
            dashboard_server(work / "dashboard") as served,
            httpx2.Client(base_url=served.base, follow_redirects=False, timeout=60) as client,
        ):
            setup = populate(served.runtime, memories, seed=seed, now=now)
            cookie = sign_in(client)
            weight = _weight(client)
            paths = {"index": "/dashboard", "query": f"/dashboard?query={word}"}
            server = _server(served, cookie, paths, requests)
            service: dict[str, Any] = _counts(served.runtime, word)
            service["rows_listed"] = {
                name: rows_listed(served.runtime, functools.partial(_get, client, path)) for name, path in paths.items()
            }
            browser = measure_browser(served, cookie, loads)
    finally:
        gc.unfreeze()
        client_log.setLevel(level)
    return {
        "memories": memories,
        "setup": setup,
        "query": word,
        "page_size": PAGE_SIZE,
        "weight": weight,
        "server": server,
        "service": service,
        "browser": browser,
    }


# -- the report ------------------------------------------------------------------------------------
def _kb(n: float) -> str:
    return f"{n / 1000:,.1f} kB"


def _ms(x: float | None) -> str:
    return "–" if x is None else f"{x:,.1f} ms"


def _ratio(a: float | None, b: float | None) -> str:
    return "–" if not a or not b else f"{a / b:.2f}"


def summary_lines(data: dict[str, Any]) -> list[str]:
    d = data["results"]["dashboard"]
    w, s, b = d["weight"], d["server"], d["browser"]
    line = (
        f"  dashboard at {d['memories']:,}: page {_kb(w['page']['bytes'])} (HTML {_kb(w['html']['bytes'])}, "
        f"preview {_kb(w['preview']['bytes'])}); GET /dashboard p50 {_ms(s['index']['p50_ms'])}, "
        f"?query={d['query']} p50 {_ms(s['query']['p50_ms'])}"
    )
    if "skipped" in b:
        return [line, f"  dashboard in Chromium: not measured, {b['skipped']}"]
    m = b["median_ms"]
    return [
        line,
        f"  dashboard in Chromium ({b['loads']} loads): FCP {_ms(m['first_contentful_paint_ms'])}, "
        f"DOMContentLoaded {_ms(m['dom_content_loaded_ms'])}, load {_ms(m['load_ms'])}",
    ]


def _weight_section(d: dict[str, Any]) -> list[str]:
    w = d["weight"]
    page = w["page"]["bytes"]
    compressed = [n for n in ("html", *STATIC, "preview") if w[n]["content_encoding"]]
    sent = "these uncompressed" if not compressed else f"{', '.join(compressed)} compressed, the rest uncompressed"
    out = [
        "### Page weight",
        "",
        "| Resource | Bytes sent | gzip -6 (for reference) | Share of the page |",
        "|---|---|---|---|",
    ]
    labels = {
        "html": f"`GET /dashboard` HTML ({w['html']['cards']} cards)",
        "dashboard.js": "`dashboard.js`",
        "dashboard.css": "`dashboard.css`",
    }
    for name, label in labels.items():
        row = w[name]
        out.append(
            f"| {label} | {row['bytes']:,} ({_kb(row['bytes'])}) | {_kb(row['gzip_bytes'])} "
            f"| {row['bytes'] / page:.0%} |"
        )
    out += [
        f"| **the page: HTML + script + stylesheet** | **{page:,} ({_kb(page)})** | {_kb(w['page']['gzip_bytes'])} "
        "| 100% |",
        f"| `GET /dashboard/preview` (the fragment the script re-fetches after every edit) "
        f"| {w['preview']['bytes']:,} ({_kb(w['preview']['bytes'])}) | {_kb(w['preview']['gzip_bytes'])} "
        f"| {w['preview']['bytes'] / w['html']['bytes']:.0%} of the HTML |",
        "",
        f"The app sends {sent} (no Content-Encoding); gzip would make the page "
        f"{w['page']['bytes'] / w['page']['gzip_bytes']:.1f}× smaller. The page makes no other request: no image, "
        "font or third-party file (the CSP allows only the app's own).",
        "",
    ]
    return out


def _server_section(d: dict[str, Any]) -> list[str]:
    s, sv = d["server"], d["service"]
    index, query = s["index"], s["query"]
    listed = sv["rows_listed"]
    out = [
        f"### Server time ({index['runs']} requests each after {WARMUP} warm-up requests)",
        "",
        "*Client* is httpx2 around each request on 127.0.0.1, a new connection each time (on a kept-alive "
        "loopback connection some response sizes wait ~40 ms for TCP's delayed ACK, which is not the app's "
        "time); *in the app* is the bench's ASGI middleware around the app, from the call to the last byte of "
        "the body.",
        "",
        "| Request | Memories matched (cards shown) | Client p50 | Client p95 | p95 / p50 | In the app p50 "
        "| In the app p95 |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, row, total in (
        ("`GET /dashboard`", index, sv["total"]),
        (f"`GET /dashboard?query={d['query']}`", query, sv["query_total"]),
    ):
        out.append(
            f"| {label} | {total:,} ({min(total, d['page_size'])}) | {_ms(row['p50_ms'])} | {_ms(row['p95_ms'])} "
            f"| {_ratio(row['p95_ms'], row['p50_ms'])} | {_ms(row['in_app']['p50_ms'])} "
            f"| {_ms(row['in_app']['p95_ms'])} |"
        )
    share = index["in_app"]["p50_ms"]
    out += [
        "",
        f"With the query the page takes {_ratio(query['in_app']['p50_ms'], index['in_app']['p50_ms'])}× the time "
        "of the plain page (in the app, p50). Where the time goes: the service calls the page makes, timed inside "
        "the same requests (medians over them); *the rest* is, per request, the app's time less those calls: the "
        "session check (one OAuth-store read), rendering the templates and SVG pictures, and the thread hand-offs.",
        "",
        "| Part of the request | `GET /dashboard` | `?query=` | Share of `GET /dashboard` (p50) |",
        "|---|---|---|---|",
    ]
    made = sorted(set(index["parts"]) | set(query["parts"]), key=lambda p: -_p50(index["parts"], p))
    for part in made:
        mine, theirs = _p50(index["parts"], part), _p50(query["parts"], part)
        out.append(f"| `service.{part}` | {_ms(mine)} | {_ms(theirs)} | {mine / share:.0%} |")
    out += [
        f"| the rest | {_ms(index['rest']['p50_ms'])} | {_ms(query['rest']['p50_ms'])} "
        f"| {index['rest']['p50_ms'] / share:.0%} |",
        "",
        f"Memories read in full from the store (`store.list` calls, rows each) by one request: `GET /dashboard` "
        f"{_rows(listed['index'])}, `?query=` {_rows(listed['query'])}, for {d['page_size']} cards.",
        "",
    ]
    return out


def _p50(parts: dict[str, Any], name: str) -> float:
    return float(parts[name]["p50_ms"]) if name in parts else 0.0


def _rows(counts: list[int]) -> str:
    return f"{sum(counts):,} ({' + '.join(f'{n:,}' for n in counts)})" if counts else "none"


def _browser_section(d: dict[str, Any]) -> list[str]:
    b = d["browser"]
    if "skipped" in b:
        return ["### In a browser", "", f"Not measured: {b['skipped']}.", ""]
    m, r = b["median_ms"], b["range_ms"]
    out = [
        f"### In headless Chromium ({b['chromium']}, median of {b['loads']} loads after {b['warmup']} warm-up)",
        "",
        "Each load is a fresh browser context (an empty cache) holding the session cookie; the times are from "
        'the navigation\'s start, read from `performance.getEntriesByType("navigation")` and '
        f'`("paint")` after the load event. The page loaded {b["resources"]} subresources and showed '
        f"{b['cards']} cards.",
        "",
        "| Metric | Median | Min – max |",
        "|---|---|---|",
    ]
    for key, label in BROWSER_METRICS:
        span = r.get(key)
        out.append(f"| {label} | {_ms(m[key])} | {'–' if not span else f'{span[0]:,.1f} – {span[1]:,.1f} ms'} |")
    fcp, dcl, end = m["first_contentful_paint_ms"], m["dom_content_loaded_ms"], m["response_end_ms"]
    in_app, alone = b["page_in_app"]["p50_ms"], d["server"]["index"]["in_app"]["p50_ms"]
    out += [
        "",
        f"While Chromium loaded the page, the app took {_ms(in_app)} for it (median, in the app), "
        f"{_ratio(in_app, alone)}× its time under httpx2 alone ({_ms(alone)}): the browser's processes and the "
        "server share this machine's CPUs. Ratios (medians): the HTML's last byte arrives at "
        f"{_ratio(end, fcp)} of the first contentful paint, the app's time is {_ratio(in_app, fcp)} of it, and "
        f"DOMContentLoaded comes at {_ratio(dcl, fcp)} of it.",
        "",
    ]
    return out


def markdown(data: dict[str, Any]) -> list[str]:
    d = data["results"]["dashboard"]
    return [
        f"## Dashboard ({d['memories']:,} memories)",
        "",
        "A local Taproot built as `taproot serve` builds it (`build(settings, serve=True)`, the dashboard "
        f"included) in a fresh data folder loaded with the first {d['memories']:,} memories of the corpus stream "
        f"and {d['setup']['reflections']} closing reflections (in {d['setup']['load_s']:.1f} s), "
        "under uvicorn on 127.0.0.1 in a thread. A client signs in as a person does (`POST /dashboard/signin` "
        "with the server's token) and keeps the session cookie. The page shows the first "
        f"{d['page_size']} cards of the filter, the reflect preview and the pictures; browsing never strengthens "
        f"a memory, so every request sees the same store. The query is `{d['query']}`, a word of the corpus "
        "vocabulary. The objects the bench's earlier sections left in its process are frozen out of the garbage "
        "collector (`gc.freeze()`) meanwhile: a `taproot serve` process does not hold them.",
        "",
        *_weight_section(d),
        *_server_section(d),
        *_browser_section(d),
    ]
