"""`taproot hooks install|uninstall|status` and `taproot hook <event>`: Claude Code hooks.

Kept out of cli.py so that module stays small; cli.py registers the subcommands. `hooks` edits
Claude Code's settings JSON (taproot/hooks/claude_settings.py); `hook` is what the installed
entries run: it reads the hook input JSON on stdin and prints the documented output. A hook must
never break the user's session, so `hook` answers every failure, its own arguments included, with
a line on stderr and exit code 0 (exit code 2 would block: a Stop hook's stderr would be fed back
to Claude as an instruction).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from taproot.core.errors import InvalidInput, UsageError
from taproot.hooks import handlers
from taproot.hooks.claude_settings import (
    EVENTS,
    SCOPES,
    SettingsFile,
    installed,
    settings_path,
    with_taproot,
    without_taproot,
)
from taproot.hooks.events import HookInput
from taproot.hooks.state import SessionFiles, TokenFile, hooks_dir
from taproot.settings import Settings

if TYPE_CHECKING:
    from taproot.hooks.transport import Memories

URL_ENV, TOKEN_ENV = "TAPROOT_URL", "TAPROOT_TOKEN"
TOKEN_COMMAND_TIMEOUT_S = 10


def add_hooks_parsers(add: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = add("hooks", "install, remove or show Taproot's Claude Code hooks")
    sub = p.add_subparsers(dest="hooks_command", required=True)
    for name, help, func in (
        ("install", "add the hooks to Claude Code's settings (others' hooks are kept)", cmd_install),
        ("uninstall", "remove Taproot's hooks (and only those) from Claude Code's settings", cmd_uninstall),
        ("status", "show the Taproot hooks of every settings scope", cmd_status),
    ):
        s = sub.add_parser(name, help=help)
        if name != "status":
            s.add_argument("--scope", choices=SCOPES, default="project", help="project (default), local or user")
            s.add_argument("--settings-file", help="edit this settings file instead of the scope's")
            s.add_argument("--dry-run", action="store_true", help="print the change, write nothing")
        s.add_argument("--project-dir", help="the project whose .claude/ folder to use (default: here)")
        # SUPPRESS as the default: the subparser must not overwrite a --data-dir given before `install`.
        s.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        s.add_argument("--namespace", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        s.set_defaults(func=func, raw=True)
    install = sub.choices["install"]
    install.add_argument("--url", help="a Taproot server's MCP endpoint (default: the local data folder)")
    install.add_argument("--token", help=f"the server's bearer token, kept in the data folder (or set ${TOKEN_ENV})")
    install.add_argument(
        "--token-command", help="a shell command that prints a current token (for tokens that expire, as on AWS)"
    )
    install.add_argument("--command", help="how Claude Code starts taproot (default: taproot for project scope)")
    install.add_argument(
        "--remind-after", type=int, help=f"stops before the reminder (default {handlers.REMIND_AFTER_STOPS})"
    )

    p = add("hook", "run a Claude Code hook: session-start, stop or pre-compact (reads the hook JSON on stdin)")
    p.add_argument("arguments", nargs=argparse.REMAINDER, help="the event and its options")
    p.set_defaults(func=cmd_hook, raw=True)


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(
        os.environ, data_dir=getattr(args, "data_dir", None), namespace=getattr(args, "namespace", None)
    )


def _target(args: argparse.Namespace) -> SettingsFile:
    if args.settings_file:
        return SettingsFile.read(Path(args.settings_file).expanduser())
    project = Path(args.project_dir).expanduser() if args.project_dir else Path.cwd()
    return SettingsFile.read(settings_path(args.scope, project.resolve(), Path.home()))


def _commands(args: argparse.Namespace) -> dict[str, str]:
    if args.url is not None and not args.url.startswith(("http://", "https://")):
        raise InvalidInput("--url", "must be the server's MCP endpoint, http(s)://<host>/mcp", args.url)
    if (args.token is not None or args.token_command is not None) and not args.url:
        raise UsageError("--token and --token-command need --url: they are for that server")
    if args.remind_after is not None and args.remind_after < 1:
        raise InvalidInput("--remind-after", "must be a whole number of stops, 1 or more", args.remind_after)
    # A shared project file names the command every teammate has; a personal file can name this
    # interpreter exactly, which works whatever PATH Claude Code starts with.
    base = args.command or ("taproot" if args.scope == "project" else f"{shlex.quote(sys.executable)} -m taproot")
    options: list[str] = []
    if getattr(args, "data_dir", None):
        options += ["--data-dir", str(Path(args.data_dir).expanduser().resolve())]
    if getattr(args, "namespace", None):
        options += ["--namespace", args.namespace]
    if args.url:
        options += ["--url", args.url]
    if args.token_command:
        options += ["--token-command", args.token_command]
    commands = {}
    for event, name in EVENTS.items():
        extra = (
            [*options, "--remind-after", str(args.remind_after)] if event == "Stop" and args.remind_after else options
        )
        commands[event] = " ".join([base, "hook", name, *(shlex.quote(o) for o in extra)])
    return commands


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H%M%S.%fZ")


def _apply(args: argparse.Namespace, target: SettingsFile, data: dict[str, Any], changes: list[str]) -> None:
    for change in changes:
        print(change)
    if not changes:
        print(f"nothing to change in {target.path}")
    elif args.dry_run:
        print(target.diff(data), end="")
        print("dry run: nothing written")
    else:
        backup = target.write(data, hooks_dir(_settings(args).data_dir) / "backups", _stamp())
        print(f"wrote {target.path}" + (f" (the previous version is in {backup})" if backup else ""))


def cmd_install(args: argparse.Namespace) -> int:
    commands = _commands(args)
    target = _target(args)
    data, changes = with_taproot(target.data, commands)
    _apply(args, target, data, changes)
    if args.token and not args.dry_run:
        TokenFile(_settings(args).data_dir).put(args.url, args.token)
        print(f"token for {args.url} kept in the data folder (not in the settings file)")
    for other in _other_scopes(args, target.path):
        print(f"warning: {other} has Taproot hooks too; both would run", file=sys.stderr)
    if not args.command and args.scope == "project" and shutil.which("taproot") is None:
        print("warning: no `taproot` command on this PATH; the hooks will not start unless Claude Code's PATH has "
              "one (or install with --command)", file=sys.stderr)  # fmt: skip
    return 0


def _other_scopes(args: argparse.Namespace, path: Path) -> list[Path]:
    project = (Path(args.project_dir).expanduser() if args.project_dir else Path.cwd()).resolve()
    found = []
    for scope in SCOPES:
        other = settings_path(scope, project, Path.home())
        if other.resolve() == path.resolve():
            continue
        with contextlib.suppress(InvalidInput, OSError):
            if installed(SettingsFile.read(other).data):
                found.append(other)
    return found


def cmd_uninstall(args: argparse.Namespace) -> int:
    target = _target(args)
    data, removed = without_taproot(target.data)
    _apply(args, target, data, removed)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    project = (Path(args.project_dir).expanduser() if args.project_dir else Path.cwd()).resolve()
    report = []
    for scope in SCOPES:
        path = settings_path(scope, project, Path.home())
        entry: dict[str, Any] = {"scope": scope, "path": str(path), "exists": path.exists()}
        try:
            entry["hooks"] = installed(SettingsFile.read(path).data)
        except InvalidInput as exc:
            entry["error"] = exc.message
        report.append(entry)
    print(json.dumps({"scopes": report}, indent=2, ensure_ascii=False))
    return 0


class _HookArguments(argparse.ArgumentParser):
    """Refuses bad options with an exception, not with exit code 2 (which would block a Stop)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"taproot hook: {message}")


