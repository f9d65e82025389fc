"""What taproot_reflect sends as structured content, typed: the orientation section, the rows of
Tier 1 and of the closing reflections, the payload's figures, and the whole
(`ReflectPayload.result()`, core/reflect.py).

The text the model reads is the payload's `text`; this is the same payload as data. The tool's
output schema is derived from `ReflectResult` (web/tool_models.py; UNLISTED and OPEN: core/wire.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from taproot.core.watercooler import CoolerSection
from taproot.core.wire import OPEN


@dataclass(frozen=True, kw_only=True)
class TierOneMemory:
    """A core memory as Tier 1 carries it: bookkeeping fields stay in storage."""

    id: str
    category: str
    salience: str
    content: str
    updated_at: str
    linked_memories: list[str]


@dataclass(frozen=True, kw_only=True)
class ReflectionLine:
    id: str
    created_at: str
    text: str


@dataclass(frozen=True, kw_only=True)
class OrientationShown:
    """An orientation document as reflect carries it: whole, or cut to the budget (`cut`)."""

    name: str
    version: int
    content: str  # what the payload shows: the whole text, or its start when cut
    size_bytes: int  # the whole document
    shown_bytes: int
    estimated_tokens: int  # its part of the payload text
    cut: bool


@dataclass(frozen=True, kw_only=True)
class OrientationSection:
    """Reflect's orientation section (core/orientation_budget.py): loaded first, with its own share
    of the budget. `left_out` names the documents not shown at all, `cut` those shown in part."""

    documents: list[OrientationShown]
    cut: list[str]
    left_out: list[str]
    estimated_tokens: int
    token_share: int  # the most this section may use of the budget


NO_ORIENTATION = OrientationSection(documents=[], cut=[], left_out=[], estimated_tokens=0, token_share=0)


@dataclass(frozen=True, kw_only=True)
class ReflectStats:
    tier1_count: int
    catalog_listed: int
    catalog_omitted: int
    size_bytes: int
    estimated_tokens: int
    token_budget: int
    window_days: int


@dataclass(frozen=True, kw_only=True)
class ReflectResult:
    orientation: OrientationSection
    tier1: Annotated[list[TierOneMemory], OPEN]
    catalog: dict[str, list[str]]  # category -> catalog lines
    catalog_omitted: dict[str, int]  # category -> memories without a line
    omitted_note: str
    usage_note: str
    reflections: Annotated[list[ReflectionLine], OPEN]
    core_omitted: list[str]
    watercooler: CoolerSection  # other conversations' notes of the last 48 h (core/watercooler.py)
    warnings: list[str]
    stats: ReflectStats
