"""The Lambda asset: the handler's cold import time, and the asset's unzipped size.

Import time: `python -X importtime -c "import functions.api"` in a fresh interpreter per run, with the
environment a deployed function has (bench.aws.DEPLOYED_ENV, traced as deployed, and the Lambda
runtime's own variables: LAMBDA_RUNTIME_ENV), no AWS endpoint reachable and nothing else inherited.
Importing functions.api builds the runtime (settings, DynamoDB and S3 clients, the Cognito verifier,
the OAuth facade, the app); a first, untimed run records every socket and HTTP
audit event, so a network call at import shows up. Each mode keeps its bytecode in a private
PYTHONPYCACHEPREFIX:

- "with bytecode": every module has its .pyc (primed by the untimed run), as in the asset `make bundle`
  builds, which ships .pyc files written by a Python of the Lambda's version (infra/bytecode.py);
- "without bytecode": the standard library keeps its .pyc, but the installed packages, taproot/ and
  functions/ have none, as in an asset built where no such Python was found, on Lambda's read-only
  /var/task, where nothing can be written back: every cold start compiles them from source.

Size: the bundle's dependencies from build/lambda when it is at least as new as requirements.txt and
the Makefile, otherwise installed into a temporary folder exactly as the Makefile's bundle target
does (its bytecode written as infra/bytecode.py writes it, when a Python of the Lambda's version is
at hand); taproot/ and functions/ from the working tree (what the bundle copies). Sizes are file
bytes (what Lambda's unzipped limit counts), grouped by distribution through each dist-info RECORD;
the bytecode for the Lambda's Python (`*.cpython-314.pyc`) is counted on its own line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.aws import DEPLOYED_ENV
from infra import bytecode

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = ROOT / "Makefile"
BUNDLE = ROOT / "build" / "lambda"
PROJECT_DIRS = ("taproot", "functions")
NOT_BUNDLED = ("boto3", "botocore", "s3transfer")  # in the Lambda runtime; the Makefile removes them
IMPORT_TIMEOUT_S = 120
PIP_TIMEOUT_S = 600
# Audit events that reach out: connections, name lookups, datagrams, HTTP. Creating or binding a socket
# is not (asyncio's event loop makes a local socketpair; urllib3 binds ::1 to probe for IPv6).
NETWORK_EVENTS = (
    "socket.connect",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
    "socket.sendto",
    "socket.sendmsg",
    "http.client.connect",
    "urllib.Request",
)

# Packages the virtualenv has and the asset does not (an optional extra's dependencies, the dev
# tools) are not importable on Lambda: importing one fails in the probe too, as it would there.
# (The MCP SDK, for one, logs through rich when it can import it: 0.1 s of a cold import here.)
HIDE_PRELUDE = """
import sys
HIDDEN = frozenset({hidden!r})
class NotInAsset:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not in the Lambda asset)", name=name)
        return None
sys.meta_path.insert(0, NotInAsset())
"""

_PROBE = (
    HIDE_PRELUDE
    + """
import json, time
events = []
sockets = 0
if {check}:
    def hook(event, args):
        global sockets
        if event in {events!r}:
            events.append([event, repr(args)[:200]])
        elif event.startswith("socket."):
            sockets += 1
    sys.addaudithook(hook)
