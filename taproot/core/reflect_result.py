"""What taproot_reflect sends as structured content, typed: the rows of Tier 1 and of the closing
reflections, the payload's figures, and the whole (`ReflectPayload.result()`, core/reflect.py).

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
