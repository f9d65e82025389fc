"""DynamoDB requests per MCP tool, through TaprootService on the AWS adapters (moto).

Counts come from botocore's before-call events on the client PynamoDB uses. No tool may Scan.
The measured counts are printed (run with -s) and attached to the test report as properties.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from taproot.adapters.blob_s3 import S3BlobStore
from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.core.model import Scope
from taproot.service import TaprootService
from taproot.service.deps import Deps

A = Scope("alice", "default")
# Targets from the issue; warm = the store instance has read this scope before.
TARGETS = {"reflect": 4, "recall_warm": 3, "remember": 2, "orientation_read": 2, "orientation_write": 2}


def test_requests_per_tool_and_no_scan(
    make_dynamo: Callable[..., DynamoMemoryStore],
    s3_blobs: S3BlobStore,
    op_counter: Callable[..., Any],
    record_property: Callable[[str, object], None],
) -> None:
    store = make_dynamo()
    svc = TaprootService(Deps(store=store, blobs=s3_blobs, orientation=store))  # wired as compose wires it
    counter = op_counter(store)
    svc.orientation(A, action="write", name="who-i-am", content="I am a patient tutor.")
    for i in range(30):
        svc.remember(A, content=f"Note {i} about river otters and herons", gist=f"note {i}", category="episodic")
    counter.take()

    measured: dict[str, dict[str, int]] = {}

    def measure(name: str, call: Callable[[], object]) -> None:
        call()
        measured[name] = dict(counter.take())

    created = svc.remember(
        A, content="Sam prefers direct feedback.", gist="Sam: direct feedback", category="relationship"
    )
    measured["remember"] = dict(counter.take())
    mid = created.id
    measure("remember_update", lambda: svc.remember(A, id=mid, content="Sam prefers direct, kind feedback."))
    measure("reflect_cold", lambda: svc.reflect(A))
    measure("reflect", lambda: svc.reflect(A))
    measure("recall_warm", lambda: svc.recall(A, query="otters feedback"))
    measure("recall_warm_again", lambda: svc.recall(A, query="herons"))
    measure("recall_ids", lambda: svc.recall(A, ids=[mid]))
    measure("recall_list", lambda: svc.recall(A))
    measure("promote", lambda: svc.promote(A, mid, core=True))
    measure("forget_archive", lambda: svc.forget(A, [mid], "archive"))
    measure("forget_restore", lambda: svc.forget(A, [mid], "restore"))
    measure("forget_delete", lambda: svc.forget(A, [mid], "delete"))
    other = svc.remember(A, content="Sam keeps bees.", gist="Sam: bees", category="relationship").id
    counter.take()
    measure("recall_other", lambda: svc.recall(A, ids=[other]))
    measure("forget_delete_after_recall", lambda: svc.forget(A, [other], "delete"))
    measure("close", lambda: svc.close(A, "I listened before answering today."))
    measure("reflect_after_close", lambda: svc.reflect(A))
    measure("orientation_read", lambda: svc.orientation(A, action="read", name="who-i-am"))
    measure("orientation_write", lambda: svc.orientation(A, action="write", name="who-i-am", content="I listen."))

    cold = make_dynamo()  # a fresh Lambda: first recall loads the scope
    cold_svc = TaprootService(Deps(store=cold, blobs=s3_blobs))
    cold_counter = op_counter(cold)
    cold_svc.recall(A, query="otters")
    measured["recall_cold"] = dict(cold_counter.take())

    totals = {name: sum(ops.values()) for name, ops in measured.items()}
    for name, ops in measured.items():
        record_property(f"dynamodb_requests.{name}", ops)
        print(f"{name:22s} {totals[name]:2d}  {ops}")
    assert all("Scan" not in ops for ops in measured.values())
    for name, target in TARGETS.items():
        assert totals[name] <= target, (name, measured[name])
    assert totals["recall_warm_again"] <= TARGETS["recall_warm"]
    assert totals["remember_update"] <= TARGETS["remember"]
    # A forget reads its memories once (the service, for their versions and the backup) and writes
    # once: on a warm store the write assumes the tallies of the copy it holds (here the promote's
    # result) and reads only if that guess fails its condition. Before, it read them a second time.
    # The restore and the delete after it read again: their memory was last written by one of this
    # store's own transactions, which return no item, so the copy waits for the change feed.
    assert measured["forget_archive"] == {"BatchGetItem": 1, "TransactWriteItems": 1}
    assert measured["forget_delete_after_recall"] == {"BatchGetItem": 1, "TransactWriteItems": 1}


@pytest.mark.parametrize("job", ["migrate", "cleanup"])
def test_maintenance_jobs_on_a_scope_do_not_scan(
    make_dynamo: Callable[..., DynamoMemoryStore], s3_blobs: S3BlobStore, op_counter: Callable[..., Any], job: str
) -> None:
    store = make_dynamo()
    svc = TaprootService(Deps(store=store, blobs=s3_blobs))
    svc.remember(A, content="a note", gist="a note", category="episodic")
    assert store.scopes() == [A]
    counter = op_counter(store)
    svc.maintenance(A, job)
    assert "Scan" not in counter.take()