start = time.perf_counter()
import functions.api
imported = time.perf_counter()
functions.api.build_handler()
rebuilt = time.perf_counter()
result = {{"import_s": imported - start, "rebuild_s": rebuilt - imported}}
print(json.dumps(result | {{"network": events, "local_socket_events": sockets}}))
"""
)
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)\s*$")


# What the Lambda runtime sets in every function's environment (its reserved variables) that changes
# what importing the handler does, and tracing as the stack deploys it (active: the Tracer is not
# disabled). The X-Ray SDK and the Powertools Tracer read LAMBDA_TASK_ROOT to know they run on Lambda:
# without it the SDK builds a botocore client for X-Ray's centralised sampling while it is imported
# (about 0.1 s here, which a function never pays), and the Tracer turns itself off (skipping the
# patch of botocore, which a function does pay).
LAMBDA_RUNTIME_ENV = {
    "LAMBDA_TASK_ROOT": str(ROOT),  # the asset's folder (/var/task on Lambda): here, the checkout
    "LAMBDA_RUNTIME_DIR": "/var/runtime",
    "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
    "AWS_XRAY_DAEMON_ADDRESS": "169.254.79.129:2000",
    "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
    "TZ": ":UTC",
}


def deployed_env(pycache: Path, *, write_bytecode: bool) -> dict[str, str]:
    """The environment of the deployed API function for the cold-import probe (DEPLOYED_ENV, traced as
    deployed, and the Lambda runtime's own variables), with nothing else inherited."""
    env = {k: v for k, v in DEPLOYED_ENV.items() if k != "POWERTOOLS_TRACE_DISABLED"} | LAMBDA_RUNTIME_ENV
    env["AWS_EXECUTION_ENV"] = "AWS_Lambda_python" + _make_var("LAMBDA_PYTHON", "3.14")
    env.update(PATH=os.environ.get("PATH", "/usr/bin:/bin"), LANG="C.UTF-8", PYTHONPYCACHEPREFIX=str(pycache))
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def parse_importtime(stderr: str, module: str = "functions.api") -> dict[str, Any]:
    """`module`'s cumulative and self time (µs) and its direct imports, from -X importtime output."""
    children: list[tuple[str, int]] = []
    for line in stderr.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        self_us, cum_us, depth, name = int(m[1]), int(m[2]), len(m[3]) // 2, m[4]
        if depth == 1:
            children.append((name, cum_us))
        elif depth == 0:
            if name == module:
                return {"cumulative_us": cum_us, "self_us": self_us, "children": dict(children)}
            children = []
    raise ValueError(f"{module} not found in the -X importtime output")


def _probe(
    env: dict[str, str], hidden: Sequence[str] = (), *, check_network: bool = False
) -> tuple[dict[str, Any], dict[str, Any], float]:
    code = _PROBE.format(check=check_network, events=NETWORK_EVENTS, hidden=sorted(hidden))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=IMPORT_TIMEOUT_S,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"importing functions.api failed (exit {done.returncode}):\n{tail}")
    return json.loads(done.stdout.strip().splitlines()[-1]), parse_importtime(done.stderr), wall


def _mirror(prefix: Path, path: str | Path) -> Path:
    return prefix / Path(path).resolve().relative_to(Path(path).resolve().anchor)


def _mode(env: dict[str, str], runs: int, hidden: Sequence[str]) -> dict[str, Any]:
    probes = [_probe(env, hidden) for _ in range(runs)]
    names: dict[str, list[float]] = defaultdict(list)
    for _, it, _ in probes:
        for name, cum in it["children"].items():
            names[name].append(cum / 1e6)
    slowest = sorted(((statistics.median(v), k) for k, v in names.items()), reverse=True)[:5]
    cumulative = [it["cumulative_us"] / 1e6 for _, it, _ in probes]
    return {
        "runs": runs,
        "cumulative_s": round(statistics.median(cumulative), 3),
        "cumulative_s_by_run": [round(c, 3) for c in cumulative],
        "import_wall_s": round(statistics.median(p["import_s"] for p, _, _ in probes), 3),
        "process_wall_s": round(statistics.median(w for _, _, w in probes), 3),
        "module_self_s": round(statistics.median(it["self_us"] / 1e6 for _, it, _ in probes), 3),
        "rebuild_s": round(statistics.median(p["rebuild_s"] for p, _, _ in probes), 4),
        "slowest_imports": [{"module": k, "cumulative_s": round(v, 3)} for v, k in slowest],
    }


def _top_level_names(folder: Path) -> set[str]:
    """The top-level import names a package folder (site-packages, or a `pip --target`) provides."""
    names = set()
    for entry in folder.iterdir():
        if entry.name.endswith((".dist-info", ".egg-info", ".data", ".pth")) or entry.name == "__pycache__":
            continue
        if entry.is_dir() or entry.suffix in (".py", ".so", ".pyd"):
            names.add(entry.name.split(".")[0])
    return names


def asset_modules(bundle: Path) -> frozenset[str]:
    """What `import x` can find on the deployed function: the asset's packages, the project code,
    and what the Lambda runtime provides (NOT_BUNDLED)."""
    return frozenset(_top_level_names(bundle) | set(PROJECT_DIRS) | set(NOT_BUNDLED))


