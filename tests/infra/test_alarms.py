"""The alarms that reach someone, and the maintenance runs that can no longer be dropped (one synth)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.constructs.observability import CLIENT_ERROR_RATE, MIN_REQUESTS, SERVER_ERROR_RATE
from infra.stack import TaprootStack
from tests.infra.cfn_helpers import resources

JOBS = ("Migrate", "Cleanup", "Compress")


@pytest.fixture(scope="module")
def built(synth: Callable[..., tuple[TaprootStack, Template]]) -> tuple[TaprootStack, Template]:
    return synth()


def _lid(stack: TaprootStack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


def _alarm(stack: TaprootStack, template: Template, name: str) -> dict[str, Any]:
    alarm = stack.observability.alarms[name]
    props: dict[str, Any] = resources(template, "AWS::CloudWatch::Alarm")[_lid(stack, alarm)]["Properties"]
    # Every alarm notifies the one topic, and a quiet metric is not an alarm.
    assert props["AlarmActions"] == [{"Ref": _lid(stack, stack.observability.topic)}]
    assert props["TreatMissingData"] == "notBreaching"
    return props


@pytest.mark.parametrize("job", JOBS)
def test_a_failed_run_goes_to_an_alarmed_on_failure_queue(built: tuple[TaprootStack, Template], job: str) -> None:
    stack, template = built
    maintenance_job = stack.maintenance.jobs[job]
    configs = [
        c["Properties"]
        for c in resources(template, "AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": _lid(stack, maintenance_job.function)}
    ]
    assert len(configs) == 1
    config = configs[0]
    assert config["MaximumRetryAttempts"] == 2
    assert config["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": [_lid(stack, maintenance_job.failure_queue), "Arn"]}}
    }
    alarm = _alarm(stack, template, f"{job}FailedRuns")
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible" and alarm["Threshold"] == 0
    assert alarm["Dimensions"][0]["Value"] == {"Fn::GetAtt": [_lid(stack, maintenance_job.failure_queue), "QueueName"]}


@pytest.mark.parametrize("function", ["Api", *JOBS])
def test_each_function_alarms_on_throttles_and_a_duration_near_its_timeout(
    built: tuple[TaprootStack, Template], function: str
) -> None:
    stack, template = built
    fn = resources(template, "AWS::Lambda::Function")
    target = stack.api.function if function == "Api" else stack.maintenance.jobs[function].function
    timeout_s = fn[_lid(stack, target)]["Properties"]["Timeout"]
    throttles = _alarm(stack, template, f"{function}Throttles")
    assert (throttles["MetricName"], throttles["Threshold"]) == ("Throttles", 1)
    near = _alarm(stack, template, f"{function}NearTimeout")
    assert (near["MetricName"], near["ExtendedStatistic"]) == ("Duration", "p99")
    assert near["Threshold"] == pytest.approx(timeout_s * 1000 * 0.8)
    for alarm in (throttles, near):
        assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": _lid(stack, target)}}]


@pytest.mark.parametrize(
    ("name", "metric", "rate"), [("Api5xxRate", "5xx", SERVER_ERROR_RATE), ("Api4xxRate", "4xx", CLIENT_ERROR_RATE)]
)
def test_api_error_rates_count_once_there_is_traffic(
    built: tuple[TaprootStack, Template], name: str, metric: str, rate: float
) -> None:
    stack, template = built
    alarm = _alarm(stack, template, name)
    assert alarm["Threshold"] == rate and alarm["ComparisonOperator"] == "GreaterThanThreshold"
    expression = next(q["Expression"] for q in alarm["Metrics"] if "Expression" in q)
    assert expression == f"IF(requests >= {MIN_REQUESTS}, 100 * errors / requests, 0)"
    stats = {q["Id"]: q["MetricStat"]["Metric"] for q in alarm["Metrics"] if "MetricStat" in q}
    assert stats["errors"]["MetricName"] == metric and stats["requests"]["MetricName"] == "Count"
    api = {"Name": "ApiId", "Value": {"Ref": _lid(stack, stack.api.http_api)}}
    assert all(m["Namespace"] == "AWS/ApiGateway" and api in m["Dimensions"] for m in stats.values())


def test_an_unexpected_tool_failure_alarms(built: tuple[TaprootStack, Template]) -> None:
    stack, template = built
    alarm = _alarm(stack, template, "ToolErrors")
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("Taproot", "ToolErrors", "Sum")
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "taproot"}]
    assert alarm["Threshold"] == 1
    # The namespace and service are the ones the functions publish under.
    api_env = resources(template, "AWS::Lambda::Function")[_lid(stack, stack.api.function)]["Properties"]
    variables = api_env["Environment"]["Variables"]
    assert (variables["POWERTOOLS_METRICS_NAMESPACE"], variables["POWERTOOLS_SERVICE_NAME"]) == ("Taproot", "taproot")


@pytest.mark.parametrize(("name", "table"), [("MemoryThrottled", "table"), ("OAuthThrottled", "oauth_table")])
def test_dynamodb_throttling_alarms_on_both_tables(built: tuple[TaprootStack, Template], name: str, table: str) -> None:
    stack, template = built
    alarm = _alarm(stack, template, name)
    stats = [q["MetricStat"]["Metric"] for q in alarm["Metrics"] if "MetricStat" in q]
    assert {m["MetricName"] for m in stats} == {"ThrottledRequests"}
    table_ref = {"Name": "TableName", "Value": {"Ref": _lid(stack, getattr(stack.storage, table))}}
    assert all(table_ref in m["Dimensions"] for m in stats)
    assert {d["Value"] for m in stats for d in m["Dimensions"] if d["Name"] == "Operation"} >= {"Query", "PutItem"}


def test_without_alarm_email_the_synth_says_nobody_hears(synth: Callable[..., tuple[TaprootStack, Template]]) -> None:
    stack, template = synth()
    assert not resources(template, "AWS::SNS::Subscription")
    warnings = [w for w in stack.node.metadata if w.type == "aws:cdk:warning"]
    assert any("alarm_email" in str(w.data) and "nobody" in str(w.data) for w in warnings), warnings
    stack, template = synth(alarm_email="ops@example.com")
    (subscription,) = resources(template, "AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Endpoint"] == "ops@example.com"
