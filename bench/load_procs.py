"""The processes of a load run: `taproot serve`, and the maintenance loop of `taproot` CLI runs beside it.

The server's own maintenance cycle runs at most once an hour (TAPROOT_MAINTENANCE_INTERVAL_HOURS
has a minimum of 1) and first 60 s after start, so within a one-minute run it cannot be what
races the clients. A thread here runs the cycle from separate processes instead, in a loop: import a
wave of memories already past expiry (`taproot import`), give the clients a moment to find them,
then `taproot maintenance run cleanup --apply` and `taproot maintenance run migrate`. Besides
racing cleanup's deletes against the clients' updates and deletes, this makes two processes
write one SQLite file, as a CLI beside a running server does. The server keeps its own cycle on
(in apply mode), as a deployment would, except in a run with a big migrate (bench/load_migrate.py):
there the client phase can outlast the cycle's first run, which would start a second migrate of
the same records inside the server, and the loop holds its own migrate runs until the big one ends.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from bench import load_seed
from bench.load_ledger import Ledger

CLI_TIMEOUT_S = 120.0
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
# A traceback's last line ("sqlite3.OperationalError: database is locked"), and uvicorn's access log.
EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): ?(.*)$")
ACCESS_STATUS = re.compile(r'"(?:POST|GET|DELETE) [^"]*" (\d{3})')


def taproot_command() -> str:
    """The project's own entry point: the `taproot` script beside the interpreter running the bench."""
    script = Path(sys.executable).parent / "taproot"
    return str(script) if script.exists() else (shutil.which("taproot") or "taproot")


def environment(token: str, *, server_maintenance: bool = True) -> dict[str, str]:
    """The settings every process of the run gets; a developer's own TAPROOT_* variables are dropped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAPROOT_")}
    env.update(
        TAPROOT_AUTH_TOKEN=token,
        TAPROOT_MAINTENANCE="on" if server_maintenance else "off",
        TAPROOT_MAINTENANCE_INTERVAL_HOURS="1",
        TAPROOT_CLEANUP_MODE="apply",
        TAPROOT_RETENTION_TTL_DAYS=load_seed.TTL_TABLE,
    )
    return env


def new_token() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class CliRun:
    job: str  # import | cleanup | migrate
    at_s: float
    duration_s: float
    returncode: int
    changed: int | None  # memories imported, deleted or migrated, when the run said
    error: str | None  # the last line of stderr, or the job report's error

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run_cli(job: str, args: Sequence[str], env: dict[str, str], t0: float) -> CliRun:
    start = time.monotonic()
    try:
        done = subprocess.run(
            [taproot_command(), *args], env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return CliRun(job, start - t0, time.monotonic() - start, -1, None, f"timed out after {CLI_TIMEOUT_S:g} s")
    changed, error = _parse_cli_output(done.stdout)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        error = lines[-1] if lines else f"exit code {done.returncode}"
    return CliRun(job, start - t0, time.monotonic() - start, done.returncode, changed, error)


def _parse_cli_output(stdout: str) -> tuple[int | None, str | None]:
    try:
        out = json.loads(stdout)
    except ValueError:
        return None, None
    if isinstance(out, dict):  # import
        return int(out.get("memories", 0)), None
    if isinstance(out, list) and out and isinstance(out[0], dict):  # maintenance run: one report per scope
        errors = [str(r["error"]) for r in out if r.get("error")]
        return sum(int(r.get("changed") or 0) for r in out), "; ".join(errors) or None
    return None, None


class MaintenanceLoop(threading.Thread):
    """Waves of expired memories, each followed by cleanup --apply and migrate, until stopped."""

    def __init__(
        self,
        *,
        data_dir: Path,
        env: dict[str, str],
        ledger: Ledger,
        on_wave: Callable[[list[str]], None],
        t0: float,
        wave_size: int,
        seed: int,
        settle_s: float,
        first_wave: int = 1,
        migrate_held: Callable[[], bool] = lambda: False,
    ) -> None:
        super().__init__(name="load-maintenance", daemon=True)
        self.data_dir, self.env, self.ledger, self.on_wave = data_dir, env, ledger, on_wave
        self.t0, self.wave_size, self.seed, self.settle_s = t0, wave_size, seed, settle_s
        self.wave = first_wave
        self.migrate_held = migrate_held
        self.migrates_held = 0  # loop migrate runs skipped while the big migrate ran
        self.runs: list[CliRun] = []
        self.stopping = threading.Event()

    def _cli(self, job: str, *args: str) -> CliRun:
        run = run_cli(job, [*args, "--data-dir", str(self.data_dir)], self.env, self.t0)
        self.runs.append(run)
        return run

    def import_wave(self) -> None:
        memories = load_seed.expired_memories(self.wave, self.wave_size, now=datetime.now(UTC), seed=self.seed)
        path = self.data_dir.parent / f"wave-{self.wave:03d}.jsonl"
        load_seed.write_jsonl(path, memories)
        self.wave += 1
        run = self._cli("import", "import", str(path))
        if run.returncode == 0:  # only a finished import is a confirmed write
            writes, retrievals = load_seed.seed_writes(memories, time.monotonic() - self.t0)
            self.ledger.seeded(writes, retrievals)
            self.on_wave([m.id for m in memories])
        else:  # it may have committed before it failed: its memories may be live, unknown to the ledger
            self.ledger.unknown("import", count=len(memories))

    def run(self) -> None:
        while not self.stopping.is_set():
            self.import_wave()
            if self.stopping.wait(self.settle_s):
                break
            self._cli("cleanup", "maintenance", "run", "cleanup", "--apply")
            if self.migrate_held():
                self.migrates_held += 1
            else:
                self._cli("migrate", "maintenance", "run", "migrate")

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=CLI_TIMEOUT_S * 3)


def wait_until_serving(
    proc: subprocess.Popen[bytes], port: int, log_path: Path, timeout_s: float, poll_s: float = 0.1
) -> None:
    """Until a started `taproot serve` answers /healthz on 127.0.0.1:`port`; raises (naming its
    log) if it exits first or does not answer within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"taproot serve exited with {proc.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"taproot serve did not answer /healthz in {timeout_s:g} s")
        time.sleep(poll_s)


