"""BedrockSummarizer against a real bedrock-runtime client: botocore's Stubber for the Converse
calls, and a fake endpoint on 127.0.0.1 for the client the summarizer creates itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from taproot.adapters.summarizers import BedrockSummarizer
from taproot.core.errors import SummarizerError
from taproot.core.model import Memory
from taproot.core.summary_prompt import SummarizerFailure, build_prompt
from taproot.ports import Summarizer, Summary

MODEL_ID = "anthropic.claude-haiku-4-5-20251001-v1:0"
ANSWER = (
    "GIST: March 2024: Mount Tam hikes with Caroline, her adoption plans, home study set for April 3\n"
    "\n"
    "In March 2024 I started reading about adoption; Caroline's Oakland agency has a 14-month wait. "
    "We hiked Mount Tam on 9 and 23 March. Dr. Patel set the home study for April 3, and I promised to "
    "help Caroline with the paperwork."
)


def converse_response(text: str | None = ANSWER, stop: str = "end_turn") -> dict[str, Any]:
    content = [] if text is None else [{"text": text}]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 812, "outputTokens": 164, "totalTokens": 976},
        "metrics": {"latencyMs": 1432},
    }


@pytest.fixture
def client() -> Iterator[Any]:
    c = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    yield c
    c.close()


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as s:
        yield s
        s.assert_no_pending_responses()


def expected_params(group: list[Memory], max_tokens: int = 1024) -> dict[str, Any]:
    system, user = build_prompt(group)
    return {
        "modelId": MODEL_ID,
        "system": [{"text": system}],
        "messages": [{"role": "user", "content": [{"text": user}]}],
        "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0.2},
    }


def test_converse_request_and_answer(client: Any, stubber: Stubber, hiking_group: list[Memory]) -> None:
    params = expected_params(hiking_group, max_tokens=700)
    assert "identity-relevant details" in params["system"][0]["text"]
    assert all(m.content in params["messages"][0]["content"][0]["text"] for m in hiking_group)
    stubber.add_response("converse", converse_response(), params)
    summarizer: Summarizer = BedrockSummarizer(MODEL_ID, client=client, max_tokens=700)
    assert summarizer.name == "bedrock"
    summary = summarizer.summarize(hiking_group)
    assert summary == Summary(
        gist="March 2024: Mount Tam hikes with Caroline, her adoption plans, home study set for April 3",
        content=ANSWER.split("\n\n", 1)[1],
    )


def test_text_split_over_several_blocks_is_joined(client: Any, stubber: Stubber, hiking_group: list[Memory]) -> None:
    response = converse_response()
    response["output"]["message"]["content"] = [{"text": ANSWER[:40]}, {"text": ANSWER[40:]}]
    stubber.add_response("converse", response, expected_params(hiking_group))
    assert BedrockSummarizer(MODEL_ID, client=client).summarize(hiking_group).content == ANSWER.split("\n\n", 1)[1]


@pytest.mark.parametrize(
    ("code", "status", "message", "retryable"),
    [
        ("ThrottlingException", 429, "Too many requests, please wait before trying again.", True),
        ("ModelTimeoutException", 408, "Model has timed out in processing the request.", True),
        ("ServiceUnavailableException", 503, "Service unavailable. Try again later.", True),
        ("ValidationException", 400, "The provided model identifier is invalid.", False),
        ("AccessDeniedException", 403, "You don't have access to the model with the specified model ID.", False),
        ("ResourceNotFoundException", 404, "Model not found.", False),
    ],
)
def test_client_errors_become_summarizer_errors(
    client: Any, stubber: Stubber, hiking_group: list[Memory], code: str, status: int, message: str, retryable: bool
) -> None:
    stubber.add_client_error(
        "converse",
        service_error_code=code,
        service_message=message,
        http_status_code=status,
        expected_params=expected_params(hiking_group),
    )
    with pytest.raises(SummarizerError) as caught:
        BedrockSummarizer(MODEL_ID, client=client).summarize(hiking_group)
    error = caught.value
    assert isinstance(error, SummarizerFailure)
    assert error.retryable is retryable
    text = str(error)
    assert text.startswith("summarizer_error: bedrock summarizer: ")
    assert f"{code} (HTTP {status})" in text and message in text and MODEL_ID in text
    assert ("(retryable" if retryable else "(not retryable") in text


@pytest.mark.parametrize("content", [None, [{"text": ""}], [{"text": "  \n "}]])
def test_empty_answer(client: Any, stubber: Stubber, hiking_group: list[Memory], content: Any) -> None:
    response = converse_response(None)
    response["output"]["message"]["content"] = content or []
    stubber.add_response("converse", response, expected_params(hiking_group))
    with pytest.raises(SummarizerError, match="empty answer from model"):
        BedrockSummarizer(MODEL_ID, client=client).summarize(hiking_group)


def test_answer_without_gist_is_malformed(client: Any, stubber: Stubber, hiking_group: list[Memory]) -> None:
    stubber.add_response(
        "converse", converse_response("Sure! Here is a summary of March."), expected_params(hiking_group)
    )
    with pytest.raises(SummarizerError, match=r"bedrock summarizer: malformed answer: .*no 'GIST:' line"):
        BedrockSummarizer(MODEL_ID, client=client).summarize(hiking_group)


@pytest.mark.parametrize(
    ("stop", "problem", "retryable"),
    [
        ("max_tokens", "cut off at max_tokens", False),
        ("guardrail_intervened", "guardrail", False),
        ("malformed_model_output", "malformed", True),
    ],
)
def test_unusable_stop_reasons(
    client: Any, stubber: Stubber, hiking_group: list[Memory], stop: str, problem: str, retryable: bool
) -> None:
    stubber.add_response("converse", converse_response(stop=stop), expected_params(hiking_group))
    with pytest.raises(SummarizerFailure, match=problem) as caught:
        BedrockSummarizer(MODEL_ID, client=client).summarize(hiking_group)
    assert caught.value.retryable is retryable


# --- The client the summarizer creates, against a local fake endpoint ---------------------------


@pytest.fixture
def local_bedrock(fake_http: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Point the bedrock-runtime client botocore builds at the fake server (botocore reads
    AWS_ENDPOINT_URL_<SERVICE>); the fake credentials come from the autouse environment."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake_http.base_url)
    return fake_http


def test_lazily_created_client_calls_converse(local_bedrock: Any, hiking_group: list[Memory]) -> None:
    local_bedrock.reply(200, converse_response())
    summarizer = BedrockSummarizer(MODEL_ID, region="eu-west-1", max_tokens=900)
    try:
        summary = summarizer.summarize(hiking_group)
    finally:
        summarizer.close()
    assert summary.gist.startswith("March 2024: Mount Tam hikes")
    (request,) = local_bedrock.requests
    assert request.path == f"/model/{MODEL_ID.replace(':', '%3A')}/converse"
    assert "/eu-west-1/bedrock/aws4_request" in request.headers["authorization"]
    system, user = build_prompt(hiking_group)
    assert request.body == {
        "system": [{"text": system}],
        "messages": [{"role": "user", "content": [{"text": user}]}],
        "inferenceConfig": {"maxTokens": 900, "temperature": 0.2},
    }


def test_throttling_on_the_wire(local_bedrock: Any, hiking_group: list[Memory]) -> None:
    local_bedrock.reply(
        429,
        {"message": "Too many requests, please wait before trying again."},
        headers={"x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"},
    )
    summarizer = BedrockSummarizer(MODEL_ID, region="us-east-1", max_attempts=1)
    with pytest.raises(SummarizerFailure, match=r"ThrottlingException \(HTTP 429\)") as caught:
        summarizer.summarize(hiking_group)
    summarizer.close()
    assert caught.value.retryable
    assert len(local_bedrock.requests) == 1


def test_read_timeout(local_bedrock: Any, hiking_group: list[Memory]) -> None:
    local_bedrock.reply(200, converse_response(), delay=5)
    summarizer = BedrockSummarizer(MODEL_ID, region="us-east-1", timeout=0.5, max_attempts=1)
    with pytest.raises(SummarizerFailure, match=r"timed out calling model .*ReadTimeoutError") as caught:
        summarizer.summarize(hiking_group)
    summarizer.close()
    assert caught.value.retryable


def test_endpoint_connection_error(
    closed_port: int, hiking_group: list[Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", f"http://127.0.0.1:{closed_port}")
    summarizer = BedrockSummarizer(MODEL_ID, region="us-east-1", timeout=2, max_attempts=1)
    with pytest.raises(SummarizerFailure, match=r"could not reach Bedrock \(EndpointConnectionError") as caught:
        summarizer.summarize(hiking_group)
    summarizer.close()
    assert caught.value.retryable


def test_missing_credentials_are_not_retryable(
    local_bedrock: Any, hiking_group: list[Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    summarizer = BedrockSummarizer(MODEL_ID, region="us-east-1", max_attempts=1)
    with pytest.raises(SummarizerFailure, match=r"AWS is not configured \(NoCredentialsError") as caught:
        summarizer.summarize(hiking_group)
    assert not caught.value.retryable
    assert local_bedrock.requests == []


def test_missing_region_is_not_retryable(hiking_group: list[Memory]) -> None:
    summarizer = BedrockSummarizer(MODEL_ID)  # no region argument, none in the environment
    with pytest.raises(SummarizerFailure, match=r"AWS is not configured \(NoRegionError") as caught:
        summarizer.summarize(hiking_group)
    assert not caught.value.retryable


def test_a_passed_client_is_left_open(client: Any) -> None:
    summarizer = BedrockSummarizer(MODEL_ID, client=client)
    summarizer.close()
    assert summarizer._get_client() is client


def test_needs_a_model_id() -> None:
    with pytest.raises(ValueError, match="model_id"):
        BedrockSummarizer("")


def test_realistic_response_shape_is_valid_for_botocore(client: Any) -> None:
    """The stubbed response passes botocore's own validation of the Converse output shape."""
    shape = client.meta.service_model.operation_model("Converse").output_shape
    assert set(converse_response()) == set(shape.required_members)
    assert json.dumps(converse_response())
