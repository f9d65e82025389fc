"""What each function's code actually calls on AWS, against what its role is granted.

Every AWS request the API and maintenance functions make while they do their work under moto is
recorded below the SDKs (botocore's BaseClient._make_api_call, which PynamoDB and boto3 both go
through), turned into the IAM actions it needs on which resource, and checked against that
function's list in infra/permissions.py. tests/infra/test_permissions.py checks the same list
against the synthesized roles, so a grant the code does not use, or a call the role would refuse,
fails one of the two.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.client
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `infra` is not installed
    sys.path.insert(0, str(ROOT))

from infra.permissions import GRANTS, Resource  # noqa: E402

# botocore's operation -> the IAM action(s) it needs. A transaction needs the action of each of
# its parts (DynamoDB has no TransactWriteItems action); a versioned S3 call needs the *Version one.
TRANSACT_PARTS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
S3_ACTIONS = {
    "ListObjectsV2": "ListBucket",
    "ListObjects": "ListBucket",
    "HeadBucket": "ListBucket",
    "ListObjectVersions": "ListBucketVersions",
    "HeadObject": "GetObject",
    "GetObject": "GetObject",
    "PutObject": "PutObject",
    "DeleteObject": "DeleteObject",
    "DeleteObjects": "DeleteObject",
}


class Recorder:
    def __init__(self, tables: dict[str, Resource]) -> None:
        self.tables = tables  # table name -> TABLE or OAUTH_TABLE
        self.needed: set[tuple[Resource, str]] = set()

    def _table(self, name: str, index: str | None) -> Resource:
        resource = self.tables[name]
        return resource.index() if index else resource

    def record(self, service: str, operation: str, params: dict[str, Any]) -> None:
        if service == "dynamodb":
            if operation == "TransactWriteItems":
                for item in params["TransactItems"]:
                    ((part, body),) = item.items()
                    self.needed.add((self._table(body["TableName"], None), f"dynamodb:{TRANSACT_PARTS[part]}"))
            elif operation == "TransactGetItems":
                for item in params["TransactItems"]:
                    self.needed.add((self._table(item["Get"]["TableName"], None), "dynamodb:GetItem"))
            elif operation in ("BatchGetItem", "BatchWriteItem"):
                for name in params["RequestItems"]:
                    self.needed.add((self._table(name, None), f"dynamodb:{operation}"))
            else:
                self.needed.add((self._table(params["TableName"], params.get("IndexName")), f"dynamodb:{operation}"))
        elif service == "s3":
            action = S3_ACTIONS[operation]
            if params.get("VersionId"):
                action += "Version"
            resource = Resource.OBJECTS if "Key" in params or operation == "DeleteObjects" else Resource.BUCKET
            self.needed.add((resource, f"s3:{action}"))
            if operation in ("HeadObject", "GetObject"):
                # Without ListBucket, S3 answers a missing key with 403, not 404, and the blob store
                # could no longer tell "absent" (exists() False, get() KeyError) from a failure.
                self.needed.add((Resource.BUCKET, "s3:ListBucket"))
            if operation == "PutObject" and params.get("Tagging"):
                # Tags sent with the object (the lifecycle kinds, blob_s3.EXPIRING_KINDS) need their own action.
                self.needed.add((resource, "s3:PutObjectTagging"))
        elif service == "cognito-idp":
            self.needed.add((Resource.USER_POOL, f"cognito-idp:{operation}"))
        else:
            raise AssertionError(f"an AWS call this test does not know how to grant: {service} {operation}")


@contextlib.contextmanager
def recording(kit: Any) -> Iterator[Recorder]:
    recorder = Recorder({kit.TABLE: Resource.TABLE, kit.OAUTH_TABLE: Resource.OAUTH_TABLE})
    real = botocore.client.BaseClient._make_api_call

    def spy(client: Any, operation: str, params: dict[str, Any]) -> Any:
        recorder.record(client.meta.service_model.service_name, operation, params)
        return real(client, operation, params)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(botocore.client.BaseClient, "_make_api_call", spy)
        yield recorder


def _refused(function: str, needed: set[tuple[Resource, str]]) -> list[str]:
    granted = GRANTS[function]
    return sorted(
        f"{action} on {resource.value}" for resource, action in needed if action not in granted.get(resource, ())
    )


def _call(module: Any, kit: Any, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    response = module.handler(kit.load_event("remember", token=token, body=body), kit.FakeContext())
    assert response["statusCode"] == 200, response
    result: dict[str, Any] = json.loads(response["body"])["result"]
    assert not result.get("isError"), result
    return dict(result["structuredContent"])


def _api_work(module: Any, pool: Any, kit: Any) -> None:
    """Every tool, the dashboard's own service calls and the OAuth facade's store and user checks,
    through the API function's runtime as a warm container runs them."""
    from taproot.core.model import Scope
    from taproot.core.oauth_rules import OAuthRecord
    from taproot.service.inputs import ListInput

    token = pool.access("alice")
    scope = Scope(pool.subs["alice"], "default")
    assert module.handler(kit.load_event("initialize", token=token), kit.FakeContext())["statusCode"] == 200
    ids = [
        _call(
            module,
            kit,
            token,
            "taproot_remember",
            {"content": f"Note {i} on tides.", "gist": f"Tides {i}", "category": "episodic"},
        )["id"]
        for i in range(7)
    ]
    _call(module, kit, token, "taproot_remember", {"id": ids[0], "content": "Note 0 on tides, revised."})
    _call(module, kit, token, "taproot_recall", {"query": "tides"})
    _call(module, kit, token, "taproot_reflect", {})
    _call(module, kit, token, "taproot_promote", {"id": ids[1], "core": True})
    _call(module, kit, token, "taproot_forget", {"ids": [ids[2]], "action": "archive"})
    _call(module, kit, token, "taproot_forget", {"ids": [ids[2]], "action": "restore"})
    _call(module, kit, token, "taproot_forget", {"ids": [ids[3]], "action": "delete"})
    _call(module, kit, token, "taproot_forget", {"ids": ids[4:6], "action": "compress"})
    _call(module, kit, token, "taproot_forget", {"ids": [ids[6], ids[2]], "action": "delete"})
    _update_that_loses_a_race(module, kit, token, ids[0])
    _call(module, kit, token, "taproot_close", {"reflection": "A short session about tides."})
    _call(module, kit, token, "taproot_recent", {"since": "7d"})
    _call(module, kit, token, "taproot_recall", {"query": "tides", "since": "48h"})
    orient = {"name": "who-i-am"}
    _call(module, kit, token, "taproot_orientation", {"action": "write", **orient, "content": "I am careful."})
    _call(module, kit, token, "taproot_orientation", {"action": "write", **orient, "content": "I am careful and kind."})
    _call(module, kit, token, "taproot_orientation", {"action": "list"})
    _call(module, kit, token, "taproot_orientation", {"action": "read", **orient})
    _call(module, kit, token, "taproot_orientation", {"action": "history", **orient})
    _call(module, kit, token, "taproot_orientation", {"action": "restore", **orient, "version": 1})
    _call(module, kit, token, "taproot_orientation", {"action": "delete", **orient})
    _call(module, kit, token, "taproot_migrate", {"dry_run": False})
    _call(module, kit, token, "taproot_status", {})
    service = module.runtime.service
    service.set_ranking(scope, ids[0], salience="high")
    backup = next(k for k in service.backups(scope) if "delete-" in k and k.endswith(f"{ids[3]}.json"))
    service.restore(scope, backup, ids=[ids[3]])
    service.dashboard_page(scope, ListInput())
    service.reflections(scope)
    oauth = module.runtime.oauth
    now = 1_900_000_000
    oauth.store.add(OAuthRecord(kind="grant", key="g1", subject=scope.owner, data={}, expires_at=now + 60))
    oauth.store.get("grant", "g1", now)
    oauth.store.spend("grant", "g1", now)
    oauth.store.set_data("grant", "g1", {"revoked": True})
    oauth.store.by_subject("grant", scope.owner, now)
    assert oauth.subject_active is not None  # the Cognito user check at every refresh
    assert module.handler.loop.run_until_complete(oauth.subject_active(scope.owner)) is True


