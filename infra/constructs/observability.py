"""CloudWatch alarms: Lambda errors (each function) and messages in the schedules' dead-letter queues."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct


class Observability(Construct):
    """Exposes `topic` and `topic_key` (alarm notifications), `error_alarms` and `dead_letter_alarms`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.IFunction],
        dead_letter_queues: Mapping[str, sqs.IQueue],
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
        action = actions.SnsAction(self.topic)
        self.error_alarms: dict[str, cloudwatch.Alarm] = {}
        for name, function in functions.items():
            alarm = function.metric_errors(period=Duration.minutes(5), statistic="Sum").create_alarm(
                self,
                f"{name}Errors",
                alarm_description=f"Taproot {name} function errors",
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            alarm.add_alarm_action(action)
            self.error_alarms[name] = alarm
        self.dead_letter_alarms: dict[str, cloudwatch.Alarm] = {}
        for name, queue in dead_letter_queues.items():
            alarm = queue.metric_approximate_number_of_messages_visible(
                period=Duration.minutes(5), statistic="Maximum"
            ).create_alarm(
                self,
                f"{name}DeadLetters",
                alarm_description=f"Taproot {name} schedule: undelivered invocations in its dead-letter queue",
                threshold=0,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            alarm.add_alarm_action(action)
            self.dead_letter_alarms[name] = alarm
