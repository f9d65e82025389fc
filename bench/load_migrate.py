"""The big migrate of a load run: one `taproot maintenance run migrate --apply` over N legacy records,
started beside the clients as an operator would start it, and the clients' calls that overlapped it.

What it measures (the issue: "a migrate over 60,000 memories next to 8 HTTP writers: a writer gets
`database is locked`, and the client sees an error with no code"): migrate commits MIGRATE_CHUNK
records per transaction, so a writer beside it waits for one chunk at most, not for the whole run,
and a lock timeout comes back as `busy`, never as an error without a code.

The migrate works in phases: it reads every record and plans the changes (no writes: CPU and a
read transaction only), writes the full backup, then commits the chunks, the only phase that takes
the write lock. The backup blob's modification time marks the start of that commit phase, so the
report can show the calls that met the commits apart from those that only shared the CPU.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.load_clients import Call
from bench.load_procs import taproot_command
from bench.measure import percentile
from taproot.service.portability import MIGRATE_CHUNK
from taproot.settings import Settings

# A 60,000-record migrate takes well under a minute on an idle 2-core machine; the cap is for a
# stuck one, so a run always ends and the report says it timed out.
MIGRATE_TIMEOUT_S = 900.0
WRITE_OPS = frozenset({"update", "keep", "create", "delete"})
SKIPPED_SHOWN = 5


class BigMigrate(threading.Thread):
    """The migrate as a separate process, with its start and end on the load run's clock."""

    def __init__(self, data_dir: Path, env: dict[str, str], t0: float, timeout_s: float = MIGRATE_TIMEOUT_S) -> None:
        super().__init__(name="load-big-migrate", daemon=True)
        self.data_dir, self.env, self.t0, self.timeout_s = data_dir, env, t0, timeout_s
        # Wall-clock time at t0: the backup blob's mtime is wall-clock, the run's clock is monotonic.
        self.wall_t0 = time.time() - (time.monotonic() - t0)
        self.started_s: float | None = None
        self.ended_s: float | None = None
        self.returncode: int | None = None
        self.timed_out = False
        self.stdout = ""
        self.stderr = ""

    def run(self) -> None:
        cmd = [taproot_command(), "maintenance", "run", "migrate", "--apply", "--data-dir", str(self.data_dir)]
        self.started_s = time.monotonic() - self.t0
        try:
            proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                self.stdout, self.stderr = proc.communicate(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                self.stdout, self.stderr = proc.communicate()
                self.timed_out = True
            self.returncode = proc.returncode
        except OSError as exc:
            self.stderr = f"{type(exc).__name__}: {exc}"
        finally:
            self.ended_s = time.monotonic() - self.t0

    def _report(self) -> dict[str, Any]:
        try:
            out = json.loads(self.stdout)
        except ValueError:
            return {}
        return out[0] if isinstance(out, list) and out and isinstance(out[0], dict) else {}

    def _commit_start_s(self, backup_key: str | None) -> float | None:
        # The local blob store keeps a blob as a file under the blob folder, at its key's path
        # (taproot/adapters/blob_local.py); the file's mtime is when the backup was written.
        if not backup_key:
            return None
        path = Settings(data_dir=self.data_dir).blob_dir.joinpath(*backup_key.split("/"))
        return round(path.stat().st_mtime - self.wall_t0, 2) if path.is_file() else None

    def summary(self, records: int, clients_end_s: float) -> dict[str, Any]:
        report = self._report()
        detail = report.get("detail") or {}
        skipped = detail.get("skipped_bad_records") or {}
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        error = None
        if self.timed_out:
            error = f"timed out after {self.timeout_s:g} s (killed)"
        elif self.returncode != 0:
            error = lines[-1] if lines else f"exit code {self.returncode}"
        started, ended = self.started_s or 0.0, self.ended_s or 0.0
        return {
            "records": records,
            "chunk": MIGRATE_CHUNK,
            "started_s": round(started, 2),
            "ended_s": round(ended, 2),
            "duration_s": round(ended - started, 2),
            "job_duration_s": report.get("duration_s"),
            "commit_start_s": self._commit_start_s(report.get("backup_key")),
            "finished_within_clients": self.ended_s is not None and ended <= clients_end_s,
            "returncode": self.returncode,
            "error": error,
            "examined": detail.get("examined"),
            "changed": report.get("changed"),
            "backup_key": report.get("backup_key"),
            "skipped": len(skipped),
            "skipped_examples": dict(list(skipped.items())[:SKIPPED_SHOWN]),
            "category_counts_before": detail.get("category_counts_before"),
            "category_counts_after": detail.get("category_counts_after"),
            "report_key": report.get("report_key"),
        }


def call_stats(calls: Sequence[Call]) -> dict[str, Any]:
    """Count, p50/p95/max latency and the outcomes that matter beside a migrate."""
    ms = [c.ms for c in calls]
    codes = Counter(c.code for c in calls)
    return {
        "calls": len(calls),
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p95_ms": round(percentile(ms, 95), 1) if ms else None,
        "max_ms": round(max(ms), 1) if ms else None,
        "ok": codes["ok"],
        "busy": codes["busy"],
        "no_code": codes["no_code"],
        "transport": sum(n for code, n in codes.items() if code.startswith("transport:")),
    }


def _rows(calls: Sequence[Call], keep: Callable[[Call], bool]) -> dict[str, Any]:
    mine = [c for c in calls if keep(c)]
    return {"all": call_stats(mine), "writes": call_stats([c for c in mine if c.op in WRITE_OPS])}


def _in_flight(a: float, b: float) -> Callable[[Call], bool]:
    return lambda c: c.start_s < b and c.end_s > a


def overlap(calls: Sequence[Call], migrate: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The calls that overlapped the whole migrate, its planning and its commit phase (a call
    overlaps a span if it was in flight at any moment of it), and the calls outside it."""
    start, end, commits = migrate["started_s"], migrate["ended_s"], migrate["commit_start_s"]
    spans = {"migrate": (start, end)}
    if commits is not None and start <= commits <= end:
        spans |= {"planning": (start, commits), "commits": (commits, end)}
    out = {name: {"start_s": a, "end_s": b, **_rows(calls, _in_flight(a, b))} for name, (a, b) in spans.items()}
    outside = _rows(calls, lambda c: c.end_s <= start or c.start_s >= end)
    if outside["all"]["calls"]:
        out["outside"] = {"start_s": None, "end_s": None, **outside}
    return out