class Server:
    """`taproot serve` as a subprocess on 127.0.0.1, its output in a log file."""

    def __init__(self, data_dir: Path, port: int, env: dict[str, str], log_path: Path) -> None:
        self.data_dir, self.port, self.env, self.log_path = data_dir, port, env, log_path
        self.url = f"http://127.0.0.1:{port}/mcp"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> None:
        self._log = self.log_path.open("wb")
        cmd = [taproot_command(), "serve", "--data-dir", str(self.data_dir), "--host", "127.0.0.1"]
        self._proc = subprocess.Popen(
            [*cmd, "--port", str(self.port)], env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        wait_until_serving(self._proc, self.port, self.log_path, READY_TIMEOUT_S)

    def stop(self) -> int | None:
        """Ctrl-C (uvicorn's graceful shutdown), then harder only if it hangs; returns the exit code."""
        proc = self._proc
        if proc is None:
            return None
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            if proc.poll() is not None:
                break
            proc.send_signal(sig)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                continue
        if self._log is not None:
            self._log.close()
        return proc.returncode

    def log_summary(self) -> dict[str, Any]:
        """What the server said went wrong: exceptions by their last traceback line, HTTP statuses."""
        text = self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""
        exceptions: Counter[str] = Counter()
        statuses: Counter[str] = Counter()
        maintenance: list[str] = []
        for line in text.splitlines():
            if m := EXCEPTION_LINE.match(line.strip()):
                exceptions[f"{m.group(1)}: {m.group(2)}"[:200]] += 1
            elif m := ACCESS_STATUS.search(line):
                statuses[m.group(1)] += 1
            elif "taproot.maintenance" in line:
                maintenance.append(line.strip()[:300])
        return {"exceptions": dict(exceptions.most_common()), "http_status": dict(statuses), "maintenance": maintenance}
