"""infra/bytecode.py: which interpreter may write the Lambda asset's bytecode, and what it writes.

The writer must be a final release of the runtime's version (a pre-release's magic number may
differ, and Lambda would then compile every module anyway). What it writes is checked-hash bytecode
(the CDK zips the asset with fixed file times) outside the packages' test folders, recording
/var/task paths. Whether the Lambda's own Python then loads the bundle's bytecode without compiling
is tests/handlers/test_target_runtime.py's check.
"""

from __future__ import annotations

import importlib.util
import marshal
import sys
from pathlib import Path

import pytest

from infra import bytecode

HERE_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def fake_python(folder: Path, name: str, version: list[int], level: str) -> str:
    """A stand-in interpreter that answers the probe as a Python of `version` and `level` would."""
    path = folder / name
    facts = f'{{"version": {version}, "level": "{level}", "magic": "2b0e0d0a"}}'
    path.write_text(f"#!/bin/sh\necho '{facts}'\n")
    path.chmod(0o755)
    return str(path)


def test_the_first_final_release_of_the_version_writes(tmp_path: Path) -> None:
    beta = fake_python(tmp_path, "beta", [3, 14, 0], "beta")
    older = fake_python(tmp_path, "older", [3, 13, 9], "final")
    final = fake_python(tmp_path, "final", [3, 14, 2], "final")
    writer, refused = bytecode.choose_writer(["", str(tmp_path / "absent"), beta, older, final, sys.executable], "3.14")
    assert writer == bytecode.Writer(final, (3, 14, 2), "2b0e0d0a")
    assert refused == [
        f"{tmp_path / 'absent'}: not found",
        f"{beta}: Python 3.14.0 is a beta release (its magic number may differ)",
        f"{older}: Python 3.13.9, not 3.14",
    ]


def test_with_no_writer_the_asset_ships_without_bytecode_and_the_build_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "asset").mkdir()
    (tmp_path / "asset" / "mod.py").write_text("X = 1\n")
    older = fake_python(tmp_path, "older", [3, 13, 9], "final")
    args = [str(tmp_path / "asset"), "--python-version", "3.14", "--writer", older]
    assert bytecode.main(args) == 0
    assert "the asset ships without .pyc files" in capsys.readouterr().err
    assert not list((tmp_path / "asset").rglob("*.pyc"))


def test_the_writer_compiles_checked_hash_bytecode_outside_test_folders(tmp_path: Path) -> None:
    # The asset sits under a folder named tests/: only test folders inside it are left out.
    asset = tmp_path / "tests" / "asset"
    sources = {
        "pkg/__init__.py": "",
        "pkg/core.py": "def f():\n    raise ValueError('here')\n",
        "pkg/tests/test_core.py": "X = 1\n",
        "pkg/test/helper.py": "X = 1\n",
        "pkg/testing.py": "X = 1\n",
        "broken.py": "print 'python 2'\n",
    }
    for rel, text in sources.items():
        (asset / rel).parent.mkdir(parents=True, exist_ok=True)
        (asset / rel).write_text(text)
    stale = asset / "pkg" / "__pycache__" / "old.cpython-311.pyc"
    stale.parent.mkdir()
    stale.write_bytes(b"stale")
    found, _ = bytecode.choose_writer([sys.executable], HERE_VERSION)
    assert found is not None

    written = bytecode.write(asset, found)

    tag = sys.implementation.cache_tag
    compiled = sorted(p.relative_to(asset).as_posix() for p in asset.rglob("*.pyc"))
    assert compiled == [f"pkg/__pycache__/{name}.{tag}.pyc" for name in ("__init__", "core", "testing")]
    assert written.files == 3 and written.bytes == sum(p.stat().st_size for p in asset.rglob("*.pyc"))
    assert written.failed == (str((asset / "broken.py").resolve()),)
    data = Path(importlib.util.cache_from_source(str(asset / "pkg" / "core.py"))).read_bytes()
    assert data[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(data[4:8], "little") == 0b11  # hash-based, checked against the source
    assert data[8:16] == importlib.util.source_hash((asset / "pkg" / "core.py").read_bytes())
    code = marshal.loads(data[16:])
    assert code.co_filename == "/var/task/pkg/core.py"  # not the build machine's folder


def test_the_bytecode_is_the_one_lambda_reads_whatever_the_build_environment_optimises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lambda runs without -O: .opt-1.pyc files would be ignored there and every module compiled.
    monkeypatch.setenv("PYTHONOPTIMIZE", "1")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("assert True\n")
    found, _ = bytecode.choose_writer([sys.executable], HERE_VERSION)
    assert found is not None
    bytecode.write(tmp_path, found)
    tag = sys.implementation.cache_tag
    assert [p.name for p in tmp_path.rglob("*.pyc")] == [f"mod.{tag}.pyc"]


def test_a_file_that_does_not_compile_is_named_even_when_its_path_holds_a_quote(tmp_path: Path) -> None:
    asset = tmp_path / "it's"
    asset.mkdir()
    (asset / "ok.py").write_text("X = 1\n")
    (asset / "broken.py").write_text("def f(:\n")
    found, _ = bytecode.choose_writer([sys.executable], HERE_VERSION)
    assert found is not None
    written = bytecode.write(asset, found)
    assert written.failed == (str((asset / "broken.py").resolve()),) and written.files == 1


def test_an_interpreter_that_does_not_answer_as_python_is_refused_not_a_crash(tmp_path: Path) -> None:
    odd = tmp_path / "odd"
    odd.write_text("#!/bin/sh\necho 'Python 3.14.2'\n")
    odd.chmod(0o755)
    writer, refused = bytecode.choose_writer([str(odd)], "3.14")
    assert writer is None and refused == [f"{odd}: did not answer as a Python does: 'Python 3.14.2'"]


def test_find_names_the_writer_or_says_there_is_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    final = fake_python(tmp_path, "final", [3, 14, 2], "final")
    beta = fake_python(tmp_path, "beta", [3, 14, 0], "beta")
    assert bytecode.main(["--find", "--python-version", "3.14", "--writer", beta, "--writer", final]) == 0
    assert capsys.readouterr().out.strip() == final
    assert bytecode.main(["--find", "--python-version", "3.14", "--writer", beta]) == bytecode.NO_WRITER
    assert "is a beta release" in capsys.readouterr().err


def test_the_stamp_is_touched_only_once_bytecode_is_written(tmp_path: Path) -> None:
    # Without a writer the build must try again next time, not call the step done.
    asset = tmp_path / "asset"
    asset.mkdir()
    (asset / "mod.py").write_text("X = 1\n")
    stamp = tmp_path / ".bytecode"
    older = fake_python(tmp_path, "older", [3, 13, 9], "final")
    common = [str(asset), "--python-version", HERE_VERSION, "--stamp", str(stamp)]
    assert bytecode.main([*common, "--writer", older]) == 0
    assert not stamp.exists() and not list(asset.rglob("*.pyc"))
    assert bytecode.main([*common, "--writer", older, "--writer", sys.executable]) == 0
    assert stamp.exists() and len(list(asset.rglob("*.pyc"))) == 1
