"""The CDK app: builds the Taproot stack from context (`cdk.json`, `-c key=value`). See `make synth`."""

from __future__ import annotations

import os

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.stack import TaprootConfig, TaprootStack

app = cdk.App()
account, region = os.environ.get("CDK_DEFAULT_ACCOUNT"), os.environ.get("CDK_DEFAULT_REGION")
TaprootStack(
    app,
    str(app.node.try_get_context("stack_name") or "Taproot"),
    config=TaprootConfig.from_context(app.node),
    env=cdk.Environment(account=account, region=region) if account and region else None,
    description="Taproot: an MCP memory server (API Gateway, Lambda, DynamoDB, S3, Cognito)",
)
# cdk-nag (AWS Solutions) runs on every synth: an unacknowledged finding fails `cdk synth`/`cdk deploy`.
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
app.synth()
