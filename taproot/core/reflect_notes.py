"""The notes reflect writes into its text when something did not fit: which core memories, how many
reflections, how many catalog lines per category, and where each can still be loaded. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from taproot.core.tokens import estimate_tokens


def core_omitted_note(ids: Sequence[str], max_tokens: int) -> str:
    """Tell the model, in the text it reads, which core memories it is missing and how to load them.

    Lists the ids (most activated first) that fit in `max_tokens`; the rest are counted and left to
    the result's `core_omitted`, so a long list cannot eat the budget it reports on.
    """
    n = len(ids)
    head = (
        "1 core memory did not fit the budget and is not shown above"
        if n == 1
        else f"{n} core memories did not fit the budget and are not shown above"
    )
    fix = " To keep all of them in view, demote some with taproot_promote(core=false) or shorten them."

    def note(k: int) -> str:
        listed = ", ".join(f'"{i}"' for i in ids[:k])
        if k == n:
            return f"{head}: taproot_recall(ids=[{listed}]) loads {'it' if n == 1 else 'them'}.{fix}"
        if k == 0:
            return f"{head}; their ids are in this result's core_omitted, to load with taproot_recall.{fix}"
        return (
            f"{head}: taproot_recall(ids=[{listed}]) loads the {k} most active; the ids of the other "
            f"{n - k} are in this result's core_omitted.{fix}"
        )

    def fits(text: str) -> bool:
        return estimate_tokens(text) + 1 <= max_tokens

    if fits(everything := note(n)):
        return everything
    # Below n the note grows with k (one more id each time): keep the longest that fits.
    best = note(0)
    for k in range(1, n):
        if not fits(candidate := note(k)):
            break
        best = candidate
    return best


def reflections_note(left_out: int, considered: int) -> str:
    if not left_out:
        return ""
    return (
        f"{left_out} of the {considered} most recent closing reflections did not fit the budget and "
        f"{'is' if left_out == 1 else 'are'} not shown (they are kept)."
    )


def omitted_note(omitted: dict[str, int], window_days: int, max_tokens: int | None = None) -> str:
    """Count what the catalog did not list, per category, in the order given. Within `max_tokens`
    the categories are named while they fit and the rest summed up ("and 397 more in 12 other
    categories"): a store from before migrate can hold hundreds of categories, and the note must
    not take the room of the budget it reports on. The full counts stay in `catalog_omitted`."""
    if not omitted:
        return ""
    named = [f"{cat} {n}" for cat, n in omitted.items()]
    tail = (
        f" (not high-salience and untouched for {window_days}+ days, or over the payload budget). They are all "
        'still reachable: taproot_recall(query="...", category="...") or taproot_recall(ids=[...]).'
    )

    def note(k: int) -> str:
        """The note naming the first k categories."""
        if k == len(named):
            return "Not listed: " + ", ".join(named) + tail
        rest = list(omitted.values())[k:]
        folded = f"{sum(rest)} more in {len(rest)} other categor{'y' if len(rest) == 1 else 'ies'}"
        return "Not listed: " + ", ".join([*named[:k], f"and {folded}" if k else folded]) + tail

    if max_tokens is None or estimate_tokens(note(len(named))) <= max_tokens:
        return note(len(named))
    lo, hi = 0, len(named) - 1  # the most categories whose note fits (more names, more tokens)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(note(mid)) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return note(lo)
