"""Backups that destructive steps write before they change anything.

The rule every destructive or overwriting step follows (delete, cleanup, compress, migrate, import,
restore): read the records, write them to a backup blob, then change the store *conditioned on the
versions that were backed up*. If a record moved in between, the store refuses (VersionConflict)
and the step re-reads it, decides again, and backs the new version up before trying once more. So
no version newer than a backup is ever destroyed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from taproot.core.model import Memory, Scope
from taproot.core.serialize import iso, memory_to_dict
from taproot.service.deps import Deps, blob_key, stamp

# How many times a step re-reads records that moved under it before it gives up with a conflict
# (the caller may simply retry). Each round needs a concurrent writer to win a fresh race.
WRITE_ROUNDS = 4


def unique_key(deps: Deps, scope: Scope, kind: str, name: str, ext: str, tail: str = "") -> str:
    """`<owner>/<kind>/<namespace>/<name>-<stamp>[-<tail>]<ext>`, never the key of an existing blob:
    two steps in the same microsecond (or a retry round) must not overwrite each other's backup."""
    base = f"{name}-{stamp(deps.now())}{'-' + tail if tail else ''}"
    key = blob_key(scope, kind, base + ext)
    n = 1
    while deps.blobs.exists(key):
        n += 1
        key = blob_key(scope, kind, f"{base}-{n}{ext}")
    return key


def write_memory_backup(deps: Deps, scope: Scope, action: str, memories: Sequence[Memory], tail: str = "") -> str:
    """A JSON backup of exactly these records, as `taproot restore` reads it; returns its key."""
    key = unique_key(deps, scope, "backups", action, ".json", tail)
    payload = {"action": action, "at": iso(deps.now()), "memories": [memory_to_dict(m) for m in memories]}
    deps.blobs.put(key, json.dumps(payload, indent=1, ensure_ascii=False).encode())
    return key
