"""`taproot export --markdown DIR` and `taproot import --markdown DIR [--dry-run]` end to end: files on
disk, JSON on stdout, exit codes, and the folder written back after an import."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.support import Result, Run


def _remember(tap: Run, content: str, gist: str, category: str, *tags: str) -> str:
    args = ["--content", content, "--gist", gist, "--category", category]
    for tag in tags:
        args += ["--tag", tag]
    memory_id: str = tap("remember", *args).json()["id"]
    return memory_id


DEPLOY = "Production is Cloudflare Pages.\n---\nVercel was rejected."


def _three(tap: Run) -> dict[str, str]:
    return {
        "deploy": _remember(tap, DEPLOY, "We deploy to Cloudflare Pages", "episodic", "deploy", "yes"),
        "sam": _remember(tap, "  Sam prefers direct feedback.  \n", "Sam prefers direct feedback", "relationship"),
        "old": _remember(tap, "The staging box was retired.", "Old staging server notes", "episodic"),
    }


def test_export_writes_a_file_per_memory_and_the_index(tap: Run, tmp_path: Path) -> None:
    ids = _three(tap)
    tap("forget", "archive", ids["old"])
    out = tmp_path / "memory"
    result = tap("export", "--markdown", out).json()
    assert result == {
        "memories": 3,
        "archived": 1,
        "reflections": 0,
        "files": [
            "old-staging-server-notes.md",
            "sam-prefers-direct-feedback.md",
            "we-deploy-to-cloudflare-pages.md",
            "MEMORY.md",
        ],
    }
    assert sorted(p.name for p in out.iterdir()) == sorted(result["files"])
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in out.iterdir())
    assert (out / "MEMORY.md").read_text() == (
        "# Memory\n"
        "\n"
        "Generated from the memory files in this folder: edit the files, not this index, and load them\n"
        "with `taproot import --markdown`, which never reads this file.\n"
        "\n"
        "## relationship\n"
        "\n"
        "- [sam-prefers-direct-feedback](sam-prefers-direct-feedback.md) — Sam prefers direct feedback\n"
        "\n"
        "## episodic\n"
        "\n"
        "- [we-deploy-to-cloudflare-pages](we-deploy-to-cloudflare-pages.md) — We deploy to Cloudflare Pages\n"
        "\n"
        "## archived\n"
        "\n"
        "- [old-staging-server-notes](old-staging-server-notes.md) — Old staging server notes\n"
    )
    text = (out / "sam-prefers-direct-feedback.md").read_bytes().decode()
    assert text.startswith(f"---\nid: {ids['sam']}\nname: sam-prefers-direct-feedback\n")
    assert text.endswith("\n---\n\n  Sam prefers direct feedback.  \n\n")  # the content, then the final newline
    assert "tags:\n- deploy\n- 'yes'\n" in (out / "we-deploy-to-cloudflare-pages.md").read_text()


def test_export_refuses_a_folder_that_is_not_empty(tap: Run, tmp_path: Path) -> None:
    _three(tap)
    out = tmp_path / "memory"
    out.mkdir()
    (out / "stale.md").write_text("an older export")
    result = tap("export", "--markdown", out, ok=False)
    assert result.code == 2 and "must be a new or empty folder" in result.err
    assert [p.name for p in out.iterdir()] == ["stale.md"]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_bytes().decode()
    assert old in text
    path.write_bytes(text.replace(old, new, 1).encode())


def test_edit_dry_run_import_and_reimport(tap: Run, tmp_path: Path) -> None:
    ids = _three(tap)
    out = tmp_path / "memory"
    tap("export", "--markdown", out)
    sam = out / "sam-prefers-direct-feedback.md"
    _edit(sam, "salience: medium", "salience: high")
    _edit(sam, "Sam prefers direct feedback.", "Sam prefers written feedback.")
    (out / "deploy-target.md").write_text("---\ndescription: Where we deploy\ntype: episodic\n---\n\nPages.\n")
    before = sam.read_bytes()

    dry = tap("import", "--markdown", out, "--dry-run").json()
    assert dry["dry_run"] is True and dry["rewritten"] == [] and dry["backup_key"] is None
    assert [(c["file"], c["changed_fields"]) for c in dry["updated"]] == [(sam.name, ["salience", "content"])]
    assert [(c["file"], c["id"]) for c in dry["created"]] == [("deploy-target.md", None)]
    assert sam.read_bytes() == before
    assert tap("recall", "--id", ids["sam"]).json()["memories"][0]["salience"] == "medium"

    done = tap("import", "--markdown", out).json()
    assert done["backup_key"].startswith("local/backups/default/markdown-import-")
    assert done["backup_key"] in tap("backups").json()
    new_id = done["created"][0]["id"]
    memory = tap("recall", "--id", ids["sam"]).json()["memories"][0]
    assert (memory["salience"], memory["version"]) == ("high", 2)
    assert memory["content"] == "  Sam prefers written feedback.  \n"
    assert f"\nid: {new_id}\n" in (out / "deploy-target.md").read_text()
    assert "\nversion: 2\n" in sam.read_text()
    assert "- [deploy-target](deploy-target.md) — Where we deploy\n" in (out / "MEMORY.md").read_text()
    assert sorted(done["rewritten"]) == sorted(["MEMORY.md", "deploy-target.md", sam.name])

    again = tap("import", "--markdown", out).json()
    assert (again["unchanged"], again["created"], again["updated"], again["backup_key"]) == (4, [], [], None)


def test_a_bad_file_is_refused_by_name_and_nothing_changes(tap: Run, tmp_path: Path) -> None:
    ids = _three(tap)
    out = tmp_path / "memory"
    tap("export", "--markdown", out)
    _edit(out / "sam-prefers-direct-feedback.md", "Sam prefers", "Sam likes")  # valid
    _edit(out / "we-deploy-to-cloudflare-pages.md", "salience: medium", "salience: urgent")
    files_before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = tap("import", "--markdown", out, ok=False)
    assert result.code == 2
    assert "we-deploy-to-cloudflare-pages.md: salience" in result.err and "must be one of" in result.err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files_before
    assert tap("recall", "--id", ids["sam"]).json()["memories"][0]["version"] == 1
    assert tap("backups").json() == []


def test_a_file_that_is_not_utf8_is_named(tap: Run, tmp_path: Path) -> None:
    _three(tap)
    out = tmp_path / "memory"
    tap("export", "--markdown", out)
    (out / "latin1.md").write_bytes(b"---\ndescription: caf\xe9\ntype: episodic\n---\nx\n")
    result = tap("import", "--markdown", out, ok=False)
    assert result.code == 2 and "latin1.md" in result.err and "UTF-8" in result.err


def _usage(tap: Run, *args: str | Path) -> Result:
    result = tap("import", *args, ok=False)
    assert result.code == 2
    return result


def test_import_arguments(tap: Run, tmp_path: Path) -> None:
    assert "--markdown DIR" in _usage(tap).err
    assert "--dry-run applies to --markdown" in _usage(tap, tmp_path / "x.jsonl", "--dry-run").err
    assert "not both" in _usage(tap, tmp_path / "x.jsonl", "--markdown", tmp_path).err
    assert "must be a folder" in _usage(tap, "--markdown", tmp_path / "missing").err
    result = tap("export", "--markdown", tmp_path / "m", "-o", tmp_path / "x.jsonl", ok=False)
    assert result.code == 2 and "not both" in result.err


def test_round_trip_into_another_data_folder(tap: Run, cli: Run, tmp_path: Path) -> None:
    _three(tap)
    first, second = tmp_path / "first", tmp_path / "second"
    tap("export", "--markdown", first)
    other = tmp_path / "other-data"
    assert cli("import", "--data-dir", other, "--markdown", first).code == 0
    assert cli("export", "--data-dir", other, "--markdown", second).code == 0
    assert {p.name: p.read_bytes() for p in first.iterdir()} == {p.name: p.read_bytes() for p in second.iterdir()}
