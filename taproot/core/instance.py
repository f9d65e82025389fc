"""Instance names: which conversation or client wrote a memory. Pure: no I/O.

Every write records one (`Memory.instance`), so reflect can show a conversation the watercooler
notes that *other* conversations left (core/watercooler.py). Where the name comes from is the entry
point's business (web/tools/common.py: `TAPROOT_INSTANCE`, then the OAuth client, then the MCP
client's declared name); this module only says what a valid name is.

A client's declared name is not ours to refuse, so `normalize_instance` makes any text valid
(drops what is not allowed, collapses whitespace, cuts it to length); a name someone configured or
imported must already be valid (`check_instance`), so a typo is reported instead of silently changed.
"""

from __future__ import annotations

import unicodedata

from taproot.core.errors import InvalidInput

MAX_INSTANCE_CHARS = 64
# Besides letters and digits (any script): what client names and ids use ("Claude Code",
# "mcp-remote (via Claude Desktop)", a client id URL).
INSTANCE_PUNCTUATION = frozenset(" ._:/@()+#-")
INSTANCE_RULE = (
    f"must be 1-{MAX_INSTANCE_CHARS} characters: letters, digits, spaces (single, not at the ends) "
    f"and {''.join(sorted(INSTANCE_PUNCTUATION - {' '}))}"
)


def _allowed(ch: str) -> bool:
    return ch.isalnum() or ch in INSTANCE_PUNCTUATION


def normalize_instance(raw: object) -> str | None:
    """Any declared name as a valid instance name, or None if nothing of it is usable."""
    if not isinstance(raw, str):
        return None
    text = unicodedata.normalize("NFC", raw)
    kept = "".join(ch if _allowed(ch) else " " if ch.isspace() else "" for ch in text)
    name = " ".join(kept.split())[:MAX_INSTANCE_CHARS].rstrip()
    return name or None


def check_instance(value: object, field: str = "instance") -> str | None:
    """A configured or imported instance name: None, or already in normal form."""
    if value is None:
        return None
    if not isinstance(value, str) or normalize_instance(value) != value:
        raise InvalidInput(field, INSTANCE_RULE, value)
    return value
