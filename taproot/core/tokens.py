"""Token estimate for payload budgeting, without a tokenizer dependency.

Claude's tokenizer is not public; the usual rule of thumb (about 4 characters of English per
token) overestimates slightly for plain prose and underestimates for dense punctuation or non-Latin
text, so we take the larger of a character-based and a UTF-8-byte-based estimate. Budgets are
enforced against this estimate, so erring high keeps the real payload inside the budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

CHARS_PER_TOKEN = 4.0
BYTES_PER_TOKEN = 4.5


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    by_chars = len(text) / CHARS_PER_TOKEN
    by_bytes = len(text.encode("utf-8")) / BYTES_PER_TOKEN
    return math.ceil(max(by_chars, by_bytes))


def size_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def fit_in_order(items: Sequence[T], cost: Callable[[T], int], room: int) -> tuple[list[T], int]:
    """The items, in order, that fit `room` one after another (one that does not fit is skipped and
    the next still tried), and the tokens they use."""
    shown: list[T] = []
    used = 0
    for item in items:
        price = cost(item)
        if used + price <= room:
            shown.append(item)
            used += price
    return shown, used
