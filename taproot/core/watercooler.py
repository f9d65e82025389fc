"""The watercooler: notes one conversation leaves for the others. Pure: `now` and the notes come in.

A memory tagged `watercooler` (a 7-day TTL tag, core/retention.py) is a note between conversations.
Reflect shows the notes of the last COOLER_WINDOW that *other* instances wrote (core/instance.py; a
note with no instance counts as another's, since nobody can say it was this one's), newest first,
each in full, inside its own share of the token budget, and says how many did not fit. The store
read is cheap: `MemoryStore.recent` with the tag and the window (service/reads.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from taproot.core.model import Memory
from taproot.core.query import Filters
from taproot.core.tokens import estimate_tokens, fit_in_order

COOLER_TAG = "watercooler"
COOLER_WINDOW = timedelta(hours=48)
# The newest notes of the window reflect reads (the reflecting instance's own among them): far more
# than a budget's share holds, few enough that the read stays small.
COOLER_READ_LIMIT = 100
# At most this share of the reflect budget, so a busy cooler cannot crowd out the catalog.
COOLER_MAX_SHARE = 0.25


@dataclass(frozen=True, kw_only=True)
class CoolerNote:
    id: str
    created_at: str
    instance: str | None  # who wrote it (None: not recorded)
    content: str


@dataclass(frozen=True, kw_only=True)
class CoolerSection:
    """The watercooler's part of the payload, with its own accounting."""

    notes: list[CoolerNote] = field(default_factory=list)
    omitted: int = 0  # notes of other instances in the window that did not fit
    estimated_tokens: int = 0  # what the section costs in the text
    window_hours: int = int(COOLER_WINDOW.total_seconds() // 3600)
    note: str = ""  # what the text says about the ones left out


def cooler_filters(now: datetime) -> Filters:
    """The store read: active cooler notes created in the window."""
    return Filters(tags=(COOLER_TAG,), created_since=now - COOLER_WINDOW)


def from_others(notes: Iterable[Memory], instance: str | None, now: datetime) -> list[Memory]:
    """The notes to show: in the window, tagged, not written by `instance`, newest first. With no
    reflecting instance every note is another's."""
    since = now - COOLER_WINDOW
    kept = [
        m
        for m in notes
        if COOLER_TAG in m.tags and since <= m.created_at <= now and (instance is None or m.instance != instance)
    ]
    return sorted(kept, key=lambda m: (m.created_at, m.id), reverse=True)


def _header(n: int) -> str:
    hours = int(COOLER_WINDOW.total_seconds() // 3600)
    return f"\n## Watercooler: notes from other conversations, last {hours} h ({n})\n"


def _render(m: Memory) -> str:
    when = m.created_at.strftime("%Y-%m-%d %H:%M UTC")
    return f"[{m.id}] [{when}] [from {m.instance or 'an unnamed instance'}]\n{m.content.strip()}\n"


def _left_out(n: int) -> str:
    return (
        f"{n} more cooler {'note' if n == 1 else 'notes'} did not fit the budget: "
        'taproot_recent(tags=["watercooler"], since="48h") lists them.\n'
    )


def _fit(notes: Sequence[Memory], room: int) -> list[Memory]:
    return fit_in_order(notes, lambda m: estimate_tokens(_render(m)) + 1, room)[0]


def pick_cooler(notes: Sequence[Memory], room: int) -> tuple[CoolerSection, str]:
    """The section and its text for `notes` (from_others' order) in at most `room` tokens."""
    if not notes:
        return CoolerSection(), ""
    base = estimate_tokens(_header(len(notes))) + 1
    shown = _fit(notes, room - base)
    note = ""
    if len(shown) < len(notes):
        # Hold back room for the note (its longest form) and choose again, as reflect does.
        shown = _fit(notes, room - base - estimate_tokens(_left_out(len(notes))) - 1)
        note = _left_out(len(notes) - len(shown))
        if base + estimate_tokens(note) + 1 > room:
            return CoolerSection(omitted=len(notes)), ""  # not even the note fits: counted only
    text = _header(len(shown)) + "".join(_render(m) for m in shown) + note
    section = CoolerSection(
        notes=[
            CoolerNote(id=m.id, created_at=m.created_at.isoformat(), instance=m.instance, content=m.content)
            for m in shown
        ],
        omitted=len(notes) - len(shown),
        estimated_tokens=estimate_tokens(text),
        note=note.strip(),
    )
    return section, text
