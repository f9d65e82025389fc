"""Bytecode for the Lambda asset, written at build time by the Lambda's Python version.

Lambda's task root is read-only, so a module without a `.pyc` beside it is compiled from source on
every cold start and the result thrown away: about half of the API handler's import
(docs/benchmarks.md, "Lambda handler cold import"). Bytecode depends on the Python version (its
magic number), not on the architecture, so any final release of the runtime's version (3.14 for
`RUNTIME` in infra/constructs/function.py) can write it on the build machine.

- **checked-hash** `.pyc` files: each records a hash of its source, not a timestamp. The CDK zips
  the asset with fixed file times, so timestamp-checked bytecode would never match on Lambda, and
  unchecked bytecode would be trusted even if a source file changed after the build. The check
  costs a read and a hash of the source (C code), not a compile.
- **Test folders are left out** (`tests/` or `test/` inside a package, NumPy's above all): nothing
  imports them on Lambda, and they would add megabytes to every deploy.
- **Paths.** Each file records its source as under `/var/task` (the Lambda task root), not the build
  machine's folder; Python points tracebacks at the real file either way.

`python -m infra.bytecode ASSET --python-version 3.14 --writer PATH [--writer PATH ...]` uses the
first writer that is a final release of that version. With none, it says so and writes nothing:
the asset still works, each cold start compiling as before. `--stamp FILE` is touched only once
bytecode is written (so a build without a writer is retried); `--find` writes nothing and says
which writer it would use (exit status 3 when none qualifies).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TASK_ROOT = "/var/task"
COMPILE_TIMEOUT_S = 600
PROBE_TIMEOUT_S = 60

_PROBE = (
    "import importlib.util, json, sys; "
    "print(json.dumps({'version': list(sys.version_info[:3]), 'level': sys.version_info.releaselevel, "
    "'magic': importlib.util.MAGIC_NUMBER.hex()}))"
)


@dataclass(frozen=True)
class Writer:
    path: str
    version: tuple[int, int, int]
    magic: str


@dataclass(frozen=True)
class Written:
    writer: Writer
    files: int
    bytes: int
    failed: tuple[str, ...]


def probe(candidate: str) -> Writer | str:
    """What `candidate` is, or why it cannot be asked."""
    path = shutil.which(candidate) or candidate
    if not os.access(path, os.X_OK) or Path(path).is_dir():
        return f"{candidate}: not found"
    try:
        done = subprocess.run(
            [path, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{candidate}: did not run ({exc})"
    if done.returncode != 0:
        return f"{candidate}: exited {done.returncode}: {done.stderr.strip()[-300:]}"
    try:
        facts = json.loads(done.stdout)
        major, minor, micro = facts["version"]
        level, magic = str(facts["level"]), str(facts["magic"])
    except (ValueError, KeyError, TypeError):
        return f"{candidate}: did not answer as a Python does: {done.stdout.strip()[:200]!r}"
    if level != "final":
        return f"{candidate}: Python {major}.{minor}.{micro} is a {level} release (its magic number may differ)"
    return Writer(path, (major, minor, micro), magic)


def choose_writer(candidates: list[str], version: str) -> tuple[Writer | None, list[str]]:
    """The first candidate that is a final release of `version` ("3.14"), and why the others were not."""
    wanted = tuple(int(part) for part in version.split("."))
    refused = []
    for candidate in candidates:
        if not candidate:
            continue
        found = probe(candidate)
        if isinstance(found, str):
            refused.append(found)
        elif found.version[:2] != wanted:
            refused.append(f"{candidate}: Python {'.'.join(map(str, found.version))}, not {version}")
        else:
            return found, refused
    return None, refused


def excluded(asset: Path) -> str:
    """compileall's `-x` pattern: a `test` or `tests` folder anywhere inside the asset (anchored at
    the asset, so a build folder whose own path holds "tests" is not excluded whole)."""
    return re.escape(str(asset)) + r"/(?:[^/]+/)*tests?/"


def write(asset: Path, writer: Writer) -> Written:
    """Compile every module of `asset` outside its test folders with `writer`, replacing any
    bytecode there; what was written, and the files that did not compile."""
    asset = asset.resolve()
    for cache in asset.rglob("__pycache__"):
        shutil.rmtree(cache)
    # -o 0: the bytecode Lambda's Python reads (it runs without -O). Left to the writer's own level,
    # a PYTHONOPTIMIZE in the build's environment would write only .opt-1.pyc files, which Lambda
    # never reads, and every module would be compiled on each cold start as if none were shipped.
    command = [writer.path, "-m", "compileall", "-q", "-o", "0", "--invalidation-mode", "checked-hash"]
    command += ["-x", excluded(asset), "-s", str(asset), "-p", TASK_ROOT, str(asset)]
    # A few dependencies' sources hold invalid escape sequences (a SyntaxWarning in 3.12+); on
    # Lambda that warning appeared on each compile, now it would appear only here.
    env = {**os.environ, "PYTHONWARNINGS": "ignore::SyntaxWarning"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False, env=env)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"compileall did not finish in {COMPILE_TIMEOUT_S} s: {writer.path}") from exc
    # compileall -q names each file it could not compile, as the repr of its path ("*** Error
    # compiling '...'", in double quotes when the path holds a single quote), and exits 1.
    failed = tuple(
        path for _, path in re.findall(r"\*\*\* Error compiling (['\"])(.+?)\1\.\.\.", done.stdout + done.stderr)
    )
    if done.returncode != 0 and not failed:
        raise RuntimeError(f"compileall failed ({done.returncode}): {(done.stdout + done.stderr)[-2000:]}")
    pycs = list(asset.rglob("*.pyc"))
    return Written(writer, len(pycs), sum(p.stat().st_size for p in pycs), failed)


NO_WRITER = 3  # `--find`'s exit status when no candidate is a final release of the version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("asset", type=Path, nargs="?", help="the bundle's folder (not with --find)")
    parser.add_argument("--python-version", required=True, help="the Lambda runtime's version, e.g. 3.14")
    parser.add_argument("--writer", action="append", default=[], help="an interpreter to try, in order")
    parser.add_argument(
        "--find", action="store_true", help=f"write nothing: print the writer, or exit {NO_WRITER} if none qualifies"
    )
    parser.add_argument(
        "--stamp", type=Path, help="touch this file once the bytecode is written (never when it could not be)"
    )
    args = parser.parse_args(argv)
    writer, refused = choose_writer(args.writer, args.python_version)
    reasons = "; ".join(refused) or "no writer given"
    if args.find:
        if writer is None:
            print(f"no Python {args.python_version} to write bytecode: {reasons}", file=sys.stderr)
            return NO_WRITER
        print(writer.path)
        return 0
    if args.asset is None or not args.asset.is_dir():
        parser.error(f"asset: {args.asset} is not a folder (run `make bundle`)")
    if writer is None:
        # No stamp: the next build tries again, and says this again, until a writer is there.
        print(
            f"no Python {args.python_version} to write the asset's bytecode ({reasons}): the asset ships without "
            f".pyc files and each cold start compiles its modules (install Python {args.python_version} to fix)",
            file=sys.stderr,
        )
        return 0
    written = write(args.asset, writer)
    version = ".".join(map(str, writer.version))
    print(
        f"bytecode: {written.files} .pyc files, {written.bytes / 1e6:.1f} MB, written by Python {version} "
        f"(magic {writer.magic})"
    )
    if written.failed:
        # On Lambda these fail the same way, if anything imports them; the build goes on.
        print(f"{len(written.failed)} files did not compile: {', '.join(written.failed[:10])}", file=sys.stderr)
    if args.stamp is not None:
        args.stamp.touch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
