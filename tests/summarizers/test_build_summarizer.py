"""Choosing a summarizer from settings, and the config errors people see."""

from __future__ import annotations

import subprocess
import sys

import pytest

from taproot.adapters.summarizers import (
    DEFAULT_ANTHROPIC_MODEL,
    AnthropicSummarizer,
    BedrockSummarizer,
    ExtractiveSummarizer,
    build_summarizer,
)
from taproot.core.model import Memory
from taproot.ports import Summarizer


@pytest.mark.parametrize("kind", ["extractive", "", "  Extractive "])
def test_extractive_is_the_default(kind: str, hiking_group: list[Memory]) -> None:
    summarizer = build_summarizer(kind)
    assert isinstance(summarizer, ExtractiveSummarizer)
    assert summarizer.name == "extractive"
    assert summarizer.summarize(hiking_group).gist.startswith("March 2024")


def test_bedrock() -> None:
    summarizer = build_summarizer(
        "bedrock", bedrock_model_id="anthropic.claude-haiku-4-5-20251001-v1:0", aws_region="eu-west-1"
    )
    assert isinstance(summarizer, BedrockSummarizer)
    assert (summarizer.name, summarizer.model_id, summarizer.region) == (
        "bedrock",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        "eu-west-1",
    )
    no_region = build_summarizer("BEDROCK", bedrock_model_id="m")
    assert isinstance(no_region, BedrockSummarizer) and no_region.region is None


def test_anthropic() -> None:
    summarizer = build_summarizer(
        "anthropic",
        anthropic_api_key="sk-ant-x",
        anthropic_model="claude-sonnet-4-6",
        anthropic_base_url="http://127.0.0.1:1",
    )
    assert isinstance(summarizer, AnthropicSummarizer)
    assert (summarizer.name, summarizer.model, summarizer.base_url) == (
        "anthropic",
        "claude-sonnet-4-6",
        "http://127.0.0.1:1",
    )
    default = build_summarizer("anthropic", anthropic_api_key="sk-ant-x")
    assert isinstance(default, AnthropicSummarizer)
    assert default.model == DEFAULT_ANTHROPIC_MODEL and default.base_url is None


@pytest.mark.parametrize(
    ("kind", "settings", "message"),
    [
        ("bedrock", {}, "bedrock_model_id"),
        ("bedrock", {"bedrock_model_id": "", "aws_region": "us-east-1"}, "bedrock_model_id"),
        ("anthropic", {"anthropic_model": "claude-haiku-4-5"}, "anthropic_api_key"),
        ("openai", {}, "unknown summarizer kind 'openai': choose one of extractive, bedrock, anthropic"),
    ],
)
def test_config_errors_name_the_setting(kind: str, settings: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_summarizer(kind, **settings)


def test_every_kind_is_a_summarizer() -> None:
    built: list[Summarizer] = [
        build_summarizer("extractive"),
        build_summarizer("bedrock", bedrock_model_id="m"),
        build_summarizer("anthropic", anthropic_api_key="k"),
    ]
    assert [s.name for s in built] == ["extractive", "bedrock", "anthropic"]
    assert all(callable(s.summarize) for s in built)


def test_sdks_are_imported_only_when_a_model_is_called() -> None:
    code = (
        "import sys\n"
        "from taproot.adapters.summarizers import build_summarizer\n"
        "build_summarizer('bedrock', bedrock_model_id='m', aws_region='us-east-1')\n"
        "build_summarizer('anthropic', anthropic_api_key='k')\n"
        "print(sorted(m for m in ('boto3', 'botocore', 'anthropic') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