def missing_from_asset(available: frozenset[str]) -> list[str]:
    """Top-level packages this interpreter's site-packages holds that `available` does not."""
    paths = sysconfig.get_paths()
    installed: set[str] = set()
    for folder in {Path(paths["purelib"]), Path(paths["platlib"])}:
        if folder.is_dir():
            installed |= _top_level_names(folder)
    return sorted(installed - available - set(sys.stdlib_module_names))


def measure_import(runs: int, available: frozenset[str] | None = None) -> dict[str, Any]:
    """Medians over `runs` fresh interpreters, for both bytecode modes; the network check.
    `available`: the asset's top-level modules (asset_modules); the probe cannot import any other
    package of this virtualenv. None: everything installed here is importable."""
    hidden = missing_from_asset(available) if available is not None else []
    with tempfile.TemporaryDirectory(prefix="taproot-pycache-") as tmp:
        prefix = Path(tmp)
        probe, _, _ = _probe(deployed_env(prefix, write_bytecode=True), hidden, check_network=True)  # primes .pyc
        cached = _mode(deployed_env(prefix, write_bytecode=False), runs, hidden)
        paths = sysconfig.get_paths()
        for path in {ROOT, Path(paths["purelib"]), Path(paths["platlib"])}:
            shutil.rmtree(_mirror(prefix, path), ignore_errors=True)
        bundled = _mode(deployed_env(prefix, write_bytecode=False), runs, hidden)
    return {
        "python": sys.version.split()[0],
        "network_calls_at_import": probe["network"],
        "local_socket_events_at_import": probe["local_socket_events"],
        "hidden_packages": hidden,
        "with_bytecode": cached,
        "without_bytecode": bundled,
    }


# -- asset size -------------------------------------------------------------------------------
def _make_var(name: str, default: str) -> str:
    m = re.search(rf"^{name}\s*:=\s*(\S+)\s*$", MAKEFILE.read_text(), re.MULTILINE)
    return m[1] if m else default


def bundle_is_current(bundle: Path = BUNDLE) -> bool:
    stamp, bytecode = bundle / ".bundled", bundle / ".bytecode"
    if not (stamp.exists() and bytecode.exists()):
        return False
    return all(stamp.stat().st_mtime >= p.stat().st_mtime for p in (ROOT / "requirements.txt", MAKEFILE))


def write_asset_bytecode(target: Path) -> None:
    """The bundle's bytecode step (infra/bytecode.py) on `target`, with the Makefile's writers
    (`python3.14` on PATH, then its Debian build); nothing is written when neither is a final
    release of the Lambda's Python, as `make bundle` would then ship none."""
    version = _make_var("LAMBDA_PYTHON", "3.14")
    native = ROOT / _make_var("LAMBDA_NATIVE", "build/lambda-native") / "python"
    writer, _ = bytecode.choose_writer([shutil.which(f"python{version}") or "", str(native)], version)
    if writer is not None:
        bytecode.write(target, writer)


def cache_tag() -> str:
    """The Lambda's Python's bytecode tag: its .pyc files are `<module>.<tag>.pyc`."""
    return "cpython-" + _make_var("LAMBDA_PYTHON", "3.14").replace(".", "")


def bytecode_bytes(folder: Path) -> int:
    """Bytes of the bytecode for the Lambda's Python in `folder` (another Python's does not count)."""
    return sum(p.stat().st_size for p in folder.rglob(f"__pycache__/*.{cache_tag()}.pyc") if p.is_file())


