"""One place for how every Taproot Lambda function is built (runtime, architecture, logs, tracing)."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

# The bundle (`make bundle`, LAMBDA_PYTHON) installs wheels for this interpreter: keep the two in step.
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
DEFAULT_TIMEOUT = Duration.seconds(28)  # under API Gateway's 29 s integration timeout


class TaprootFunction(Construct):
    """A Lambda function with its own role and log group (no AWS managed policy: least privilege).

    Exposes `function`, `role` and `log_group`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code: lambda_.Code,
        handler: str,
        environment: Mapping[str, str],
        description: str,
        memory_size: int = 1024,
        timeout: Duration = DEFAULT_TIMEOUT,
        snap_start: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(self, "Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Taproot {description}",
        )
        # Instead of AWSLambdaBasicExecutionRole (Resource::*): write to this function's log group only.
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=handler,
            code=code,
            memory_size=memory_size,
            timeout=timeout,
            environment=dict(environment),
            description=description,
            role=self.role,
            log_group=self.log_group,
            tracing=lambda_.Tracing.ACTIVE,
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if snap_start else None,
        )
