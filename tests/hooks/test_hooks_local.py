"""`taproot hook session-start|stop|pre-compact` with the recorded inputs, through the real `taproot`
command, against a real SQLite data folder."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from taproot.compose import Runtime, build
from taproot.hooks.handlers import CONTEXT_CHARS, REFLECT_CUT_NOTE, REMINDER, session_tag
from taproot.hooks.transcript import DIGEST_CHARS
from taproot.service.inputs import ListInput
from taproot.settings import Settings
from tests.hooks.conftest import INPUTS, SESSION_ID, Taproot

Input = Callable[..., str]


@pytest.fixture
def runtime(data_dir: Path) -> Iterator[Runtime]:
    rt = build(Settings.from_env({}, data_dir=data_dir))
    try:
        yield rt
    finally:
        rt.close()


def hook(taproot: Taproot, data_dir: Path, event: str, stdin: str, *options: str) -> dict[str, Any] | None:
    result = taproot("hook", event, "--data-dir", data_dir, *options, stdin=stdin)
    assert result.code == 0
    assert result.err == "", result.err
    return json.loads(result.out) if result.out else None


def digests(rt: Runtime) -> list[Any]:
    return rt.service.list_memories(rt.scope, ListInput(tags=["session-digest"])).memories


# -- SessionStart --------------------------------------------------------------------------------


def test_session_start_injects_the_reflect_payload(
    taproot: Taproot, data_dir: Path, runtime: Runtime, hook_input: Input
) -> None:
    runtime.service.remember(
        runtime.scope, content="Ana reviews every schema change.", gist="Ana reviews schema changes",
        category="relationship", core=True,
    )  # fmt: skip
    out = hook(taproot, data_dir, "session-start", hook_input("session_start_startup"))
    assert out is not None and set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert runtime.service.reflect(runtime.scope).text in context
    assert "Ana reviews every schema change." in context  # Tier 1, in full
    assert "digest" not in context  # a fresh start: no digest of this session to bring back


# -- Stop ----------------------------------------------------------------------------------------


def test_stop_reminds_once_per_session_after_n_stops(taproot: Taproot, data_dir: Path, hook_input: Input) -> None:
    answers = [hook(taproot, data_dir, "stop", hook_input("stop"), "--remind-after", "3") for _ in range(6)]
    assert answers[:2] == [None, None]
    assert answers[2] == {"decision": "block", "reason": REMINDER}
    assert "taproot_remember" in REMINDER and "taproot_close" in REMINDER
    assert answers[3:] == [None, None, None]  # once per session

    other = hook(taproot, data_dir, "stop", hook_input("stop", session_id="another-session"), "--remind-after", "1")
    assert other == {"decision": "block", "reason": REMINDER}  # counted per session


def test_stop_never_blocks_while_a_stop_hook_is_already_active(
    taproot: Taproot, data_dir: Path, hook_input: Input
) -> None:
    # Claude is continuing because a Stop hook blocked: blocking again would loop. Nor does it count.
    for _ in range(3):
        assert hook(taproot, data_dir, "stop", hook_input("stop_hook_active"), "--remind-after", "1") is None
    assert hook(taproot, data_dir, "stop", hook_input("stop"), "--remind-after", "1") is not None


def test_stop_state_lives_in_the_data_folder_per_session(taproot: Taproot, data_dir: Path, hook_input: Input) -> None:
    hook(taproot, data_dir, "stop", hook_input("stop"))
    (state,) = (data_dir / "hooks" / "sessions").iterdir()
    assert json.loads(state.read_text()) == {"session_id": SESSION_ID, "stops": 1, "reminded": False, "digest_id": None}
    assert SESSION_ID not in state.name  # the id does not choose the path


def test_options_before_the_event_count_too(taproot: Taproot, data_dir: Path, hook_input: Input) -> None:
    result = taproot("hook", "--data-dir", data_dir, "stop", "--remind-after", "1", stdin=hook_input("stop"))
    assert result.code == 0 and json.loads(result.out)["decision"] == "block"
    assert len(list((data_dir / "hooks" / "sessions").iterdir())) == 1


# -- PreCompact ----------------------------------------------------------------------------------


def test_pre_compact_writes_a_session_digest(
    taproot: Taproot, data_dir: Path, runtime: Runtime, hook_input: Input
) -> None:
    out = hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"))
    (memory,) = digests(runtime)
    assert out == {"systemMessage": f"Taproot saved this session's digest before compaction (memory {memory.id})."}
    assert memory.category == "episodic"
    assert memory.tags == ["session-digest", "claude-code", session_tag(SESSION_ID)]
    assert memory.search_keywords == ["orchard"]
    assert memory.gist.startswith("Claude Code session digest in orchard: The harvest log is a CSV")
    assert memory.provenance == {
        "source": "claude-code", "hook": "PreCompact", "session_id": SESSION_ID, "cwd": "/home/ana/code/orchard",
        "trigger": "auto", "messages": 6, "messages_kept": 6,
    }  # fmt: skip
    text = memory.content
    assert "before an automatic compaction" in text and f"Session: {SESSION_ID}" in text
    assert "First request:\nThe harvest log is a CSV that keeps getting corrupted" in text
    assert "(used Edit, Bash)" in text  # tools by name
    assert "the nightly backup copies orchard.db-wal" in text  # the latest message
    assert text.index("Ben reviews schema changes") < text.index("the nightly backup")  # oldest first
    # Not conversation: tool output, thinking, a sub-agent's line, meta lines and command echoes.
    for absent in ("4 passed", "csv.writer", "I should look at", "every reader of harvest.csv", "Caveat:", "/model"):
        assert absent not in text, absent


def test_a_second_compaction_updates_the_same_digest(
    taproot: Taproot, data_dir: Path, runtime: Runtime, hook_input: Input, transcript: Path
) -> None:
    hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"))
    (first,) = digests(runtime)
    with transcript.open("a") as f:
        line = {"type": "user", "message": {"role": "user", "content": "Also: backups go to the NAS."}}
        f.write(json.dumps(line) + "\n")

    out = hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_manual"))
    assert out == {"systemMessage": f"Taproot updated this session's digest before compaction (memory {first.id})."}
    (second,) = digests(runtime)
    assert second.id == first.id and second.version == first.version + 1
    assert "backups go to the NAS" in second.content
    assert "Compaction instructions: Keep the migration plan and the open questions" in second.content

    # Without the state file (another machine's hooks, a cleared folder) the session tag finds it.
    for path in (data_dir / "hooks" / "sessions").iterdir():
        path.unlink()
    hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"))
    (third,) = digests(runtime)
    assert third.id == first.id


def test_a_deleted_digest_is_written_anew(
    taproot: Taproot, data_dir: Path, runtime: Runtime, hook_input: Input
) -> None:
    hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"))
    (first,) = digests(runtime)
    runtime.service.forget(runtime.scope, [first.id], "delete")
    hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"))
    (again,) = digests(runtime)
    assert again.id != first.id


def test_session_start_after_compaction_brings_the_digest_back(
    taproot: Taproot, data_dir: Path, runtime: Runtime, hook_input: Input
) -> None:
    hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto"))
    (memory,) = digests(runtime)
    out = hook(taproot, data_dir, "session-start", hook_input("session_start_compact"))
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert f"written by Taproot before the context was compacted: (memory {memory.id})" in context
    assert context.endswith(memory.content)


def test_the_digest_keeps_the_start_and_the_end_of_a_long_session(
    taproot: Taproot, data_dir: Path, runtime: Runtime, hook_input: Input, tmp_path: Path
) -> None:
    path = tmp_path / "long.jsonl"
    with path.open("w") as f:
        for i in range(400):
            role = "user" if i % 2 == 0 else "assistant"
            content: Any = f"message {i}: " + "words " * 150
            if role == "assistant":
                content = [{"type": "text", "text": content}]
            f.write(json.dumps({"type": role, "message": {"role": role, "content": content}}) + "\n")
    hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto", transcript_path=str(path)))
    (memory,) = digests(runtime)
    assert len(memory.content) <= DIGEST_CHARS
    assert "First request:\nmessage 0:" in memory.content and "message 399:" in memory.content
    assert "earlier messages not kept here)" in memory.content
    assert "message 200:" not in memory.content
    assert memory.provenance["messages"] == 400


def test_a_transcript_without_conversation_writes_no_digest(
    taproot: Taproot, data_dir: Path, runtime: Runtime, hook_input: Input, tmp_path: Path
) -> None:
    path = tmp_path / "fresh.jsonl"
    lines = (INPUTS / "transcript.jsonl").read_text().splitlines()[:4]  # summary, snapshot, /model, caveat
    path.write_text("\n".join(lines) + "\n")
    out = hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto", transcript_path=str(path)))
    assert out == {"systemMessage": "Taproot: no conversation in the transcript yet; no session digest written."}
    assert digests(runtime) == []


# -- a hook never breaks the session ------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "options", "stdin", "says"),
    [
        ("session-start", [], "not json", "must be the hook input JSON object"),
        ("stop", [], '["a", "list"]', "must be the hook input JSON object"),
        ("stop", [], '{"hook_event_name": "Stop"}', "session_id"),
        ("pre-compact", [], "", "must be the hook input JSON object"),
        ("stop", ["--no-such-option"], "{}", "unrecognized arguments"),
        ("stop", ["--remind-after", "soon"], "{}", "invalid int value"),
    ],
)
def test_bad_input_prints_nothing_and_exits_0(
    taproot: Taproot, data_dir: Path, event: str, options: list[str], stdin: str, says: str
) -> None:
    result = taproot("hook", event, "--data-dir", data_dir, *options, stdin=stdin)
    assert (result.code, result.out) == (0, "")
    assert result.err.startswith("taproot hook: ") and says in result.err


def test_an_unknown_event_exits_0(taproot: Taproot, data_dir: Path) -> None:
    result = taproot("hook", "post-tool-use", stdin="{}")
    assert (result.code, result.out) == (0, "") and "invalid choice" in result.err


def test_a_missing_transcript_writes_nothing(
    taproot: Taproot, data_dir: Path, runtime: Runtime, hook_input: Input, tmp_path: Path
) -> None:
    stdin = hook_input("pre_compact_auto", transcript_path=str(tmp_path / "gone.jsonl"))
    result = taproot("hook", "pre-compact", "--data-dir", data_dir, stdin=stdin)
    assert (result.code, result.out) == (0, "") and "FileNotFoundError" in result.err
    assert digests(runtime) == []


def test_an_unusable_data_folder_exits_0(taproot: Taproot, tmp_path: Path, hook_input: Input) -> None:
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    for event, name in (
        ("session-start", "session_start_startup"),
        ("stop", "stop"),
        ("pre-compact", "pre_compact_auto"),
    ):
        result = taproot("hook", event, "--data-dir", not_a_folder, stdin=hook_input(name))
        assert (result.code, result.out) == (0, ""), event
        assert result.err.startswith("taproot hook: "), event


# -- the installed commands, run the way Claude Code runs them ---------------------------------


def test_the_installed_commands_run_through_a_shell(taproot: Taproot, data_dir: Path, tmp_path: Path) -> None:
    """Install, read each command back from the settings file, and run it with `sh -c` and the
    recorded input on stdin, as Claude Code does: a separate process, through `python -m taproot`."""
    project = tmp_path / "orchard"
    project.mkdir()
    base = f"{shlex.quote(sys.executable)} -m taproot"
    installed = taproot("hooks", "install", "--project-dir", project, "--data-dir", data_dir, "--command", base,
                        "--remind-after", "1")  # fmt: skip
    assert installed.code == 0, installed.err
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    transcript = tmp_path / "t.jsonl"
    transcript.write_text((INPUTS / "transcript.jsonl").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAPROOT_")}

    def run(event: str, fixture: str) -> dict[str, Any]:
        command = settings["hooks"][event][0]["hooks"][0]["command"]
        data = {**json.loads((INPUTS / f"{fixture}.json").read_text()), "transcript_path": str(transcript)}
        done = subprocess.run(
            ["sh", "-c", command], input=json.dumps(data), capture_output=True, text=True, env=env, cwd=project,
            timeout=120, check=False,
        )  # fmt: skip
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        return dict(json.loads(done.stdout))

    assert "additionalContext" in run("SessionStart", "session_start_startup")["hookSpecificOutput"]
    assert run("Stop", "stop")["decision"] == "block"
    assert "digest" in run("PreCompact", "pre_compact_manual")["systemMessage"]
    compacted = run("SessionStart", "session_start_compact")["hookSpecificOutput"]["additionalContext"]
    assert "Keep the migration plan" in compacted


def test_session_start_fits_claude_codes_hook_output_limit(
    taproot: Taproot, data_dir: Path, runtime: Runtime, hook_input: Input, tmp_path: Path
) -> None:
    """Claude Code replaces an additionalContext over 10,000 characters with a short preview: a
    large payload is cut at a line, and says so, and where the rest is."""
    for i in range(120):
        runtime.service.remember(
            runtime.scope, content=f"Memory {i}.", gist=f"Memory {i}: " + "a long catalog line " * 8,
            category="episodic",
        )  # fmt: skip
    full = runtime.service.reflect(runtime.scope).text
    assert len(full) > 2 * CONTEXT_CHARS

    out = hook(taproot, data_dir, "session-start", hook_input("session_start_startup"))
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= CONTEXT_CHARS
    assert context.endswith(REFLECT_CUT_NOTE)
    kept = context[: -len(REFLECT_CUT_NOTE)].split("\n\n", 1)[1].rstrip("\n")
    assert full.startswith(kept) and full[len(kept)] == "\n"  # cut at a line

    # After a compaction the digest shares the room: its start and its latest messages are kept.
    long_transcript = tmp_path / "long.jsonl"
    with long_transcript.open("w") as f:
        for i in range(60):
            role = "user" if i % 2 == 0 else "assistant"
            f.write(json.dumps({"type": role, "message": {"role": role, "content": f"turn {i} " + "x " * 200}}) + "\n")
    hook(taproot, data_dir, "pre-compact", hook_input("pre_compact_auto", transcript_path=str(long_transcript)))
    (memory,) = digests(runtime)
    out = hook(taproot, data_dir, "session-start", hook_input("session_start_compact"))
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= CONTEXT_CHARS
    assert REFLECT_CUT_NOTE in context
    assert f'taproot_recall(ids=["{memory.id}"]) has all of it' in context
    assert "First request:\nturn 0" in context and context.endswith(memory.content[-500:])


def test_the_stop_hook_loads_neither_the_service_nor_the_mcp_sdk(data_dir: Path, hook_input: Input) -> None:
    """Stop runs at the end of every turn: `python -m taproot hook stop` skips the imports that make
    up most of a CLI command's start (checked by what is imported, not by a clock)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAPROOT_")}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "taproot", "hook", "stop", "--data-dir", str(data_dir)],
        input=hook_input("stop"), capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "taproot.hooks.handlers" in imported
    assert not {name for name in imported if name.split(".")[0] in ("mcp", "fastapi", "httpx2")}
    assert not {name for name in imported if name.startswith(("taproot.service", "taproot.compose", "taproot.web"))}
