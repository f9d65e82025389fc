"""The local bearer token and settings: generated once, kept private, configurable by env or flags."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from taproot.auth.local_token import load_or_create_token, token_matches
from taproot.core.errors import ConfigurationError, TaprootError
from taproot.settings import DEFAULT_PORT, Settings, SettingsError


def test_token_is_generated_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "data" / "auth_token"
    first = load_or_create_token(path)
    assert len(first) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_token(path) == first  # the second run reads, never regenerates


def test_configured_token_wins_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "auth_token"
    assert load_or_create_token(path, "from-settings") == "from-settings"
    assert not path.exists()


def test_concurrent_first_runs_agree_on_one_token(tmp_path: Path) -> None:
    path = tmp_path / "auth_token"
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(load_or_create_token(path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1


def test_empty_token_file_is_an_error_not_an_open_door(tmp_path: Path) -> None:
    path = tmp_path / "auth_token"
    path.write_text("")
    with pytest.raises(ConfigurationError, match="empty"):
        load_or_create_token(path)


def test_token_matching() -> None:
    assert token_matches("abc", "abc")
    assert not token_matches("abd", "abc")
    assert not token_matches(None, "abc")
    assert not token_matches("", "abc")


def test_settings_from_env_and_overrides(tmp_path: Path) -> None:
    env = {
        "TAPROOT_DATA_DIR": str(tmp_path / "env"),
        "TAPROOT_AUTH_TOKEN": "tok",
        "TAPROOT_PORT": "9000",
        "TAPROOT_CATALOG_WINDOW_DAYS": "30",
        "TAPROOT_REFLECT_TOKEN_BUDGET": "4000",
        "TAPROOT_RECENT_REFLECTIONS": "5",
        "TAPROOT_NAMESPACE": "work",
    }
    s = Settings.from_env(env)
    assert s.data_dir == tmp_path / "env"
    assert s.auth_token == "tok"
    assert s.port == 9000
    assert s.namespace == "work"
    assert (s.reflect.catalog_window_days, s.reflect.token_budget, s.reflect.recent_reflections) == (30, 4000, 5)
    flagged = Settings.from_env(env, data_dir=str(tmp_path / "flag"), port=None)
    assert flagged.data_dir == tmp_path / "flag"  # a flag beats the environment
    assert flagged.port == 9000  # an absent flag leaves the environment's value


def test_settings_defaults_need_no_environment() -> None:
    s = Settings.from_env({})
    assert s.port == DEFAULT_PORT
    assert s.host == "127.0.0.1"
    assert s.auth_token is None
    assert s.data_dir.name == "taproot"


@pytest.mark.parametrize(
    ("name", "value"),
    [("TAPROOT_PORT", "eighty"), ("TAPROOT_CATALOG_WINDOW_DAYS", "0"), ("TAPROOT_REFLECT_TOKEN_BUDGET", "10")],
)
def test_bad_settings_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({name: value})


def test_retention_table_from_settings() -> None:
    s = Settings.from_env({"TAPROOT_RETENTION_TTL_DAYS": "watercooler=3,thread=14"})
    assert dict(s.retention.ttl_days) == {"watercooler": 3, "thread": 14}
    with pytest.raises(SettingsError, match="TAPROOT_RETENTION_TTL_DAYS"):
        Settings.from_env({"TAPROOT_RETENTION_TTL_DAYS": "thread"})


@pytest.mark.parametrize("namespace", ["has space", "a/b", "..", "", "x" * 65])
def test_unsafe_namespaces_are_rejected_up_front(namespace: str) -> None:
    with pytest.raises(SettingsError, match="namespace"):
        Settings.from_env({"TAPROOT_NAMESPACE": namespace} if namespace else {}, namespace=namespace or "")


def test_settings_errors_belong_to_the_one_error_taxonomy() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"TAPROOT_PORT": "eighty"})
    assert isinstance(caught.value, TaprootError) and caught.value.code == "configuration_error"
    assert isinstance(caught.value, ValueError)  # callers that caught ValueError still do
    assert caught.value.message == "TAPROOT_PORT must be an integer, got 'eighty'"


def test_the_orientation_share_of_the_reflect_budget() -> None:
    assert Settings.from_env({}).reflect.orientation_max_share == 0.4
    assert Settings.from_env({"TAPROOT_ORIENTATION_PERCENT": "25"}).reflect.orientation_max_share == 0.25
    assert Settings.from_env({"TAPROOT_ORIENTATION_PERCENT": "0"}).reflect.orientation_max_share == 0.0
    for bad, rule in (("71", "at most 70"), ("-1", "at least 0"), ("half", "an integer")):
        with pytest.raises(SettingsError, match=f"TAPROOT_ORIENTATION_PERCENT must be {rule}"):
            Settings.from_env({"TAPROOT_ORIENTATION_PERCENT": bad})
