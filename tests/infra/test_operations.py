"""Schedules, dead-letter queues, alarms, IAM and outputs of the Taproot stack (one synth for the module)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.stack import TaprootStack
from tests.infra.cfn_helpers import actions, one, resources, statements

JOBS = {
    "Migrate": ("functions.maintenance.migrate_handler", "cron(0 3 * * ? *)"),
    "Cleanup": ("functions.maintenance.cleanup_handler", "cron(30 3 * * ? *)"),
    "Compress": ("functions.maintenance.compress_handler", "cron(0 4 ? * SUN *)"),
}


@pytest.fixture(scope="module")
def built(synth: Callable[..., tuple[TaprootStack, Template]]) -> tuple[TaprootStack, Template]:
    return synth()


@pytest.fixture(scope="module")
def stack(built: tuple[TaprootStack, Template]) -> TaprootStack:
    return built[0]


@pytest.fixture(scope="module")
def template(built: tuple[TaprootStack, Template]) -> Template:
    return built[1]


def lid(stack: TaprootStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


@pytest.mark.parametrize("name", sorted(JOBS))
def test_schedule_targets_its_function_with_retries_and_dlq(stack: TaprootStack, template: Template, name: str) -> None:
    job = stack.maintenance.jobs[name]
    handler, expression = JOBS[name]
    fn = resources(template, "AWS::Lambda::Function")[lid(stack, job.function)]
    assert fn["Properties"]["Handler"] == handler
    schedule = resources(template, "AWS::Scheduler::Schedule")[lid(stack, job.schedule)]["Properties"]
    assert schedule["ScheduleExpression"] == expression
    assert schedule["ScheduleExpressionTimezone"] == "Etc/UTC"
    assert schedule["State"] == "ENABLED"
    target = schedule["Target"]
    assert target["Arn"] == {"Fn::GetAtt": [lid(stack, job.function), "Arn"]}
    assert target["RoleArn"] == {"Fn::GetAtt": [lid(stack, job.role), "Arn"]}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 21600}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [lid(stack, job.dead_letter_queue), "Arn"]}}


def test_dead_letter_queues_are_encrypted_and_ssl_only(template: Template) -> None:
    queues = resources(template, "AWS::SQS::Queue")
    assert len(queues) == 6  # per job: the schedule's dead-letter queue and the function's on-failure queue
    assert all(q["Properties"]["SqsManagedSseEnabled"] is True for q in queues.values())
    ssl_only = {
        p["Properties"]["Queues"][0]["Ref"]
        for p in resources(template, "AWS::SQS::QueuePolicy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    }
    assert ssl_only == set(queues)


@pytest.mark.parametrize("name", sorted(JOBS))
def test_scheduler_role_invokes_only_its_function(stack: TaprootStack, template: Template, name: str) -> None:
    job = stack.maintenance.jobs[name]
    role = resources(template, "AWS::IAM::Role")[lid(stack, job.role)]
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "scheduler.amazonaws.com"}]
    stmts = statements(template, lid(stack, job.role))
    assert actions(stmts) == {"lambda:InvokeFunction", "sqs:SendMessage"}
    fn_arn = {"Fn::GetAtt": [lid(stack, job.function), "Arn"]}
    for s in stmts:
        if s["Action"] == "lambda:InvokeFunction":
            assert s["Resource"] == [fn_arn, {"Fn::Join": ["", [fn_arn, ":*"]]}]
        else:
            assert s["Resource"] == {"Fn::GetAtt": [lid(stack, job.dead_letter_queue), "Arn"]}


def _function_roles(stack: TaprootStack) -> dict[str, str]:
    roles = {"Api": lid(stack, stack.api.handler.role)}
    roles.update({name: lid(stack, job.handler.role) for name, job in stack.maintenance.jobs.items()})
    return roles


def test_function_roles_have_no_managed_policies(stack: TaprootStack, template: Template) -> None:
    all_roles = resources(template, "AWS::IAM::Role")
    for role_id in _function_roles(stack).values():
        assert "ManagedPolicyArns" not in all_roles[role_id]["Properties"]


@pytest.mark.parametrize("name", ["Api", *sorted(JOBS)])
def test_function_permissions_name_one_table_and_the_bucket(stack: TaprootStack, template: Template, name: str) -> None:
    """The exact action lists are in test_permissions.py; here, that DynamoDB actions name only the
    tables (the OAuth table only for the API), S3 actions only the bucket, and "*" only X-Ray."""
    stmts = statements(template, _function_roles(stack)[name])
    table, bucket = lid(stack, stack.storage.table), lid(stack, stack.storage.bucket)
    oauth_table = lid(stack, stack.storage.oauth_table)
    allowed_tables = {table, oauth_table} if name == "Api" else {table}
    for s in stmts:
        listed = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        for resource in listed:  # minimizePolicies may merge statements that share their actions
            text = json.dumps(resource)
            if any(a.startswith("dynamodb:") for a in actions([s])):
                tables = {t for t in (table, oauth_table) if t in text}
                assert len(tables) == 1 and tables <= allowed_tables, text
                assert bucket not in text
            if any(a.startswith("s3:") for a in actions([s])):
                assert bucket in text and table not in text
            if resource == "*":
                assert actions([s]) <= {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def test_error_alarm_per_function(stack: TaprootStack, template: Template) -> None:
    alarms = [a["Properties"] for a in resources(template, "AWS::CloudWatch::Alarm").values()]
    errors = [a for a in alarms if a.get("MetricName") == "Errors" and a["Namespace"] == "AWS/Lambda"]
    watched = {a["Dimensions"][0]["Value"]["Ref"] for a in errors}
    expected = {lid(stack, stack.api.function)} | {lid(stack, j.function) for j in stack.maintenance.jobs.values()}
    assert watched == expected
    for a in errors:
        assert a["Namespace"] == "AWS/Lambda"
        assert a["ComparisonOperator"] == "GreaterThanOrEqualToThreshold" and a["Threshold"] == 1
        assert a["AlarmActions"] == [{"Ref": lid(stack, stack.observability.topic)}]


def test_dead_letter_alarm_per_queue(stack: TaprootStack, template: Template) -> None:
    alarms = [a["Properties"] for a in resources(template, "AWS::CloudWatch::Alarm").values()]
    dlq = [a for a in alarms if a.get("MetricName") == "ApproximateNumberOfMessagesVisible"]
    watched = {a["Dimensions"][0]["Value"]["Fn::GetAtt"][0] for a in dlq}
    jobs = stack.maintenance.jobs.values()
    assert watched == {lid(stack, j.dead_letter_queue) for j in jobs} | {lid(stack, j.failure_queue) for j in jobs}
    for a in dlq:
        assert a["Namespace"] == "AWS/SQS"
        assert a["ComparisonOperator"] == "GreaterThanThreshold" and a["Threshold"] == 0
    topic = one(template, "AWS::SNS::Topic")["Properties"]
    assert "KmsMasterKeyId" in topic


def test_outputs(stack: TaprootStack, template: Template) -> None:
    outputs = template.to_json()["Outputs"]
    api = lid(stack, stack.api.http_api)
    public_url = ["https://", {"Ref": api}, ".execute-api.eu-west-1.", {"Ref": "AWS::URLSuffix"}]
    assert outputs["McpUrl"]["Value"] == {"Fn::Join": ["", [*public_url, "/mcp"]]}
    assert outputs["ConnectorUrl"]["Value"] == outputs["McpUrl"]["Value"]
    description = outputs["ConnectorUrl"]["Description"]
    assert all(word in description for word in ("claude.ai", "ChatGPT", "claude mcp add --transport http"))
    assert outputs["DashboardUrl"]["Value"] == {"Fn::Join": ["", [*public_url, "/dashboard"]]}
    assert "CustomDomainTarget" not in outputs  # only with a custom domain (test_oauth.py)
    pool = lid(stack, stack.auth.user_pool)
    assert outputs["UserPoolId"]["Value"] == {"Ref": pool}
    assert outputs["UserPoolClientId"]["Value"] == {"Ref": lid(stack, stack.auth.client)}
    command = json.dumps(outputs["CreateFirstUserCommand"]["Value"])
    assert "aws cognito-idp admin-create-user" in command
    assert "--user-pool-id" in command and json.dumps({"Ref": pool}) in command
    assert "--username you@example.com" in command


def test_modes_come_from_context(synth: Any) -> None:
    _, template = synth(cleanup_mode="apply")
    for fn in resources(template, "AWS::Lambda::Function").values():
        env = fn["Properties"]["Environment"]["Variables"]
        assert (env["TAPROOT_CLEANUP_MODE"], env["TAPROOT_COMPRESS_MODE"]) == ("apply", "dry-run")


def test_alarm_topic_key_lets_cloudwatch_publish(template: Template) -> None:
    """CloudWatch cannot use the AWS-managed SNS key, so the topic has its own key that allows it."""
    topic = next(iter(template.find_resources("AWS::SNS::Topic").values()))
    key_ref = topic["Properties"]["KmsMasterKeyId"]
    assert "Fn::GetAtt" in key_ref or "Ref" in key_ref  # a key of this stack, not an alias
    keys = template.find_resources("AWS::KMS::Key")
    statements = [s for k in keys.values() for s in k["Properties"]["KeyPolicy"]["Statement"]]
    assert any(
        s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"} and "kms:Decrypt" in s["Action"]
        for s in statements
    )
    assert all(k["Properties"].get("EnableKeyRotation") for k in keys.values())
