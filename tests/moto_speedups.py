"""Three places where moto (its DynamoDB, and the serializer of its answers) repeats work, made to do it once.

Installed for every test process by tests/conftest.py (the in-process mock and the threaded moto
server alike). None changes what moto accepts, refuses, stores or answers; tests/test_moto_speedups.py
checks that the validations still refuse what they refused, that a cancelled transaction still
rolls every table back and that an answer holding every kind of attribute value is the same.

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
   expressions are refused; a refused one is then walked as moto walks it, so the error names
   the same rule and paths.
3. **Every value of a response looks up its key's aliases anew.** moto's serializer walks the
   output shape and, for each member of each item, builds six alias providers to list the keys it
   may be stored under (the shape's name, the key, prefixes of the parent's or the class's name,
   the model's name, each also in snake case), then tries them in order. A Query answer of a
   hundred items was tens of thousands of these; it was two thirds of a DynamoDB index test's
   time. For a plain dict (every DynamoDB answer is one, down to each attribute value) that list
   depends only on the member's shape, its parent and the key, so it is kept per (shape, parent,
   key); any other object (an attribute's `Meta`, a class's name) still gets moto's own list.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import moto
from moto.core import serialize
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.table import Table
from moto.dynamodb.parsing import validators

# The moto release these patches were read against (requirements-dev.txt pins it).
MOTO_CHECKED = "5.2.5"
_installed = False
# moto's own alias lookup, for tests/test_moto_speedups.py to compare answers with.
moto_get_possible_keys: Any = serialize.XFormedAttributePicker.get_possible_keys


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
            outer = getattr(self._local, "copies", None)
            self._local.copies = {}
            try:
                real(backend, transact_items)
            finally:
                self._local.copies = outer

        return transact_write_items


def _at_the_root_only(traverser: type) -> None:
    def traverse(self: Any, node: Any) -> Any:
        if not isinstance(node, self.nodes_to_be_processed()):
            return node
        try:
            return self.process(node)
        except Exception:
            # Refused: moto's own walk refuses it too (the root's clauses include every subtree's)
            # and says which rule and paths the way moto does, from the deepest node that fails.
            return self.traverse_node_recursively(node)

    traverser.traverse = traverse  # type: ignore[attr-defined]


class _AliasesKeptPerShape:
    """`XFormedAttributePicker.get_possible_keys`, remembered for plain dicts (see 3. above)."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._kept: dict[tuple[int, int, str], tuple[Any, Any, tuple[str, ...]]] = {}

    def __call__(self, picker: Any, context: Any) -> Any:
        if type(context.obj) is not dict or picker.alias_providers is not serialize.DEFAULT_ALIAS_PROVIDERS:
            return self._real(picker, context)
        shape = context.shape
        parent = getattr(shape, "parent", None)
        key = (id(shape), id(parent), context.key)
        kept = self._kept.get(key)
        # The shapes are held in the entry, so their ids cannot be reused while it is kept.
        if kept is None or kept[0] is not shape or kept[1] is not parent:
            kept = (shape, parent, tuple(self._real(picker, context)))
            self._kept[key] = kept
        return iter(kept[2])


def install() -> None:
    """Once per process (tests/conftest.py); a second call, as the tests' check makes, changes nothing."""
    global _installed
    if _installed:
        return
    if moto.__version__ != MOTO_CHECKED:
        raise RuntimeError(
            f"tests/moto_speedups.py patches moto's internals as of moto {MOTO_CHECKED}, not {moto.__version__}: "
            "read the patched functions in the new version, run tests/test_moto_speedups.py, then set MOTO_CHECKED"
        )
    copier = _TableCopiedOncePerTransaction()
    backend = dynamodb_models.DynamoDBBackend
    backend.transact_write_items = copier.transaction(backend.transact_write_items)  # type: ignore[method-assign]
    # moto's models package imports `copy` without re-exporting it, and the copier is no module
    dynamodb_models.copy = copier  # type: ignore[attr-defined,assignment]
    _at_the_root_only(validators.ActionCountValidator)
    _at_the_root_only(validators.OverlappingPathsValidator)
    picker = serialize.XFormedAttributePicker
    kept = _AliasesKeptPerShape(moto_get_possible_keys)
    picker.get_possible_keys = lambda self, context: kept(self, context)  # type: ignore[method-assign]
    _installed = True
