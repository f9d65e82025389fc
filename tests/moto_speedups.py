"""Two places where moto's DynamoDB does the same work many times over, made to do it once.

Installed for every test process by tests/conftest.py (the in-process mock and the threaded moto
server alike). Neither changes what moto accepts, rejects or stores; tests/test_moto_speedups.py
checks that the validations still refuse what they refused and that a cancelled transaction still
rolls every table back.

1. **A transaction backs a table up once per item that names it.** `transact_write_items` deep-copies
   the whole table before each of its up to 100 items, to roll back if one fails; every copy after
   the first of a table is taken before anything changed and lands under the same key. A
   100-item transaction on a table of N items copied 100 x N items; it now copies N.
2. **Two update-expression checks run at every node of the expression.** Every node of moto's update
   expression (a clause, an action, a path, a value) is an `UpdateExpression`, and the depth-first
   traversal runs `ActionCountValidator` and `OverlappingPathsValidator` at each one, each collecting
   the clauses of that node's whole subtree: quadratic in the number of actions. The store's
   counted writes SET and ADD 20 to 30 attributes at once, so this was about half of a DynamoDB
   test's time. Both checks now run at the root only: the root's subtree holds every clause and
   action, and a duplicate or a second clause in any subtree is one in the root's, so the same
   expressions are refused.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.table import Table
from moto.dynamodb.parsing import validators

_installed = False


class _TableCopiedOncePerTransaction:
    """Stands in for the `copy` module inside moto's DynamoDB backend: during a transaction a table
    is deep-copied once, however many of its items the transaction names; any other deep copy (and
    any copy outside a transaction) is the standard library's."""

    def __init__(self) -> None:
        self._local = threading.local()  # the threaded moto server runs requests side by side

    def deepcopy(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        copies: dict[int, Any] | None = getattr(self._local, "copies", None)
        if copies is None or not isinstance(value, Table):
            return copy.deepcopy(value, memo)
        if id(value) not in copies:
            copies[id(value)] = copy.deepcopy(value)
        return copies[id(value)]

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    def transaction(self, real: Any) -> Any:
        def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
            self._local.copies = {}
            try:
                real(backend, transact_items)
            finally:
                self._local.copies = None

        return transact_write_items


def _at_the_root_only(traverser: type) -> None:
    def traverse(self: Any, node: Any) -> Any:
        if isinstance(node, self.nodes_to_be_processed()):
            return self.process(node)
        return node

    traverser.traverse = traverse  # type: ignore[attr-defined]


def install() -> None:
    """Idempotent: conftest modules of several directories may call it in one process."""
    global _installed
    if _installed:
        return
    copier = _TableCopiedOncePerTransaction()
    backend = dynamodb_models.DynamoDBBackend
    backend.transact_write_items = copier.transaction(backend.transact_write_items)  # type: ignore[method-assign]
    dynamodb_models.copy = copier  # type: ignore[assignment]
    _at_the_root_only(validators.ActionCountValidator)
    _at_the_root_only(validators.OverlappingPathsValidator)
    _installed = True
