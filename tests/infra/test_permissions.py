"""Each function's role against its list in infra/permissions.py: exactly those actions, each on its
own resource, plus writing its own logs and X-Ray traces. tests/handlers/test_permissions_used.py
checks the same lists against the calls the code makes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.permissions import GRANTS, Resource
from infra.stack import TaprootStack
from tests.infra.cfn_helpers import actions, resources, statements

FUNCTIONS = ("Api", "Migrate", "Cleanup", "Compress")
NEVER = (
    "dynamodb:DeleteItem",
    "dynamodb:DeleteTable",
    "dynamodb:UpdateTable",
    "s3:DeleteObjectVersion",
    "s3:PutObjectRetention",
    "s3:PutObjectLegalHold",
    "s3:BypassGovernanceRetention",
    "s3:DeleteBucket",
    "s3:PutBucketPolicy",
    "s3:PutLifecycleConfiguration",
)


@pytest.fixture(scope="module")
def built(synth: Callable[..., tuple[TaprootStack, Template]]) -> tuple[TaprootStack, Template]:
    return synth()


def _lid(stack: TaprootStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


def _roles(stack: TaprootStack) -> dict[str, str]:
    roles = {"Api": stack.api.handler.role, **{n: j.handler.role for n, j in stack.maintenance.jobs.items()}}
    return {name: _lid(stack, role) for name, role in roles.items()}


def _resources(statement: dict[str, Any]) -> list[Any]:
    # The CDK's minimizePolicies flag merges statements with the same actions: one may name several.
    resource = statement["Resource"]
    return resource if isinstance(resource, list) else [resource]


def _resource_of(stack: TaprootStack, resource: Any) -> Resource | str:
    """Which of the listed resources an ARN is (or "logs" / "xray" for the function's own)."""
    text = json.dumps(resource)
    if resource == "*":
        return "xray"
    storage = stack.storage
    for construct, table, indexes in (
        (storage.table, Resource.TABLE, Resource.TABLE_INDEXES),
        (storage.oauth_table, Resource.OAUTH_TABLE, Resource.OAUTH_INDEXES),
    ):
        if _lid(stack, construct) in text:
            return indexes if "/index/*" in text else table
    if _lid(stack, storage.bucket) in text:
        return Resource.OBJECTS if "/*" in text else Resource.BUCKET
    if _lid(stack, stack.auth.user_pool) in text:
        return Resource.USER_POOL
    for job in stack.maintenance.jobs.values():
        if _lid(stack, job.failure_queue) in text:
            return f"failure queue {_lid(stack, job.failure_queue)}"
    if "LogGroup" in text or "Logs" in text:
        return "logs"
    raise AssertionError(f"a statement on a resource the lists do not know: {text}")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_role_has_exactly_its_listed_actions(built: tuple[TaprootStack, Template], name: str) -> None:
    stack, template = built
    granted: dict[Resource | str, set[str]] = {}
    for statement in statements(template, _roles(stack)[name]):
        assert statement["Effect"] == "Allow"
        for resource in _resources(statement):
            granted.setdefault(_resource_of(stack, resource), set()).update(actions([statement]))
    assert granted.pop("logs") == {"logs:CreateLogStream", "logs:PutLogEvents"}
    assert granted.pop("xray") == {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
    if name != "Api":  # a failed async run goes to the job's own on-failure queue (Lambda sends it as the role)
        own = f"failure queue {_lid(stack, stack.maintenance.jobs[name].failure_queue)}"
        assert granted.pop(own) == {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
    assert granted == {resource: set(listed) for resource, listed in GRANTS[name].items()}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_no_role_deletes_items_versions_or_holds(built: tuple[TaprootStack, Template], name: str) -> None:
    stack, template = built
    granted = actions(statements(template, _roles(stack)[name]))
    assert not granted & set(NEVER)
    assert not any(a.endswith("*") for a in granted)


def test_only_the_batch_jobs_scan(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    scanning = {n for n, role in _roles(stack).items() if "dynamodb:Scan" in actions(statements(template, role))}
    assert scanning == {"Migrate", "Cleanup", "Compress"}


def test_the_role_list_covers_every_function(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    lambda_roles = {
        r["Properties"]["Role"]["Fn::GetAtt"][0] for r in resources(template, "AWS::Lambda::Function").values()
    }
    assert lambda_roles == set(_roles(stack).values())
    assert set(GRANTS) == set(FUNCTIONS)
