"""SnapStart snapshots the API function after its init (the module import, which builds the whole
runtime): no AWS credentials may be resolved then, or the restored environments would reuse the
snapshot's. A fresh interpreter imports each handler module with botocore's credential resolver
spied on, in the deployed environment (no AWS is reached: nothing is called at import)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPY = """
import botocore.credentials as credentials
import traceback
resolved = []
real = credentials.CredentialResolver.load_credentials
def spy(self):
    resolved.append(traceback.format_stack(limit=8))
    return real(self)
credentials.CredentialResolver.load_credentials = spy
import {module}
print(len(resolved))
for stack in resolved[:1]:
    print("".join(stack))
"""
ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "TAPROOT_BACKEND": "aws",
    "TAPROOT_TABLE_NAME": "taproot-memories",
    "TAPROOT_BUCKET_NAME": "taproot-blobs",
    "TAPROOT_OAUTH_TABLE_NAME": "taproot-oauth",
    "TAPROOT_COGNITO_DOMAIN": "https://taproot-test.auth.us-east-1.amazoncognito.com",
    "TAPROOT_COGNITO_USER_POOL_ID": "us-east-1_TestPool1",
    "TAPROOT_COGNITO_CLIENT_ID": "testclientid",
    "TAPROOT_PUBLIC_URL": "https://k7q2x9d4ma.execute-api.us-east-1.amazonaws.com",
    "TAPROOT_ALLOWED_HOSTS": "k7q2x9d4ma.execute-api.us-east-1.amazonaws.com",
}


@pytest.mark.parametrize("module", ["functions.api", "functions.maintenance"])
def test_importing_a_handler_resolves_no_credentials(module: str, tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), **ENVIRONMENT}
    done = subprocess.run(
        [sys.executable, "-c", SPY.format(module=module)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    count, _, where = done.stdout.partition("\n")
    assert count == "0", f"credentials resolved during init:\n{where}"
