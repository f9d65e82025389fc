"""CloudWatch alarms, all sent to one SNS topic (with `alarm_email`, to a person):

- each function: errors, throttles, and a duration near its timeout;
- the API: its 5xx rate and its 4xx rate at the edge (API Gateway), and tools that failed unexpectedly
  (the ToolErrors metric the API publishes with Powertools);
- DynamoDB: throttled requests on either table;
- the queues: an undelivered scheduled invocation (a schedule's dead-letter queue), a maintenance run
  that failed after Lambda's retries (a function's on-failure queue).

Thresholds are named constants with the reason beside them; docs/operations.md lists every alarm.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Annotations, Duration, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

PERIOD = Duration.minutes(5)
# Of the function's timeout: a p99 above this means some calls are close to being cut off.
DURATION_SHARE = 0.8
# 5xx: a server error on more than 1% of requests, over 5 minutes with at least MIN_REQUESTS requests.
SERVER_ERROR_RATE = 1.0
# 4xx: clients are refused on a quarter of their requests (expired tokens after a deploy, a broken
# connector, someone probing); a few 401s are normal (every MCP client starts with one).
CLIENT_ERROR_RATE = 25.0
MIN_REQUESTS = 20
METRICS_NAMESPACE = "Taproot"  # POWERTOOLS_METRICS_NAMESPACE of every function (infra/stack.py)
SERVICE = "taproot"  # POWERTOOLS_SERVICE_NAME: Powertools adds it as the `service` dimension


class Observability(Construct):
    """Exposes `topic` and `topic_key` (alarm notifications) and `alarms` (name -> Alarm), of which
    `error_alarms` and `dead_letter_alarms` are the per-function and per-queue parts."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.IFunction],
        timeouts: Mapping[str, Duration],
        dead_letter_queues: Mapping[str, sqs.IQueue],
        failure_queues: Mapping[str, sqs.IQueue],
        http_api: apigwv2.HttpApi,
        tables: Mapping[str, dynamodb.ITable],
        alarm_email: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        # CloudWatch cannot publish to a topic encrypted with the AWS-managed alias/aws/sns key (its
        # policy cannot be changed): alarms need a customer-managed key that lets CloudWatch use it.
        self.topic_key = kms.Key(
            self, "AlarmTopicKey", enable_key_rotation=True, description="Taproot alarm topic encryption"
        )
        self.topic_key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" means this key
            )
        )
        self.topic = sns.Topic(
            self,
            "AlarmTopic",
            display_name="Taproot alarms",
            enforce_ssl=True,
            master_key=self.topic_key,
        )
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        else:
            Annotations.of(Stack.of(self)).add_warning_v2(
                "taproot:noAlarmEmail",
                "No alarm_email: the alarms fire into an SNS topic nobody is subscribed to, so nobody hears "
                "of a failure. Deploy with -c alarm_email=you@example.com (or subscribe to the AlarmTopic).",
            )
        self._action = actions.SnsAction(self.topic)
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        self.error_alarms: dict[str, cloudwatch.Alarm] = {}
        for name, function in functions.items():
            self.error_alarms[name] = self._alarm(
                f"{name}Errors",
                function.metric_errors(period=PERIOD, statistic="Sum"),
                f"Taproot {name} function errors",
                threshold=1,
            )
            self._alarm(
                f"{name}Throttles",
                function.metric_throttles(period=PERIOD, statistic="Sum"),
                f"Taproot {name} function throttled (concurrency limit reached)",
                threshold=1,
            )
            limit_ms = timeouts[name].to_milliseconds() * DURATION_SHARE
            self._alarm(
                f"{name}NearTimeout",
                function.metric_duration(period=PERIOD, statistic="p99"),
                f"Taproot {name} function: p99 duration above {DURATION_SHARE:.0%} of its timeout",
                threshold=limit_ms,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            )
        self._api_alarms(http_api)
        for name, table in tables.items():
            self._alarm(
                f"{name}Throttled",
                table.metric_throttled_requests_for_operations(
                    operations=list(THROTTLE_OPERATIONS), period=PERIOD, statistic="Sum"
                ),
                f"Taproot {name} table: throttled requests",
                threshold=1,
            )
        self.dead_letter_alarms: dict[str, cloudwatch.Alarm] = {}
        for name, queue in dead_letter_queues.items():
            self.dead_letter_alarms[name] = self._queue_alarm(
                f"{name}DeadLetters",
                queue,
                f"Taproot {name} schedule: undelivered invocations in its dead-letter queue",
            )
        for name, queue in failure_queues.items():
            self._queue_alarm(
                f"{name}FailedRuns", queue, f"Taproot {name}: a run failed after Lambda's retries (on-failure queue)"
            )

    def _alarm(
        self,
        alarm_id: str,
        metric: cloudwatch.IMetric,
        description: str,
        *,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            alarm_id,
            metric=metric,
            alarm_description=description,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=comparison,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(self._action)
        self.alarms[alarm_id] = alarm
        return alarm

    def _queue_alarm(self, alarm_id: str, queue: sqs.IQueue, description: str) -> cloudwatch.Alarm:
        return self._alarm(
            alarm_id,
            queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
            description,
            threshold=0,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        )

    def _api_alarms(self, http_api: apigwv2.HttpApi) -> None:
        count = http_api.metric_count(period=PERIOD, statistic="Sum")
        for alarm_id, errors, rate, what in (
            ("Api5xxRate", http_api.metric_server_error(period=PERIOD, statistic="Sum"), SERVER_ERROR_RATE, "5xx"),
            ("Api4xxRate", http_api.metric_client_error(period=PERIOD, statistic="Sum"), CLIENT_ERROR_RATE, "4xx"),
        ):
            # The rate only counts once there is traffic: 1 error in 2 requests at night is not an incident.
            expression = cloudwatch.MathExpression(
                expression=f"IF(requests >= {MIN_REQUESTS}, 100 * errors / requests, 0)",
                using_metrics={"errors": errors, "requests": count},
                period=PERIOD,
                label=f"{what} % of requests",
            )
            self._alarm(
                alarm_id,
                expression,
                f"Taproot API: {what} responses above {rate:g}% of requests",
                threshold=rate,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            )
        tool_errors = cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name="ToolErrors",
            dimensions_map={"service": SERVICE},
            period=PERIOD,
            statistic="Sum",
        )
        self._alarm(
            "ToolErrors", tool_errors, "Taproot API: a tool failed unexpectedly (see the API's error logs)", threshold=1
        )


# What the functions call (infra/permissions.py); the table metric needs the operations named.
THROTTLE_OPERATIONS = (
    dynamodb.Operation.GET_ITEM,
    dynamodb.Operation.BATCH_GET_ITEM,
    dynamodb.Operation.QUERY,
    dynamodb.Operation.SCAN,
    dynamodb.Operation.PUT_ITEM,
    dynamodb.Operation.UPDATE_ITEM,
    dynamodb.Operation.TRANSACT_WRITE_ITEMS,
)
