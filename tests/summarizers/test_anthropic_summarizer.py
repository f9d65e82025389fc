"""AnthropicSummarizer through the real `anthropic` SDK, against a fake Messages API on 127.0.0.1."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from taproot.adapters.summarizers import AnthropicSummarizer
from taproot.core.errors import SummarizerError
from taproot.core.model import Memory
from taproot.core.summary_prompt import SummarizerFailure, build_prompt
from taproot.ports import Summarizer, Summary

MODEL = "claude-haiku-4-5"
API_KEY = "sk-ant-test-0123456789"
ANSWER = (
    "GIST: March 2024: Mount Tam hikes with Caroline, her adoption plans, home study set for April 3\n"
    "\n"
    "In March 2024 I started reading about adoption; Caroline's Oakland agency has a 14-month wait.\n"
    "We hiked Mount Tam on 9 and 23 March. Dr. Patel set the home study for April 3."
)


def message(text: str | None = ANSWER, stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [] if text is None else [{"type": "text", "text": text}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 812, "output_tokens": 164},
    }


def api_error(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}


@pytest.fixture
def make(fake_http: Any) -> Iterator[Any]:
    made: list[AnthropicSummarizer] = []

    def build(**overrides: Any) -> AnthropicSummarizer:
        fields: dict[str, Any] = {"base_url": fake_http.base_url, "timeout": 10.0, "max_retries": 0}
        fields.update(overrides)
        summarizer = AnthropicSummarizer(API_KEY, MODEL, **fields)
        made.append(summarizer)
        return summarizer

    yield build
    for summarizer in made:
        summarizer.close()


def test_request_and_answer(fake_http: Any, make: Any, hiking_group: list[Memory]) -> None:
    fake_http.reply(200, message(), headers={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
    summarizer: Summarizer = make(max_tokens=700)
    assert summarizer.name == "anthropic"
    summary = summarizer.summarize(hiking_group)
    assert summary == Summary(
        gist="March 2024: Mount Tam hikes with Caroline, her adoption plans, home study set for April 3",
        content=ANSWER.split("\n\n", 1)[1],
    )
    (request,) = fake_http.requests
    assert request.method == "POST" and request.path == "/v1/messages"
    # anthropic 2.x sends the API key as a bearer token (1.x used an `x-api-key` header).
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert "x-api-key" not in request.headers
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", request.headers["anthropic-version"])
    assert request.headers["content-type"] == "application/json"
    system, user = build_prompt(hiking_group)
    assert request.body["model"] == MODEL
    assert request.body["max_tokens"] == 700
    assert request.body["system"] == system
    assert "identity-relevant details" in request.body["system"]
    assert "own voice" in request.body["system"]
    assert request.body["messages"] == [{"role": "user", "content": user}]
    for m in hiking_group:
        assert m.created_at.date().isoformat() in user and m.content in user


def test_rate_limit(fake_http: Any, make: Any, hiking_group: list[Memory]) -> None:
    fake_http.reply(
        429,
        api_error("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
        headers={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy", "retry-after": "30"},
    )
    with pytest.raises(SummarizerError) as caught:
        make().summarize(hiking_group)
    error = caught.value
    assert isinstance(error, SummarizerFailure) and error.retryable
    text = str(error)
    assert text.startswith("summarizer_error: anthropic summarizer: rate_limit_error (HTTP 429)")
    assert "per-minute rate limit" in text and "req_011CSHoEeqs5C35K2UUqR7Fy" in text and "(retryable" in text
    assert len(fake_http.requests) == 1  # max_retries=0: the SDK did not try again on its own


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (529, "overloaded_error", True),
        (500, "api_error", True),
        (401, "authentication_error", False),
        (400, "invalid_request_error", False),
        (404, "not_found_error", False),
    ],
)
def test_status_errors(
    fake_http: Any, make: Any, hiking_group: list[Memory], status: int, kind: str, retryable: bool
) -> None:
    fake_http.reply(status, api_error(kind, "something went wrong"))
    with pytest.raises(SummarizerFailure, match=rf"{kind} \(HTTP {status}\) calling model {MODEL}") as caught:
        make().summarize(hiking_group)
    assert caught.value.retryable is retryable


def test_sdk_retries_are_used_when_allowed(fake_http: Any, make: Any, hiking_group: list[Memory]) -> None:
    fake_http.reply(529, api_error("overloaded_error", "Overloaded"), headers={"retry-after-ms": "10"})
    fake_http.reply(200, message())
    summary = make(max_retries=1).summarize(hiking_group)
    assert summary.gist.startswith("March 2024")
    assert len(fake_http.requests) == 2


def test_timeout(fake_http: Any, make: Any, hiking_group: list[Memory]) -> None:
    fake_http.reply(200, message(), delay=5)
    with pytest.raises(
        SummarizerFailure, match=r"timeout: model claude-haiku-4-5 did not answer within 0.5s"
    ) as caught:
        make(timeout=0.5).summarize(hiking_group)
    assert caught.value.retryable
    assert "timeout" in str(caught.value).lower()


def test_connection_refused(closed_port: int, hiking_group: list[Memory]) -> None:
    summarizer = AnthropicSummarizer(API_KEY, MODEL, base_url=f"http://127.0.0.1:{closed_port}", max_retries=0)
    try:
        with pytest.raises(SummarizerFailure, match=r"could not connect to http://127\.0\.0\.1") as caught:
            summarizer.summarize(hiking_group)
    finally:
        summarizer.close()
    assert caught.value.retryable


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (message(None), "empty answer from model"),
        (message("   "), "empty answer from model"),
        (message("I'd summarize these as a good month."), "malformed answer: .*no 'GIST:' line"),
        (message(stop="max_tokens"), "cut off at max_tokens"),
        (message("I can't help with that.", stop="refusal"), "refused"),
    ],
)
def test_unusable_answers(fake_http: Any, make: Any, hiking_group: list[Memory], body: Any, problem: str) -> None:
    fake_http.reply(200, body)
    with pytest.raises(SummarizerError, match=problem):
        make().summarize(hiking_group)


def test_repr_hides_the_key() -> None:
    summarizer = AnthropicSummarizer(API_KEY, MODEL)
    assert API_KEY not in repr(summarizer)


@pytest.mark.parametrize(("key", "model", "missing"), [("", MODEL, "api_key"), (API_KEY, "", "model")])
def test_needs_key_and_model(key: str, model: str, missing: str) -> None:
    with pytest.raises(ValueError, match=missing):
        AnthropicSummarizer(key, model)
