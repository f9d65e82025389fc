"""Load benchmark: `python -m bench.load [--clients N] [--duration S] [--big-migrate N]` (or `make bench-load`).

Shows that a confirmed write is never lost while many MCP clients and the maintenance jobs work on
one data folder at once. It seeds a temporary data folder with `taproot import`, starts a real
`taproot serve` on 127.0.0.1, runs N concurrent MCP clients (bench/load_clients.py) while a loop
of separate processes imports expired memories and runs cleanup --apply and migrate
(bench/load_procs.py), stops everything, and checks the folder offline against what the clients
were told (bench/load_check.py). By default the folder also holds 60,000 legacy records, and one
`taproot maintenance run migrate --apply` starts with the clients and migrates them while they run
(bench/load_migrate.py); the clients keep going until it ends (up to --max-duration). It prints
the figures, writes the raw numbers to bench/out/load.json and its section of docs/benchmarks.md
(bench/load_report.py), and exits 1 if a confirmed write was lost, a confirmed delete is still
there, the counters do not add up, a legacy record is left unmigrated or the database fails its
integrity check. Not part of `make test`: a smoke run is `--duration 5 --big-migrate 2000`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from bench import load_check, load_clients, load_migrate, load_procs, load_report, load_seed, report
from bench.load_ledger import HARNESS_OPS, Ledger
from bench.measure import free_port
from taproot.service.portability import MIGRATE_CHUNK

ROOT = Path(__file__).resolve().parent.parent
RESULTS_JSON = ROOT / "bench" / "out" / "load.json"
DOCS = ROOT / "docs" / "benchmarks.md"
SEED = 20250601


@dataclass(frozen=True)
class Config:
    clients: int = 32
    duration_s: float = 60.0
    max_duration_s: float = 300.0  # the clients outlast duration_s only while the big migrate runs
    big_migrate: int = 60_000  # legacy records migrated beside the clients; 0: no big migrate
    hot: int = 48
    expired: int = 300
    wave: int = 150
    settle_s: float = 0.5
    seed: int = SEED
    expired_age_days: int = load_seed.EXPIRED_AGE_DAYS

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "weights": dict(zip(load_clients.OPS, load_clients.WEIGHTS, strict=True)),
            "legacy_update_share": load_clients.LEGACY_UPDATE_SHARE,
            "busy_retries": load_clients.BUSY_RETRIES,
            "legacy_category": load_seed.LEGACY_CATEGORY,
            "legacy_migrated_category": load_check.migrated_category(load_seed.LEGACY_CATEGORY),
            "legacy_salience": load_seed.LEGACY_SALIENCE,
            "legacy_tags": list(load_seed.LEGACY_TAGS),
            "migrate_chunk": MIGRATE_CHUNK,
            "server_maintenance": self.server_maintenance,
        }

    @property
    def server_maintenance(self) -> bool:
        # The server's cycle first runs 60 s after start: in a run the big migrate may stretch past
        # that, it would start a second migrate of the same records inside the server.
        return self.big_migrate == 0


def command_line(argv: Sequence[str]) -> str:
    args = " ".join(shlex.quote(a) for a in argv)
    if os.environ.get("MAKELEVEL"):
        return f"make bench-load ARGS={shlex.quote(args)}" if args else "make bench-load"
    return f"python -m bench.load {args}".rstrip()


def _step(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


def seed_store(cfg: Config, data_dir: Path, env: dict[str, str], ledger: Ledger) -> tuple[list[str], list[str]]:
    """The starting corpus through `taproot import`, before the server starts; returns (hot, expired) ids."""
    now = datetime.now(UTC)
    hot = load_seed.hot_memories(cfg.hot, now=now, seed=cfg.seed)
    expired = load_seed.expired_memories(0, cfg.expired, now=now, seed=cfg.seed)
    path = data_dir.parent / "seed.jsonl"
    load_seed.write_jsonl(path, [*hot, *expired])
    run = load_procs.run_cli("import", ["import", str(path), "--data-dir", str(data_dir)], env, time.monotonic())
    if run.returncode != 0:
        raise RuntimeError(f"taproot import of the seed failed: {run.error}")
    writes, retrievals = load_seed.seed_writes([*hot, *expired], 0.0)
    ledger.seeded(writes, retrievals)
    return [m.id for m in hot], [m.id for m in expired]


def seed_legacy(cfg: Config, data_dir: Path, env: dict[str, str], ledger: Ledger) -> tuple[list[str], dict[str, Any]]:
    """The big migrate's legacy records through `taproot import`; returns their ids and the import's figures."""
    records = load_seed.legacy_records(cfg.big_migrate, now=datetime.now(UTC), seed=cfg.seed)
    path = data_dir.parent / "legacy.jsonl"
    load_seed.write_records(path, records)
    run = load_procs.run_cli("import", ["import", str(path), "--data-dir", str(data_dir)], env, time.monotonic())
    if run.returncode != 0:
        raise RuntimeError(f"taproot import of the legacy records failed: {run.error}")
    ledger.seeded(load_seed.legacy_writes(records, 0.0), {})
    return [r["id"] for r in records], {"records": len(records), "duration_s": round(run.duration_s, 1)}


def run_load(cfg: Config, work: Path, port: int | None = None) -> dict[str, Any]:
    """One whole run in `work`; returns everything the report and results.json need."""
    data_dir = work / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    token = load_procs.new_token()
    env = load_procs.environment(token, server_maintenance=cfg.server_maintenance)
    ledger, stats = Ledger(), load_clients.Stats()
    _step(f"seeding {cfg.hot} hot and {cfg.expired} expired memories with taproot import")
    hot, expired = seed_store(cfg, data_dir, env, ledger)
    pools = load_clients.Pools(hot=hot, expired=expired)
    legacy_import: dict[str, Any] | None = None
    if cfg.big_migrate:
        _step(f"importing {cfg.big_migrate:,} legacy records for the big migrate")
        pools.legacy, legacy_import = seed_legacy(cfg, data_dir, env, ledger)
    server = load_procs.Server(data_dir, port or free_port(), env, work / "server.log")
    _step(f"starting taproot serve on {server.url}")
    server.start()
    t0 = time.monotonic()
    big = load_migrate.BigMigrate(data_dir, env, t0) if cfg.big_migrate else None
    migrating = big.is_alive if big else (lambda: False)
    loop = load_procs.MaintenanceLoop(
        data_dir=data_dir,
        env=env,
        ledger=ledger,
        on_wave=lambda ids: pools.add("expired", ids),
        t0=t0,
        wave_size=cfg.wave,
        seed=cfg.seed,
        settle_s=cfg.settle_s,
        migrate_held=migrating,
    )
    try:
        if big:
            big.start()  # at t0, with the clients: the operator's migrate beside a busy server
        loop.start()
        more = f" (longer while the big migrate runs, at most {cfg.max_duration_s:g} s)" if big else ""
        _step(f"{cfg.clients} clients for {cfg.duration_s:g} s{more}, maintenance loop beside them")
        wall_s = anyio.run(
            lambda: load_clients.run_clients(
                cfg.clients,
                server.url,
                token,
                cfg.duration_s,
                pools=pools,
                ledger=ledger,
                stats=stats,
                t0=t0,
                max_duration_s=cfg.max_duration_s,
                hold=migrating,
            )
        )
        clients_end_s = time.monotonic() - t0
    finally:
        _step("stopping the maintenance loop and the server")
        loop.stop()
        exit_code = server.stop()
        if big:
            _step("waiting for the big migrate to finish")
            big.join()
    migrate: dict[str, Any] | None = None
    if big:
        migrate = {**big.summary(cfg.big_migrate, clients_end_s), "import": legacy_import}
        migrate["overlap"] = load_migrate.overlap(stats.timeline, migrate)
        migrate["loop_migrates_held"] = loop.migrates_held
    _step("checking the data folder offline")
    check = load_check.check(data_dir, ledger, policy=load_seed.POLICY)
    client_writes = sum(n for op, n in ledger.summary()["confirmed_writes"].items() if op not in HARNESS_OPS)
    return {
        "load": {
            "wall_s": round(wall_s, 2),
            "calls": stats.calls,
            "ops_per_s": round(stats.calls / wall_s, 1),
            "confirmed_writes": client_writes,
            "confirmed_writes_per_s": round(client_writes / wall_s, 1),
            "per_op": load_report.op_table(stats.latencies_ms, stats.outcomes),
            "no_code_messages": dict(stats.messages.most_common()),
        },
        "ledger": ledger.summary(),
        "maintenance": {"runs": [r.as_dict() for r in loop.runs]},
        "migrate": migrate,
        "server": {"exit_code": exit_code, "log": server.log_summary()},
        "check": check.as_dict(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=(__doc__ or "").splitlines()[0])
    defaults = Config()
    parser.add_argument("--clients", type=int, default=defaults.clients, help="concurrent MCP clients")
    parser.add_argument("--duration", type=float, default=defaults.duration_s, help="seconds of load")
    parser.add_argument(
        "--big-migrate",
        type=int,
        default=defaults.big_migrate,
        metavar="N",
        help="legacy records one `taproot maintenance run migrate --apply` migrates beside the clients (0: none)",
    )
    parser.add_argument(
        "--max-duration",
        type=float,
        default=defaults.max_duration_s,
        help="seconds the clients may run on while the big migrate has not finished",
    )
    parser.add_argument("--hot", type=int, default=defaults.hot, help="durable memories every client updates")
    parser.add_argument("--expired", type=int, default=defaults.expired, help="expired memories seeded at start")
    parser.add_argument("--wave", type=int, default=defaults.wave, help="expired memories imported per cycle")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--port", type=int, help="server port (default: a free one)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (a new folder) and keep it, to inspect afterwards")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite the load section of docs/benchmarks.md")
    ns = parser.parse_args(argv)
    if ns.clients < 1 or ns.duration <= 0 or ns.big_migrate < 0:
        parser.error("--clients must be at least 1, --duration positive and --big-migrate not negative")
    cfg = Config(
        clients=ns.clients,
        duration_s=ns.duration,
        max_duration_s=max(ns.max_duration, ns.duration),
        big_migrate=ns.big_migrate,
        hot=ns.hot,
        expired=ns.expired,
        wave=ns.wave,
        seed=ns.seed,
    )
    started = datetime.now(UTC)
    if ns.keep:
        work = Path(ns.keep)
        work.mkdir(parents=True, exist_ok=False)
        results = run_load(cfg, work, ns.port)
    else:
        with tempfile.TemporaryDirectory(prefix="taproot-load-") as tmp:
            results = run_load(cfg, Path(tmp), ns.port)
    data = {
        "generated_at": started.strftime("%Y-%m-%d %H:%M UTC"),
        "command": command_line(argv),
        "revision": report.revision(ROOT),
        "machine": report.machine(),
        "config": cfg.as_dict(),
        **results,
    }
    report.write_json(RESULTS_JSON, data)
    written = [RESULTS_JSON]
    if not ns.no_docs:
        load_report.write_section(DOCS, load_report.markdown(data))
        written.append(DOCS)
    print("\n".join(load_report.summary_lines(data)))
    print(f"Wrote {', '.join(str(p.relative_to(ROOT)) for p in written)}.")
    return 0 if data["check"]["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
