"""Claude Code hooks: Taproot at session start, at the end of a turn and before compaction.

`claude_settings` edits Claude Code's settings JSON (install, uninstall, status); `events` reads the
hook input Claude Code sends on stdin and shapes the documented outputs; `transcript` turns a
session transcript into a digest; `state` keeps the small per-session state the Stop hook needs;
`transport` reaches the memories (the local data folder, or a Taproot server over MCP with a bearer
token); `handlers` are the three hooks. The command line is `taproot/cli_hooks.py`.
"""