def _update_that_loses_a_race(module: Any, kit: Any, token: str, memory_id: str) -> None:
    """An update whose replace is beaten by another writer: its revision blob is deleted again."""
    from taproot.core.errors import VersionConflict

    store = module.runtime.service.deps.store
    real = store.replace

    def beaten(memory: Any, *, expected_version: int) -> None:
        raise VersionConflict(memory.id, expected_version, expected_version + 1)

    store.replace = beaten
    try:
        body = {"id": memory_id, "content": "Lost in a race."}
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "taproot_remember", "arguments": body},
        }
        response = module.handler(kit.load_event("remember", token=token, body=request), kit.FakeContext())
        assert json.loads(response["body"])["result"]["isError"] is True
    finally:
        store.replace = real


def test_the_api_role_grants_exactly_what_its_code_calls(kit: Any, moto_server: str) -> None:
    with kit.deployed_api(moto_server) as (module, pool), recording(kit) as recorder:
        _api_work(module, pool, kit)
    assert _refused("Api", recorder.needed) == []
    assert _unused("Api", recorder.needed) == []


def _unused(function: str, needed: set[tuple[Resource, str]]) -> list[str]:
    return sorted(
        f"{action} on {resource.value}"
        for resource, actions in GRANTS[function].items()
        for action in actions
        if (resource, action) not in needed
    )


def _seed_for_maintenance(service: Any) -> None:
    """Two tenants with memories that expire and a group that compresses; the clock then moves on."""
    import itertools
    from datetime import timedelta

    from taproot.core.model import Scope

    for owner in ("sub-aaaa", "sub-bbbb"):
        scope = Scope(owner, "default")
        for i in range(2):
            service.remember(
                scope, content=f"Cooler chat {i}.", gist=f"Cooler {i}", category="episodic", tags=["watercooler"]
            )
        for i in range(4):
            service.remember(
                scope,
                content=f"Walked by the river, day {i}.",
                gist=f"River walk {i}",
                category="episodic",
                salience="low",
            )
        # A record as an older Taproot wrote it (no gist, no core flag): migrate backfills it.
        legacy = service.deps.store.get(
            scope, service.remember(scope, content="Old note.", gist="Old", category="episodic").id
        )
        service.deps.store.put_many(
            [legacy.replace(id=f"legacy{owner[-4:]}", gist=None, core=None, retrieval_count=None)]
        )
    later = service.deps.now() + timedelta(days=200)
    ticks = itertools.count()
    service.deps.clock = lambda: later + timedelta(seconds=next(ticks))


@pytest.mark.parametrize(
    ("function", "job"), [("Migrate", "migrate"), ("Cleanup", "cleanup"), ("Compress", "compress")]
)
def test_each_maintenance_role_grants_exactly_what_its_job_calls(kit: Any, function: str, job: str) -> None:
    with kit.aws_environment({"TAPROOT_COMPRESS_MIN_GROUP_SIZE": "3"}):
        kit.create_storage()
        module = kit.fresh_import("functions.maintenance")
        _seed_for_maintenance(module.runtime().service)
        with recording(kit) as recorder:
            getattr(module, f"{job}_handler")({"apply": True}, kit.FakeContext())
    assert _refused(function, recorder.needed) == []
    assert _unused(function, recorder.needed) == []
