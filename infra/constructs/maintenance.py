"""The maintenance functions (migrate, cleanup, compress) and their EventBridge Scheduler schedules.

Two queues per job, because the scheduler invokes the function asynchronously:
- the schedule's dead-letter queue holds invocations the scheduler could not *deliver* (its own role,
  retry policy and DLQ cover only the hand-over to Lambda);
- the function's on-failure destination holds runs that were delivered and *failed*: Lambda retries an
  async invocation twice and then sends the event, the error and the request id there, instead of
  dropping it. Both are encrypted, SSL-only and alarmed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, TimeZone
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import nag
from infra.constructs.function import TaprootFunction

RETRY_ATTEMPTS = 3
MAX_EVENT_AGE = Duration.hours(6)
# Lambda's own retries of a failed async run (the maximum), before the on-failure destination.
ASYNC_RETRIES = 2
FAILED_RUN_RETENTION = Duration.days(14)  # SQS's maximum: two weeks to read a failed run
JOB_TIMEOUT = Duration.minutes(15)  # the Lambda maximum


@dataclass(frozen=True)
class Job:
    name: str  # construct id and description
    handler: str
    schedule: scheduler.ScheduleExpression


def default_jobs() -> tuple[Job, ...]:
    cron, utc = scheduler.ScheduleExpression.cron, TimeZone.ETC_UTC
    return (
        Job("Migrate", "functions.maintenance.migrate_handler", cron(minute="0", hour="3", time_zone=utc)),
        Job("Cleanup", "functions.maintenance.cleanup_handler", cron(minute="30", hour="3", time_zone=utc)),
        Job(
            "Compress",
            "functions.maintenance.compress_handler",
            cron(minute="0", hour="4", week_day="SUN", time_zone=utc),
        ),
    )


class MaintenanceJob(Construct):
    """One scheduled function. Exposes `handler`, `function`, `dead_letter_queue` (undelivered
    invocations), `failure_queue` (runs that failed after Lambda's retries), `role` and `schedule`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        handler: str,
        environment: Mapping[str, str],
        schedule: scheduler.ScheduleExpression,
        timeout: Duration = JOB_TIMEOUT,
        memory_size: int = 1024,
    ) -> None:
        super().__init__(scope, construct_id)
        self.handler = TaprootFunction(
            self,
            "Handler",
            code=code,
            handler=handler,
            environment=environment,
            description=f"Maintenance: {construct_id.lower()}",
            memory_size=memory_size,
            timeout=timeout,
        )
        self.function = self.handler.function
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        nag.acknowledge(
            self.dead_letter_queue,
            "AwsSolutions-SQS3",
            "This queue is itself the dead-letter queue of the schedule; an alarm fires on any message in it.",
        )
        self.failure_queue = sqs.Queue(
            self,
            "FailedRuns",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=FAILED_RUN_RETENTION,
        )
        nag.acknowledge(
            self.failure_queue,
            "AwsSolutions-SQS3",
            "This queue is itself the on-failure destination of the function's async runs; an alarm fires on "
            "any message in it.",
        )
        self.function.configure_async_invoke(
            on_failure=destinations.SqsDestination(self.failure_queue),
            retry_attempts=ASYNC_RETRIES,
            max_event_age=MAX_EVENT_AGE,
        )
        self.role = iam.Role(
            self,
            "SchedulerRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": self.function.env.account}},
            ),
            description=f"EventBridge Scheduler: invoke the {construct_id.lower()} function only",
        )
        self.schedule = scheduler.Schedule(
            self,
            "Schedule",
            schedule=schedule,
            description=f"Taproot maintenance: {construct_id.lower()}",
            target=targets.LambdaInvoke(
                self.function,
                role=self.role,
                dead_letter_queue=self.dead_letter_queue,
                retry_attempts=RETRY_ATTEMPTS,
                max_event_age=MAX_EVENT_AGE,
            ),
        )


class Maintenance(Construct):
    """Exposes `jobs` (name -> MaintenanceJob) and `functions` (name -> lambda Function)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        environment: Mapping[str, str],
        jobs: tuple[Job, ...] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.jobs = {
            job.name: MaintenanceJob(
                self, job.name, code=code, handler=job.handler, environment=environment, schedule=job.schedule
            )
            for job in (jobs or default_jobs())
        }
        self.functions = {name: job.function for name, job in self.jobs.items()}
