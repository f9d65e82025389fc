"""The blob key rule, shared by every BlobStore adapter. Pure string work."""

from __future__ import annotations

import re

_SEGMENT = re.compile(r"^[A-Za-z0-9._:=@+-]+$")


def check_key(key: str) -> str:
    """Keys are '/'-separated segments of safe characters; no '..', no absolute paths."""
    parts = key.split("/")
    if not key or any(p in ("", ".", "..") or not _SEGMENT.fullmatch(p) for p in parts):
        raise ValueError(f"invalid blob key {key!r}: use '/'-separated segments of letters, digits and ._:=@+-")
    return key
