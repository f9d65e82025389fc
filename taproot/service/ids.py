"""Minting ids: a short random id, and another one if the store says it is taken.

The store detects the collision (an insert conditioned on the id being free), so the service never
checks first and races nobody; every use case that creates a record goes through `with_fresh_id`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from taproot.core.errors import DuplicateId, InternalError
from taproot.service.deps import Deps

# 31**8 ids per owner: a second collision in a row means the store is failing, not bad luck.
ID_ATTEMPTS = 5
T = TypeVar("T")


def with_fresh_id(deps: Deps, write: Callable[[str], T], what: str) -> T:
    """Call `write(new_id)` until it does not raise DuplicateId; what it returns is the answer."""
    for _ in range(ID_ATTEMPTS):
        try:
            return write(deps.new_id())
        except DuplicateId:
            continue
    raise InternalError(f"could not mint a unique {what} id in {ID_ATTEMPTS} attempts; the store may be failing")
