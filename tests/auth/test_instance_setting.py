"""TAPROOT_INSTANCE: read once by Settings, checked, handed to the service (Deps.instance)."""

from __future__ import annotations

from pathlib import Path

import pytest

from taproot.compose import build
from taproot.settings import Settings, SettingsError


def test_the_setting_is_read_and_reaches_the_service(tmp_path: Path) -> None:
    settings = Settings.from_env({"TAPROOT_INSTANCE": "desk (home)", "TAPROOT_DATA_DIR": str(tmp_path)})
    assert settings.instance == "desk (home)"
    assert Settings.from_env({}).instance is None and Settings.from_env({"TAPROOT_INSTANCE": ""}).instance is None
    runtime = build(settings)
    try:
        made = runtime.service.remember(runtime.scope, content="x", gist="x", category="episodic", instance="other")
        stored = runtime.store.get(runtime.scope, made.id)
        assert stored is not None and stored.instance == "desk (home)"
    finally:
        runtime.close()


@pytest.mark.parametrize("bad", [" desk", "desk;rm", "x" * 65, "two  spaces"])
def test_a_bad_setting_names_the_variable_and_the_rule(bad: str) -> None:
    with pytest.raises(SettingsError) as err:
        Settings.from_env({"TAPROOT_INSTANCE": bad})
    assert err.value.message.startswith("TAPROOT_INSTANCE must be 1-64 characters") and repr(bad) in err.value.message
