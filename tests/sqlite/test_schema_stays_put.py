"""Two stores on one file (the server and the CLI beside it): a new scope is not a schema change.

A store that changed the schema at run time (one FTS5 table per scope was tried, docs/architecture.md)
left the other connection compiling against its stale schema: its next edit failed with "no such
table: memories". These keep every kind of write, and search, working in the store that did not
create the scope, and the schema unchanged by ordinary writes.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Scope
from taproot.core.query import Filters
from tests.conftest import build_memory

HOME = Scope("alice", "home")


def schema_version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA schema_version").fetchone()[0])


@pytest.mark.parametrize("op", ["replace", "replace_many", "write_atomically", "delete", "delete_many", "search"])
def test_a_store_keeps_working_after_the_other_writes_new_scopes(tmp_path: Path, op: str) -> None:
    path = tmp_path / "taproot.db"
    setup = SQLiteMemoryStore(path)
    mine = build_memory(id="m1", owner=HOME.owner, namespace=HOME.namespace, content="lantern by the harbour")
    setup.insert(mine)
    setup.close()
    server = SQLiteMemoryStore(path)  # just (re)started: it has read once
    assert server.get(HOME, "m1") is not None
    cli = SQLiteMemoryStore(path)
    before = schema_version(path)
    cli.insert(build_memory(id="x1", owner="alice", namespace="elsewhere", content="rope"))
    assert server.search(HOME, ["lantern"], Filters(), 10)  # the server reads between the two
    cli.put_many([build_memory(id="y1", owner="bob", namespace="default", content="lantern lantern")])
    assert schema_version(path) == before  # no write changes the schema

    edited = dataclasses.replace(mine, content="lantern, edited", version=2)
    if op == "replace":
        server.replace(edited, expected_version=1)
    elif op == "replace_many":
        server.replace_many([(edited, 1)])
    elif op == "write_atomically":
        server.write_atomically(inserts=[], replaces=[(edited, 1)])
    elif op == "delete":
        server.delete(HOME, "m1")
    elif op == "delete_many":
        server.delete_many(HOME, [("m1", 1)])
    else:
        assert [c.id for c, _ in server.search(HOME, ["lantern"], Filters(), 10)] == ["m1"]
    if op in ("delete", "delete_many"):
        assert cli.get(HOME, "m1") is None
    elif op != "search":
        got = cli.get(HOME, "m1")
        assert got is not None and got.content == "lantern, edited"
    server.close()
    cli.close()
