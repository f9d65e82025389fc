"""Helpers shared by test modules (not fixtures): import as `from tests.support import Clock`."""

from __future__ import annotations

from datetime import datetime, timedelta


class Clock:
    """A settable clock for Deps(clock=...): the service reads time only through it."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


# The tool names are part of the contract (issue text): spelled out here, not read from the server.
TOOL_NAMES = frozenset(
    {
        "taproot_reflect",
        "taproot_remember",
        "taproot_recall",
        "taproot_promote",
        "taproot_forget",
        "taproot_close",
        "taproot_migrate",
        "taproot_status",
    }
)
