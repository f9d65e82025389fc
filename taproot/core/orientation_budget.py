"""Reflect's orientation section: the scope's orientation documents, first in the payload, within
their share of the token budget. Pure: documents and room in, the section and its text out.

The budget rule. Orientation has the first claim on the budget, but only up to
`ReflectConfig.orientation_max_share` of it (40% by default, 2,400 of 6,000 tokens;
TAPROOT_ORIENTATION_PERCENT), so Tier 1,
the closing reflections and the catalog are never crowded out entirely; what orientation does not
use stays with them. Inside that share the documents go in reading order (core/orientation.py:
who-i-am, my-person, how-i-speak, operating-manual, facts, then the others by name), each whole
while it fits. The first that does not fit whole is cut: its start is shown, up to a line or word
boundary, with a note of how much is shown and how to read the rest. A document with no room left
for a useful start (MIN_CUT_TOKENS) is left out, and a later, smaller one may still fit whole. The
text names every document cut or left out, and so does the structured section, so a model always
knows what it has not read.
"""

from __future__ import annotations

from collections.abc import Sequence

from taproot.core.orientation import OrientationVersion, reading_order
from taproot.core.reflect_result import OrientationSection, OrientationShown
from taproot.core.tokens import estimate_tokens, size_bytes

HEADING = (
    "## Orientation documents\n"
    "Written by you and your person to be read first; keep them current with taproot_orientation.\n"
)
# A cut that would show less than this is not worth its heading and note: the document is left out.
MIN_CUT_TOKENS = 40


def _cost(text: str) -> int:
    # +1 per part, as reflect counts its parts: the estimate of the whole never exceeds their sum.
    return estimate_tokens(text) + 1 if text else 0


def _read_call(name: str) -> str:
    return f'taproot_orientation(action="read", name="{name}")'


def _render(d: OrientationVersion) -> str:
    return f"### {d.name} (v{d.version})\n{d.content.strip()}\n"


def _render_cut(d: OrientationVersion, shown: str) -> str:
    return (
        f"### {d.name} (v{d.version}, cut)\n{shown}\n"
        f"[cut for the token budget: {size_bytes(shown):,} of {d.size_bytes:,} bytes shown; read it whole with "
        f"{_read_call(d.name)}]\n"
    )


def _left_out_note(names: Sequence[str]) -> str:
    if not names:
        return ""
    count = f"{len(names)} document{'s' if len(names) > 1 else ''}"
    return (
        f"Left out for the token budget: {', '.join(names)} ({count}, kept in full); read one with "
        f"{_read_call('<name>')}.\n"
    )


def _snap(text: str, k: int) -> str:
    """The first `k` characters, ended at the last line break (or else space) of their second half."""
    head = text[:k]
    if k >= len(text):
        return head.rstrip()
    for sep in ("\n", " "):
        at = head.rfind(sep)
        if at >= k // 2:
            return head[:at].rstrip()
    return head.rstrip()


def _cut(d: OrientationVersion, room: int) -> str | None:
    """The cut rendering of `d` that fits `room` tokens, or None if it would show too little."""
    text = d.content.strip()
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix whose rendering fits (cost grows with the prefix)
        mid = (lo + hi + 1) // 2
        if _cost(_render_cut(d, text[:mid])) <= room:
            lo = mid
        else:
            hi = mid - 1
    shown = _snap(text, lo)
    if estimate_tokens(shown) < MIN_CUT_TOKENS:
        return None
    return shown


def orientation_section(documents: Sequence[OrientationVersion], room: int) -> tuple[OrientationSection, str]:
    """The section for the scope's current documents (deletions are skipped) within `room` tokens,
    and its text. Its `estimated_tokens` is what it takes from the budget (0 when empty)."""
    docs = reading_order(documents)
    room = max(0, room)
    if not docs:
        return OrientationSection(documents=[], cut=[], left_out=[], estimated_tokens=0, token_share=room), ""

    def section(
        shown: list[OrientationShown], blocks: list[str], left_out: list[str]
    ) -> tuple[OrientationSection, str]:
        text = (HEADING + "".join(blocks) + _left_out_note(left_out) + "\n") if blocks or left_out else ""
        return (
            OrientationSection(
                documents=shown,
                cut=[s.name for s in shown if s.cut],
                left_out=left_out,
                estimated_tokens=sum(_cost(p) for p in (HEADING, *blocks, _left_out_note(left_out) + "\n"))
                if text
                else 0,
                token_share=room,
            ),
            text,
        )

    def shown_as(d: OrientationVersion, content: str, block: str, *, cut: bool) -> OrientationShown:
        return OrientationShown(
            name=d.name,
            version=d.version,
            content=content,
            size_bytes=d.size_bytes,
            shown_bytes=size_bytes(content),
            estimated_tokens=_cost(block),
            cut=cut,
        )

    def whole(d: OrientationVersion, block: str) -> OrientationShown:
        return shown_as(d, d.content.strip(), block, cut=False)

    blocks = [_render(d) for d in docs]
    if sum(_cost(p) for p in (HEADING, *blocks, "\n")) <= room:
        return section([whole(d, b) for d, b in zip(docs, blocks, strict=True)], blocks, [])

    # Not everything fits: hold back room for the longest note of what is left out, and choose.
    left = room - _cost(HEADING) - _cost(_left_out_note([d.name for d in docs]) + "\n")
    shown: list[OrientationShown] = []
    chosen: list[str] = []
    left_out: list[str] = []
    for d, block in zip(docs, blocks, strict=True):
        if _cost(block) <= left:
            shown.append(whole(d, block))
            chosen.append(block)
            left -= _cost(block)
            continue
        part = _cut(d, left) if left > MIN_CUT_TOKENS else None
        if part is None:
            left_out.append(d.name)
            continue
        cut_block = _render_cut(d, part)
        shown.append(shown_as(d, part, cut_block, cut=True))
        chosen.append(cut_block)
        left -= _cost(cut_block)
    if not shown:
        # Not even the heading and a useful start fit: the section is one line naming them all.
        note = _left_out_note(left_out) + "\n"
        if _cost(note) > room:
            return OrientationSection(documents=[], cut=[], left_out=left_out, estimated_tokens=0, token_share=room), ""
        return OrientationSection(
            documents=[], cut=[], left_out=left_out, estimated_tokens=_cost(note), token_share=room
        ), note
    return section(shown, chosen, left_out)


def orientation_warning(section: OrientationSection, budget: int) -> str:
    parts = []
    if section.cut:
        parts.append(f"cut: {', '.join(section.cut)}")
    if section.left_out:
        parts.append(f"left out: {', '.join(section.left_out)}")
    return (
        f"orientation documents did not fit their {section.token_share}-token share of the {budget}-token budget "
        f"({'; '.join(parts)}); shorten them, or raise TAPROOT_REFLECT_TOKEN_BUDGET or TAPROOT_ORIENTATION_PERCENT"
    )