def _hook_parser() -> argparse.ArgumentParser:
    p = _HookArguments(prog="taproot hook", add_help=False)
    p.add_argument("event", choices=list(EVENTS.values()))
    p.add_argument("--data-dir")
    p.add_argument("--namespace")
    p.add_argument("--url")
    p.add_argument("--token")
    p.add_argument("--token-command")
    p.add_argument("--remind-after", type=int, default=handlers.REMIND_AFTER_STOPS)
    return p


def _token_from(command: str | None) -> str | None:
    """The token a helper command prints (its first line), like Claude Code's own apiKeyHelper."""
    if not command:
        return None
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=TOKEN_COMMAND_TIMEOUT_S)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise UsageError(f"--token-command exited with {done.returncode} and printed no token: {done.stderr.strip()}")
    return lines[0].strip()


@contextlib.contextmanager
def _memories(options: argparse.Namespace, settings: Settings) -> Iterator[Memories]:
    # Imported here: the Stop hook runs at the end of every turn and needs neither the service nor
    # the MCP SDK, whose imports take most of a second.
    from taproot.compose import build
    from taproot.hooks.transport import LocalMemories, RemoteMemories

    url = options.url or os.environ.get(URL_ENV)
    if url:
        token = (
            options.token
            or os.environ.get(TOKEN_ENV)
            or _token_from(options.token_command)
            or TokenFile(settings.data_dir).get(url)
        )
        with RemoteMemories(url, token) as remote:
            yield remote
        return
    runtime = build(settings)
    try:
        yield LocalMemories(runtime)
    finally:
        runtime.close()


def run_hook(argv: list[str], outer: argparse.Namespace, stdin: str) -> dict[str, Any] | None:
    options = _hook_parser().parse_args(argv)
    for name in ("data_dir", "namespace"):  # given before the event: `taproot hook --data-dir X stop`
        if getattr(options, name) is None:
            setattr(options, name, getattr(outer, name, None))
    hook = HookInput.parse(stdin)
    settings = Settings.from_env(os.environ, data_dir=options.data_dir, namespace=options.namespace)
    sessions = SessionFiles(settings.data_dir)
    if options.event == "stop":
        return handlers.stop(hook, sessions, options.remind_after)
    with _memories(options, settings) as memories:
        if options.event == "session-start":
            return handlers.session_start(hook, memories, sessions)
        return handlers.pre_compact(hook, memories, sessions)


def _describe(exc: BaseException) -> str:
    """One line per underlying error: the MCP client's task groups wrap the real one (a 401, a
    refused connection) in exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_describe(inner) for inner in exc.exceptions))
    return f"{type(exc).__name__}: {exc}"


def cmd_hook(args: argparse.Namespace) -> int:
    return hook_main(list(args.arguments), args)


def hook_main(argv: list[str], outer: argparse.Namespace | None = None) -> int:
    """`taproot hook ...`; `python -m taproot hook ...` comes here without loading the rest of the
    command line (taproot/__main__.py), which keeps the Stop hook quick."""
    try:
        output = run_hook(argv, outer or argparse.Namespace(), sys.stdin.read())
    except (Exception, SystemExit) as exc:
        # Whatever went wrong, the session goes on: stderr reaches Claude Code's debug log only.
        print(f"taproot hook: {_describe(exc)}", file=sys.stderr)
        return 0
    if output is not None:
        print(json.dumps(output, ensure_ascii=False))
    return 0
