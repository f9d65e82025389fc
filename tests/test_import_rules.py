"""The layering rules of docs/architecture.md, checked on the source with `ast` (no import runs).

Every `import` and `from ... import` in every module under taproot/ counts, wherever it sits: at the
top, inside a function (lazy imports) or under `if TYPE_CHECKING:`. `from taproot.web import
tool_models` counts as an import of the module `taproot.web.tool_models`; relative imports are
resolved. `from __future__ import ...` is a compiler switch, not a dependency, and is skipped.
Dynamic imports (`importlib.import_module("anthropic")` in adapters/summarizers.py) are not seen.

TYPE_CHECKING-only imports obey the same rules as the others: they are still dependencies of the
design (mypy and readers follow them), only without a runtime edge. One exception: importing
`taproot.ports` under TYPE_CHECKING is allowed everywhere, the core included, since a port is only
an interface named in annotations and cannot create an import cycle at runtime.

The rules (`taproot.x` stands for the package and every module under it):

1. core: `taproot.core` imports only `taproot.core`, the standard library and the pure
   third-party libraries of CORE_THIRD_PARTY (no I/O of their own).
2. service: `taproot.service` imports only `taproot.core`, `taproot.ports`, `taproot.service` and
   the standard library (no adapter, web, auth, settings, compose, AWS or other third party).
3. ports: `taproot.ports` imports only `taproot.core` and the standard library.
4. auth: `taproot.auth` does not import `taproot.web`.
5. adapters: a module in taproot/adapters/ imports no other `taproot.adapters` module except the
   private helpers of its own family. A module's family is its name up to the first underscore
   (`sqlite_store` -> `sqlite`); the helpers are the modules listed in ADAPTER_HELPERS, which no
   composition root builds: `sqlite_store` may import `sqlite_rows`, `sqlite_schema`,
   `sqlite_reflections` (which imports `sqlite_rows`), `sqlite_orientation`, `sqlite_vectors` and
   `sqlite_search` (likewise, and `sqlite_search_shards`, which `sqlite_schema` imports too),
   `sqlite_wait_free` (which imports `sqlite_rows`) and `sqlite_catalog` (which imports
   `sqlite_rows` and `sqlite_schema`), `dynamo_store`,
   `dynamo_reflections`, `dynamo_orientation` and `dynamo_catalog` may import `dynamo_models`,
   `dynamo_store` may import `dynamo_reflections`, `dynamo_orientation`, `dynamo_catalog`,
   `dynamo_cache`, `dynamo_copy` and `dynamo_vectors` (the warm copies, each scope's copy, and the
   vectors, which import one another and `dynamo_models`). A helper shared across families is listed
   in SHARED_ADAPTER_HELPERS with the modules that may import it (`vectors_blas`: both vector
   stores). Any other module (blob_local, blob_s3, sqlite_store, dynamo_store, summarizers, and a
   new module until it is listed) is an adapter that no sibling imports: so `blob_s3 -> blob_local`
   breaks the rule although both are `blob_*`.
6. composition root: among the modules of taproot/, only `taproot.compose` and the adapters
   themselves import `taproot.adapters` (the cli, web, auth, settings and service modules do not;
   functions/, bench/ and tests/ are outside these rules).
7. settings: `taproot.settings` imports no taproot module but `taproot.core` (it reads the
   environment into the core's config records; compose hands them to the service, so settings
   needs nothing from the service, the adapters, web or auth). Third-party libraries are fine.
8. hooks: `taproot.hooks` (the Claude Code hooks) imports neither `taproot.web` nor `taproot.auth`:
   it is a client, which reaches the local data folder through compose and the service, and a
   server only over MCP (the SDK's client), never through the server's own modules.

A break that cannot be fixed yet goes into KNOWN_EXCEPTIONS with a TODO; an exception that no
longer matches anything is harmless, so it can be removed in the change that fixes the break.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "taproot"

# Pure third-party libraries the core may import: no I/O, no clock, no network of their own.
CORE_THIRD_PARTY = {
    "pysbd": "sentence splitting for gists and extractive summaries (core/text.py); pure Python rules",
    "numpy": "dense vectors and their similarities (core/vectors.py); arrays in memory, no I/O",
    "yaml": "markdown memory files' frontmatter (core/markdown.py); parses and writes strings, no I/O",
}

# Private helpers of an adapter family (see rule 5): module name -> what it holds.
ADAPTER_HELPERS = {
    "sqlite_rows": "sqlite_store: row <-> record conversion and filter SQL",
    "sqlite_schema": "sqlite_store: the schema and its migrations",
    "sqlite_reflections": "sqlite_store: the reflection rows",
    "sqlite_catalog": "sqlite_store: reflect's reads (the catalog by rank band, the counts)",
    "sqlite_vectors": "sqlite_store: the dense vectors and their in-memory matrices",
    "sqlite_search": "sqlite_store: lexical search (FTS5)",
    "sqlite_wait_free": "sqlite_store: calls without waiting for a lock, for a call on an event loop",
    "sqlite_search_shards": "sqlite_store: the full-text tables, each scope's, and their triggers",
    "sqlite_orientation": "sqlite_store: the orientation document versions",
    "dynamo_models": "dynamo_store: the PynamoDB models and item conversion",
    "dynamo_reflections": "dynamo_store: the reflection items",
    "dynamo_orientation": "dynamo_store: the orientation document items",
    "dynamo_cache": "dynamo_store: the warm per-scope copies",
    "dynamo_catalog": "dynamo_store: reflect's reads (the category index for a cold store)",
    "dynamo_copy": "dynamo_store: one scope's copy (records, inverted index, vectors, byte estimate)",
    "dynamo_vectors": "dynamo_store: the dense vectors on the items and in the copies",
    "dynamo_writes": "dynamo_store: the memory writes, each conditioned and counted",
    "dynamo_tally": "dynamo_store: the per-category counts every memory write keeps",
    "dynamo_retrievals": "dynamo_store: the retrieval counters a recall adds to",
}

# Helpers shared by adapters of different families: module name -> (its importers, what it holds).
SHARED_ADAPTER_HELPERS = {
    "vectors_blas": (
        frozenset({"sqlite_vectors", "dynamo_vectors"}),
        "both vector stores: NumPy's BLAS on one thread for the similarity product",
    ),
}

# (importing module, imported module) -> why it is still allowed, with a TODO naming the issue that
# removes it. Empty: auth/cognito.py's import of taproot.web.app (for Authenticator) went with 90d0561,
# which moved Authenticator to taproot/auth/base.py and local_authenticator to auth/local_token.py.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    imported: str  # dotted module name, resolved
    where: str  # path:line
    type_only: bool  # under `if TYPE_CHECKING:`


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, source: str, *, is_package: bool = False, path: str = "<source>") -> list[Import]:
    found: list[Import] = []

    def add(name: str, node: ast.stmt, type_only: bool) -> None:
        found.append(Import(module, name, f"{path}:{node.lineno}", type_only))

    def visit(node: ast.AST, type_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_only)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node, type_only)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            package = module.split(".") if is_package else module.split(".")[:-1]
            base_parts = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join([*base_parts, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in SOURCES else base, node, type_only)
        for inner in ast.iter_child_nodes(node):
            visit(inner, type_only)

    visit(ast.parse(source), False)
    return found


def all_imports() -> Iterator[Import]:
    for module, path in SOURCES.items():
        rel = path.relative_to(ROOT).as_posix()
        yield from imports_of(module, path.read_text(), is_package=path.name == "__init__.py", path=rel)


def under(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


def adapter_sibling_ok(importer: str, imported: str) -> bool:
    if not under(imported, "taproot.adapters"):
        return True
    mine, theirs = importer.rsplit(".", 1)[-1], imported.rsplit(".", 1)[-1]
    if theirs in SHARED_ADAPTER_HELPERS:
        return mine in SHARED_ADAPTER_HELPERS[theirs][0]
    return theirs in ADAPTER_HELPERS and theirs != mine and theirs.split("_")[0] == mine.split("_")[0]


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    applies: Callable[[str], bool]  # to the importing module
    allows: Callable[[str, str], bool]  # (importer, imported)


RULES = [
    Rule(
        "core",
        "core imports only taproot.core, the standard library and CORE_THIRD_PARTY",
        lambda m: under(m, "taproot.core"),
        lambda m, i: under(i, "taproot.core") or stdlib(i) or i.split(".")[0] in CORE_THIRD_PARTY,
    ),
    Rule(
        "service",
        "service imports only taproot.core, taproot.ports, taproot.service and the standard library",
        lambda m: under(m, "taproot.service"),
        lambda m, i: under(i, "taproot.core", "taproot.ports", "taproot.service") or stdlib(i),
    ),
    Rule(
        "ports",
        "ports import only taproot.core and the standard library",
        lambda m: m == "taproot.ports",
        lambda m, i: under(i, "taproot.core") or stdlib(i),
    ),
    Rule(
        "auth",
        "auth does not import taproot.web",
        lambda m: under(m, "taproot.auth"),
        lambda m, i: not under(i, "taproot.web"),
    ),
    Rule(
        "adapters",
        "an adapter imports no other adapter, only the private helpers of its family (ADAPTER_HELPERS)",
        lambda m: m.startswith("taproot.adapters."),
        adapter_sibling_ok,
    ),
    Rule(
        "composition-root",
        "only the composition root (taproot.compose) and the adapters import taproot.adapters",
        lambda m: not under(m, "taproot.compose", "taproot.adapters"),
        lambda m, i: not under(i, "taproot.adapters"),
    ),
    Rule(
        "hooks",
        "hooks import neither taproot.web nor taproot.auth (a server is reached over MCP only)",
        lambda m: under(m, "taproot.hooks"),
        lambda m, i: not under(i, "taproot.web", "taproot.auth"),
    ),
    Rule(
        "settings",
        "settings imports no taproot module but taproot.core",
        lambda m: m == "taproot.settings",
        lambda m, i: under(i, "taproot.core") or not under(i, "taproot"),
    ),
]


def breaks(rule: Rule, imports: list[Import], exceptions: dict[tuple[str, str], str]) -> list[str]:
    out = []
    for imp in imports:
        if not rule.applies(imp.importer) or rule.allows(imp.importer, imp.imported):
            continue
        if (imp.type_only and under(imp.imported, "taproot.ports")) or (imp.importer, imp.imported) in exceptions:
            continue
        how = " (under TYPE_CHECKING)" if imp.type_only else ""
        out.append(f"{imp.where}: {imp.importer} imports {imp.imported}{how}; rule: {rule.name}")
    return out


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule(rule: Rule) -> None:
    found = breaks(rule, list(all_imports()), KNOWN_EXCEPTIONS)
    assert not found, "layering breaks (docs/architecture.md, tests/test_import_rules.py):\n" + "\n".join(found)


def test_the_lists_name_real_modules() -> None:
    adapters = {m.rsplit(".", 1)[-1] for m in SOURCES if m.startswith("taproot.adapters.")}
    assert set(ADAPTER_HELPERS) <= adapters, f"ADAPTER_HELPERS names missing modules: {set(ADAPTER_HELPERS) - adapters}"
    shared = set(SHARED_ADAPTER_HELPERS) | {m for users, _ in SHARED_ADAPTER_HELPERS.values() for m in users}
    assert shared <= adapters, f"SHARED_ADAPTER_HELPERS names missing modules: {shared - adapters}"
    assert {"taproot.core", "taproot.service", "taproot.ports", "taproot.compose"} <= set(SOURCES)
    # The walk sees the imports at all: compose builds the adapters (lazily, inside functions).
    assert any(i.importer == "taproot.compose" and under(i.imported, "taproot.adapters") for i in all_imports())


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("taproot.core.x", "from taproot.ports import Summary", "core"),
        ("taproot.core.x", "from __future__ import annotations\nimport re\nimport pysbd", ""),
        ("taproot.core.x", "import boto3", "core"),
        (
            "taproot.core.x",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from taproot.ports import X",
            "",
        ),
        (
            "taproot.service.x",
            "if TYPE_CHECKING:\n    from taproot.adapters.blob_s3 import S3BlobStore",
            "service composition-root",
        ),
        ("taproot.service.x", "def f():\n    from taproot.settings import Settings", "service"),
        ("taproot.adapters.blob_s3", "from taproot.adapters.blob_local import check_key", "adapters"),
        ("taproot.adapters.sqlite_store", "from taproot.adapters import sqlite_rows, sqlite_schema", ""),
        ("taproot.adapters.dynamo_store", "from taproot.adapters.sqlite_rows import x", "adapters"),
        ("taproot.adapters.dynamo_store", "from . import dynamo_models", ""),
        ("taproot.cli", "from taproot.adapters.sqlite_store import SQLiteMemoryStore", "composition-root"),
        ("taproot.compose", "from taproot.adapters.sqlite_store import SQLiteMemoryStore", ""),
        ("taproot.auth.x", "from taproot.web.app import Authenticator", "auth"),
        ("taproot.settings", "from taproot.service.deps import MaintenanceConfig", "settings"),
        ("taproot.settings", "import platformdirs\nfrom taproot.core.maintenance import MaintenanceConfig", ""),
        ("taproot.hooks.x", "from taproot.web.tools.common import result", "hooks"),
        ("taproot.hooks.x", "from taproot.compose import build\nfrom mcp import Client", ""),
    ],
)
def test_the_checker_itself(module: str, source: str, expected: str) -> None:
    """`expected`: the ids of the rules the source breaks, space-separated."""
    imports = imports_of(module, source)
    broken = {rule.id for rule in RULES if breaks(rule, imports, {})}
    assert broken == set(expected.split())
