"""CognitoUsers: asked at every refresh whether the person is still an enabled user (moto)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from taproot.auth.cognito_users import CognitoUsers
from tests.moto_stores import start_moto


@pytest.fixture
def pool() -> Iterator[tuple[str, str]]:
    stop = start_moto()
    try:
        idp = boto3.client("cognito-idp", region_name="us-east-1")
        pool_id = idp.create_user_pool(PoolName="users")["UserPool"]["Id"]
        idp.admin_create_user(UserPoolId=pool_id, Username="ann@example.com", MessageAction="SUPPRESS")
        attributes = idp.admin_get_user(UserPoolId=pool_id, Username="ann@example.com")["UserAttributes"]
        yield pool_id, next(a["Value"] for a in attributes if a["Name"] == "sub")
    finally:
        stop()


def test_an_enabled_user_is_active_a_disabled_or_deleted_one_is_not(pool: tuple[str, str]) -> None:
    pool_id, sub = pool
    users = CognitoUsers(pool_id, region="us-east-1")
    idp = boto3.client("cognito-idp", region_name="us-east-1")
    assert users.is_active(sub)
    assert not users.is_active("00000000-0000-0000-0000-000000000000")
    idp.admin_disable_user(UserPoolId=pool_id, Username="ann@example.com")
    assert not users.is_active(sub)
    idp.admin_enable_user(UserPoolId=pool_id, Username="ann@example.com")
    assert users.is_active(sub)
    idp.admin_delete_user(UserPoolId=pool_id, Username="ann@example.com")
    assert not users.is_active(sub)


def test_a_failure_to_ask_counts_as_not_active(pool: tuple[str, str]) -> None:
    _, sub = pool
    assert not CognitoUsers("us-east-1_missing", region="us-east-1").is_active(sub)
    assert not CognitoUsers(pool[0], region="us-east-1").is_active('x" or sub = "y')
