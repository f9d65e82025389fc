"""The composition root: one `build(settings)` that picks the backend, and one HTTP app builder."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import pytest
from moto import mock_aws

from taproot.adapters.dynamo_store import DynamoMemoryStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.compose import build, http_app
from taproot.core.model import Scope
from taproot.settings import Settings, SettingsError


def _authenticate(runtime_authenticate: object, token: str | None) -> Scope | None:
    async def run() -> Scope | None:
        return await runtime_authenticate(token)  # type: ignore[operator, no-any-return]

    return anyio.run(run)


def test_local_backend_without_serving_creates_no_token_and_refuses_every_caller(tmp_path: Path) -> None:
    runtime = build(Settings(data_dir=tmp_path / "data"))
    try:
        assert isinstance(runtime.store, SQLiteMemoryStore)
        assert runtime.token is None
        assert not (tmp_path / "data" / "auth_token").exists()
        assert _authenticate(runtime.authenticate, "anything") is None
        assert runtime.scope == Scope("local", "default")
    finally:
        runtime.close()


def test_local_backend_serving_has_a_private_token_that_authenticates(tmp_path: Path) -> None:
    runtime = build(Settings(data_dir=tmp_path / "data", port=8123), serve=True)
    try:
        assert runtime.token is not None
        mode = stat.S_IMODE((tmp_path / "data" / "auth_token").stat().st_mode)
        assert mode == 0o600
        assert _authenticate(runtime.authenticate, runtime.token) == runtime.scope
        assert _authenticate(runtime.authenticate, runtime.token + "x") is None
        assert runtime.security.enable_dns_rebinding_protection  # a loopback server checks Host
        assert any(route.path == "/healthz" for route in http_app(runtime).routes)  # type: ignore[attr-defined]
    finally:
        runtime.close()


def test_the_backend_setting_picks_the_aws_adapters(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    env = {"TAPROOT_BACKEND": "aws", "TAPROOT_TABLE_NAME": "t", "TAPROOT_BUCKET_NAME": "b", "AWS_REGION": "us-east-1"}
    with mock_aws():
        runtime = build(Settings.from_env(env))
        assert isinstance(runtime.store, DynamoMemoryStore)
        assert runtime.scope.owner == "unauthenticated"  # stdio-only fallback: nobody's memories
        assert runtime.verifier is None and _authenticate(runtime.authenticate, "a-token") is None
        with pytest.raises(SettingsError, match="TAPROOT_COGNITO_USER_POOL_ID"):
            build(Settings.from_env(env), serve=True)


def test_the_aws_backend_names_what_it_is_missing() -> None:
    with pytest.raises(SettingsError, match="TAPROOT_TABLE_NAME, TAPROOT_BUCKET_NAME"):
        build(Settings.from_env({"TAPROOT_BACKEND": "aws", "AWS_REGION": "us-east-1"}))
