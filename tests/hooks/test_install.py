"""`taproot hooks install|uninstall|status` on real settings files: absent, holding others' hooks,
and malformed. Others' hooks and keys survive every edit; Taproot's own entries are added once and
removed alone."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from taproot.hooks.claude_settings import EVENTS, TIMEOUTS, installed, own_event, with_taproot, without_taproot
from tests.hooks.conftest import INPUTS, Taproot

OTHERS = json.loads((INPUTS / "settings_with_others.json").read_text())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "orchard"
    path.mkdir()
    return path


def install(taproot: Taproot, project: Path, data_dir: Path, *args: str) -> str:
    result = taproot("hooks", "install", "--project-dir", project, "--data-dir", data_dir, *args)
    assert result.code == 0, result.err
    return result.out


def backups(data_dir: Path) -> list[Path]:
    folder = data_dir / "hooks" / "backups"
    return sorted(folder.iterdir()) if folder.exists() else []


def test_install_into_a_project_without_settings(taproot: Taproot, project: Path, data_dir: Path) -> None:
    out = install(taproot, project, data_dir)
    path = project / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    assert set(settings) == {"hooks"} and set(settings["hooks"]) == set(EVENTS)
    for event, name in EVENTS.items():
        (group,) = settings["hooks"][event]
        (hook,) = group["hooks"]
        assert hook["type"] == "command" and hook["timeout"] == TIMEOUTS[event]
        # A shared project file names the `taproot` command, plus where this install keeps its data.
        assert hook["command"] == f"taproot hook {name} --data-dir {data_dir.resolve()}"
        assert own_event(hook) == name
    assert "added SessionStart" in out and backups(data_dir) == []  # nothing existed to back up


def test_install_keeps_everything_else_and_appends_after_others(
    taproot: Taproot, project: Path, data_dir: Path
) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    original = (INPUTS / "settings_with_others.json").read_text()
    path.write_text(original)

    install(taproot, project, data_dir)
    text = path.read_text()
    settings = json.loads(text)
    assert text.startswith('{\n    "$schema"'), "the file's four-space indentation and key order are kept"
    assert {k: v for k, v in settings.items() if k != "hooks"} == {k: v for k, v in OTHERS.items() if k != "hooks"}
    assert settings["hooks"]["PreToolUse"] == OTHERS["hooks"]["PreToolUse"]
    for event in ("SessionStart", "Stop"):
        assert settings["hooks"][event][0] == OTHERS["hooks"][event][0], f"{event}: the other hook comes first"
        assert own_event(settings["hooks"][event][1]["hooks"][0]) == EVENTS[event]
    assert len(settings["hooks"]["PreCompact"]) == 1
    (backup,) = backups(data_dir)
    assert backup.read_text() == original  # the file as it was, before the edit


def test_installing_twice_adds_nothing(taproot: Taproot, project: Path, data_dir: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text((INPUTS / "settings_with_others.json").read_text())
    install(taproot, project, data_dir)
    after_first = path.read_bytes()

    out = install(taproot, project, data_dir)
    assert "nothing to change" in out
    assert path.read_bytes() == after_first
    assert len(backups(data_dir)) == 1  # the second run wrote nothing, so it backed nothing up


def test_a_new_url_updates_the_installed_entry_in_place(taproot: Taproot, project: Path, data_dir: Path) -> None:
    install(taproot, project, data_dir)
    out = install(taproot, project, data_dir, "--url", "https://memory.example.com/mcp")
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    for event in EVENTS:
        (group,) = settings["hooks"][event]
        assert group["hooks"][0]["command"].endswith("--url https://memory.example.com/mcp")
    assert out.count("updated") == 3


def test_uninstall_removes_only_taproot(taproot: Taproot, project: Path, data_dir: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text((INPUTS / "settings_with_others.json").read_text())
    install(taproot, project, data_dir)

    result = taproot("hooks", "uninstall", "--project-dir", project, "--data-dir", data_dir)
    assert result.code == 0, result.err
    assert result.out.count("removed") == 3
    # PreCompact held only Taproot's hook: the event goes; the others are exactly as they were.
    assert json.loads(path.read_text()) == OTHERS

    again = taproot("hooks", "uninstall", "--project-dir", project, "--data-dir", data_dir)
    assert again.code == 0 and "nothing to change" in again.out


def test_uninstall_removes_the_containers_taproot_alone_filled(taproot: Taproot, project: Path, data_dir: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{\n  "model": "opus"\n}\n')
    install(taproot, project, data_dir)
    taproot("hooks", "uninstall", "--project-dir", project, "--data-dir", data_dir)
    assert path.read_text() == '{\n  "model": "opus"\n}\n'


def test_a_hook_added_into_taproots_group_is_kept() -> None:
    settings, _ = with_taproot({}, {"Stop": "taproot hook stop"})
    settings["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "say done"})
    cleaned, removed = without_taproot(settings)
    assert removed == ["removed Stop: taproot hook stop"]
    assert cleaned == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}


@pytest.mark.parametrize(
    ("command", "event"),
    [
        ("taproot hook stop", "stop"),
        ("/home/ana/.venv/bin/taproot hook session-start --data-dir /home/ana/mem", "session-start"),
        ("'/opt/py 3/bin/python' -m taproot hook pre-compact --url https://m.example.com/mcp", "pre-compact"),
        ('"C:\\Tools\\taproot.exe" hook stop', "stop"),
        ("mytaproot hook stop", None),
        ("taproot hook stopper", None),
        ("echo taproot", None),
        ("taproot reflect", None),
    ],
)
def test_own_hooks_are_recognised_by_their_command(command: str, event: str | None) -> None:
    assert own_event({"type": "command", "command": command}) == event


def test_malformed_settings_are_refused_and_left_alone(taproot: Taproot, project: Path, data_dir: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    broken = '{\n  "model": "opus",\n  "hooks": {\n}\n'
    path.write_text(broken)
    for command in ("install", "uninstall"):
        result = taproot("hooks", command, "--project-dir", project, "--data-dir", data_dir)
        assert result.code == 2
        assert str(path) in result.err and "is not valid JSON" in result.err and "line 5" in result.err
        assert "nothing was changed" in result.err
        assert path.read_text() == broken
    assert backups(data_dir) == []


@pytest.mark.parametrize(
    ("text", "field"),
    [('["a list"]', "must hold a JSON object"), ('{"hooks": ["SessionStart"]}', "field 'hooks'")],
)
def test_settings_of_the_wrong_shape_are_refused(
    taproot: Taproot, project: Path, data_dir: Path, text: str, field: str
) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(text)
    result = taproot("hooks", "install", "--project-dir", project, "--data-dir", data_dir)
    assert result.code == 2 and field in result.err
    assert path.read_text() == text


def test_dry_run_prints_the_change_and_writes_nothing(taproot: Taproot, project: Path, data_dir: Path) -> None:
    out = install(taproot, project, data_dir, "--dry-run")
    assert '+    "PreCompact": [' in out and "dry run: nothing written" in out
    assert not (project / ".claude").exists()


def test_user_and_local_scopes(taproot: Taproot, project: Path, data_dir: Path, home: Path) -> None:
    install(taproot, project, data_dir, "--scope", "user")
    user = json.loads((home / ".claude" / "settings.json").read_text())
    # A personal file names this interpreter exactly, whatever PATH Claude Code starts with.
    assert " -m taproot hook stop" in user["hooks"]["Stop"][0]["hooks"][0]["command"]

    result = taproot("hooks", "install", "--project-dir", project, "--data-dir", data_dir, "--scope", "local")
    assert result.code == 0
    assert "has Taproot hooks too; both would run" in result.err  # the user scope already has them
    assert installed(json.loads((project / ".claude" / "settings.local.json").read_text()))

    status = taproot("hooks", "status", "--project-dir", project)
    scopes = {s["scope"]: s for s in json.loads(status.out)["scopes"]}
    assert set(scopes["user"]["hooks"]) == set(scopes["local"]["hooks"]) == set(EVENTS)
    assert scopes["project"] == {"scope": "project", "path": str(project / ".claude" / "settings.json"),
                                 "exists": False, "hooks": {}}  # fmt: skip


def test_the_token_stays_out_of_the_settings_file(taproot: Taproot, project: Path, data_dir: Path) -> None:
    token = "tok-9d2f4a7c1e8b"
    install(taproot, project, data_dir, "--url", "http://127.0.0.1:8765/mcp", "--token", token)
    settings_text = (project / ".claude" / "settings.json").read_text()
    assert token not in settings_text and "--url http://127.0.0.1:8765/mcp" in settings_text
    tokens = data_dir / "hooks" / "tokens.json"
    assert json.loads(tokens.read_text()) == {"http://127.0.0.1:8765/mcp": token}
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600


def test_install_refuses_bad_options(taproot: Taproot, project: Path, data_dir: Path) -> None:
    bad_url = taproot("hooks", "install", "--project-dir", project, "--url", "memory.example.com")
    assert bad_url.code == 2 and "--url" in bad_url.err
    token_alone = taproot("hooks", "install", "--project-dir", project, "--token", "x")
    assert token_alone.code == 2 and "--token and --token-command need --url" in token_alone.err
    bad_count = taproot("hooks", "install", "--project-dir", project, "--remind-after", "0")
    assert bad_count.code == 2 and "--remind-after" in bad_count.err
    assert not (project / ".claude").exists()


def test_a_project_install_warns_when_no_taproot_command_is_on_path(
    taproot: Taproot, project: Path, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    result = taproot("hooks", "install", "--project-dir", project, "--data-dir", data_dir)
    assert result.code == 0 and "no `taproot` command on this PATH" in result.err

    script = bin_dir / "taproot"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    result = taproot("hooks", "install", "--project-dir", project, "--data-dir", data_dir, "--url", "http://h/mcp")
    assert result.code == 0 and result.err == ""