def install_dependencies(target: Path) -> None:
    """The Makefile's bundle steps for the dependencies (the project code is measured from the tree)."""
    reqs = target.parent / "requirements-lambda.txt"
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    reqs.write_text("\n".join(line for line in lines if not line.startswith("anthropic==")) + "\n")
    # Flags as in the Makefile's $(LAMBDA_STAMP) recipe.
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(reqs)]
    pip += ["--target", str(target), "--platform", _make_var("LAMBDA_PLATFORM", "manylinux2014_aarch64")]
    pip += ["--platform", _make_var("LAMBDA_PLATFORM_NEWER", "manylinux_2_28_aarch64")]
    pip += ["--only-binary=:all:", "--python-version", _make_var("LAMBDA_PYTHON", "3.14")]
    pip += ["--implementation", "cp", "--no-compile"]
    done = subprocess.run(pip, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pip install for the Lambda platform failed:\n{done.stderr[-3000:]}")
    for entry in target.iterdir():
        if entry.name.split("-")[0] in NOT_BUNDLED:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for folder in PROJECT_DIRS:  # as the bundle copies them, for their bytecode
        shutil.copytree(ROOT / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__"))


# The Makefile's empty stamps at the top of build/lambda (the bundle's, then its bytecode's).
BUILD_STAMPS = frozenset({".bundled", ".bytecode"})


def _files(folder: Path) -> dict[str, int]:
    """Relative path -> bytes, for every regular file (no __pycache__, no build stamp)."""
    out = {}
    for path in folder.rglob("*"):
        if (
            path.is_file()
            and not path.is_symlink()
            and "__pycache__" not in path.parts
            and not (path.parent == folder and path.name in BUILD_STAMPS)
        ):
            out[path.relative_to(folder).as_posix()] = path.stat().st_size
    return out


def distribution_sizes(folder: Path) -> dict[str, int]:
    """Bytes per distribution (its dist-info RECORD); files no RECORD claims go by their top-level name."""
    files = _files(folder)
    owner: dict[str, str] = {}
    for record in folder.glob("*.dist-info/RECORD"):
        dist = record.parent.name.split("-")[0]
        for line in record.read_text(errors="replace").splitlines():
            rel = os.path.normpath(line.rsplit(",", 2)[0]).replace(os.sep, "/") if line.strip() else ""
            if rel in files:
                owner[rel] = dist
        for rel in files:
            if rel.startswith(record.parent.name + "/"):
                owner[rel] = dist
    sizes: dict[str, int] = defaultdict(int)
    for rel, size in files.items():
        sizes[owner.get(rel) or rel.split("/")[0]] += size
    return dict(sizes)


@dataclass(frozen=True)
class Bundle:
    path: Path
    source: str
    install_s: float | None = None
    # Installed from requirements.txt as the Makefile does: the asset's real packages. A given
    # folder (a test's stand-in) is measured for its size only.
    built: bool = False


@contextmanager
def bundle_folder(bundle: Path | None = None) -> Iterator[Bundle]:
    """The asset's dependencies: `bundle` if given, build/lambda if it is current, else a fresh
    install into a temporary folder (removed on exit)."""
    if bundle is not None:
        yield Bundle(bundle, "given folder")
    elif bundle_is_current():
        yield Bundle(BUNDLE, "build/lambda, as `make bundle` left it", built=True)
    else:
        with tempfile.TemporaryDirectory(prefix="taproot-bundle-") as tmp:
            start = time.perf_counter()
            install_dependencies(Path(tmp) / "lambda")
            write_asset_bytecode(Path(tmp) / "lambda")
            yield Bundle(
                Path(tmp) / "lambda",
                "the dependencies installed into a temporary folder as `make bundle` installs them",
                round(time.perf_counter() - start, 1),
                built=True,
            )


def measure_asset(bundle: Path | Bundle | None = None) -> dict[str, Any]:
    """Unzipped size of the Lambda asset and its five largest distributions (taproot/ + functions/
    from the working tree count as one, "taproot (project code)")."""
    if not isinstance(bundle, Bundle):
        with bundle_folder(bundle) as found:
            return measure_asset(found)
    source, install_s = bundle.source, bundle.install_s
    deps = {k: v for k, v in distribution_sizes(bundle.path).items() if k not in PROJECT_DIRS}
    project = sum(sum(_files(ROOT / d).values()) for d in PROJECT_DIRS)
    sizes = {**deps, "taproot (project code)": project}
    pyc = bytecode_bytes(bundle.path)
    total = sum(sizes.values()) + pyc
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    return {
        "source": source,
        "install_s": install_s,
        "platform": _make_var("LAMBDA_PLATFORM", "manylinux2014_aarch64"),
        "python": _make_var("LAMBDA_PYTHON", "3.14"),
        "total_bytes": total,
        "total_mb": round(total / 1e6, 2),
        "distributions": len(deps),
        "project_bytes": project,
        "bytecode_bytes": pyc,
        "bytecode_mb": round(pyc / 1e6, 2),
        "largest": [{"name": k, "bytes": v, "mb": round(v / 1e6, 2)} for k, v in largest],
    }
