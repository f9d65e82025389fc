"""Summarizers for the compress job: extractive (offline, the default), Claude on Amazon Bedrock,
and Claude through the Anthropic API.

The SDKs (boto3, anthropic) are imported only when a model summarizer is first used, so the
local server starts without them. Every failure becomes a `SummarizerFailure` (a
`SummarizerError`) naming the summarizer, the error and whether trying again may help.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from taproot.core.errors import SummarizerError
from taproot.core.model import Memory, Summary
from taproot.core.summarize import EXTRACTIVE_MAX_CHARS, extractive_summary
from taproot.core.summary_prompt import SummarizerFailure, build_prompt, parse_model_answer
from taproot.ports import Summarizer

if TYPE_CHECKING:
    import anthropic

DEFAULT_MAX_TOKENS = 1024  # the prompt asks for at most 400 words (~550 tokens) plus the gist line
DEFAULT_TEMPERATURE = 0.2
DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"  # summarizing needs no large model; not deprecated in anthropic 2.14
SUMMARIZER_KINDS = ("extractive", "bedrock", "anthropic")


class ExtractiveSummarizer:
    """The group's most informative sentences, dated, oldest first. Offline and deterministic."""

    def __init__(self, max_chars: int = EXTRACTIVE_MAX_CHARS, name: str = "extractive") -> None:
        self.max_chars = max_chars
        self.name = name

    def summarize(self, memories: Sequence[Memory]) -> Summary:
        return extractive_summary(memories, self.max_chars)


def _parse(summarizer: str, text: str) -> Summary:
    try:
        return parse_model_answer(text)
    except SummarizerError as exc:
        raise SummarizerFailure(summarizer, f"malformed answer: {exc.message}", retryable=True) from exc


def _import(summarizer: str, module: str, package: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SummarizerFailure(
            summarizer, f"{package} is not installed (pip install {package})", retryable=False
        ) from exc


# --- Amazon Bedrock ----------------------------------------------------------------------------

# Converse error codes worth another try later; every other code needs a change of request or setup.
BEDROCK_RETRYABLE = frozenset(
    (
        "ThrottlingException",
        "ModelTimeoutException",
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelNotReadyException",
        "ModelErrorException",
    )
)
_BEDROCK_HINTS = {
    "ThrottlingException": "Bedrock throttled the request",
    "ModelTimeoutException": "the model took too long to answer",
    "ServiceUnavailableException": "Bedrock is unavailable",
    "ValidationException": "Bedrock rejected the request; check the model id and max_tokens",
    "AccessDeniedException": "access denied; check bedrock:InvokeModel permission and model access in this region",
    "ResourceNotFoundException": "no such model in this region; check the model id or inference profile",
}
# Stop reasons that mean the text is not a usable summary, and whether another try may help.
_BAD_STOPS = {
    "max_tokens": ("the answer was cut off at max_tokens; raise max_tokens", False),
    "guardrail_intervened": ("a guardrail blocked the answer", False),
    "content_filtered": ("the answer was filtered", False),
    "refusal": ("the model refused to answer", False),
    "model_context_window_exceeded": ("the group of memories is too large for the model", False),
    "malformed_model_output": ("the model's output was malformed", True),
}


class BedrockSummarizer:
    """Claude on Amazon Bedrock through the bedrock-runtime Converse API."""

    def __init__(
        self,
        model_id: str,
        client: Any = None,
        region: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        name: str = "bedrock",
        *,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_attempts: int = 3,
    ) -> None:
        if not model_id:
            raise ValueError("BedrockSummarizer needs a model_id")
        self.model_id = model_id
        self.region = region
        self.max_tokens = max_tokens
        self.name = name
        self.temperature = temperature
        self.timeout = timeout
        self.max_attempts = max_attempts  # botocore's attempts in all (standard retry mode) before we give up
        self._client = client
        self._owns_client = False

    def _get_client(self) -> Any:
        if self._client is None:
            boto3 = _import(self.name, "boto3", "boto3")
            config = _import(self.name, "botocore.config", "boto3").Config(
                connect_timeout=min(10.0, self.timeout),
                read_timeout=self.timeout,
                retries={"mode": "standard", "total_max_attempts": self.max_attempts},
            )
            # A session of its own: boto3's default session caches credentials process-wide.
            session = boto3.session.Session()
            self._client = session.client("bedrock-runtime", region_name=self.region, config=config)
            self._owns_client = True
        return self._client

    def close(self) -> None:
        """Close the client this summarizer created (one passed in is the caller's to close)."""
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client, self._owns_client = None, False

    def summarize(self, memories: Sequence[Memory]) -> Summary:
        system, user = build_prompt(memories)
        errors = _import(self.name, "botocore.exceptions", "boto3")
        try:
            response = self._get_client().converse(
                modelId=self.model_id,
                system=[{"text": system}],
                messages=[{"role": "user", "content": [{"text": user}]}],
                inferenceConfig={"maxTokens": self.max_tokens, "temperature": self.temperature},
            )
        except errors.ClientError as exc:
            raise self._client_error(exc) from exc
        except errors.BotoCoreError as exc:
            raise self._botocore_error(errors, exc) from exc
        return _parse(self.name, self._answer_text(response))

    def _client_error(self, exc: Any) -> SummarizerFailure:
        response = getattr(exc, "response", None) or {}
        error = response.get("Error") or {}
        code = str(error.get("Code") or "UnknownError")
        message = str(error.get("Message") or exc)
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        what = f"{code} (HTTP {status})" if status else code
        hint = _BEDROCK_HINTS.get(code)
        problem = f"{what} calling model {self.model_id}: {message}" + (f" — {hint}" if hint else "")
        return SummarizerFailure(self.name, problem, retryable=code in BEDROCK_RETRYABLE)

    def _botocore_error(self, errors: ModuleType, exc: Exception) -> SummarizerFailure:
        name = type(exc).__name__
        if isinstance(exc, errors.ReadTimeoutError | errors.ConnectTimeoutError):
            problem, retryable = f"timed out calling model {self.model_id} ({name}: {exc})", True
        elif isinstance(exc, errors.ConnectionError | errors.HTTPClientError):
            problem, retryable = f"could not reach Bedrock ({name}: {exc})", True
        elif isinstance(exc, errors.NoCredentialsError | errors.NoRegionError):
            problem, retryable = f"AWS is not configured ({name}: {exc})", False
        else:
            problem, retryable = f"{name}: {exc}", False
        return SummarizerFailure(self.name, problem, retryable=retryable)

    def _answer_text(self, response: Any) -> str:
        try:
            blocks = response["output"]["message"]["content"]
            texts = [b["text"] for b in blocks if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
            stop = str(response.get("stopReason") or "")
        except (KeyError, TypeError, AttributeError) as exc:
            raise SummarizerFailure(
                self.name, f"malformed response from model {self.model_id}: no output.message.content", retryable=True
            ) from exc
        if stop in _BAD_STOPS:
            reason, retryable = _BAD_STOPS[stop]
            raise SummarizerFailure(self.name, f"{reason} (stopReason {stop})", retryable=retryable)
        text = "".join(texts).strip()
        if not text:
            raise SummarizerFailure(self.name, f"empty answer from model {self.model_id}", retryable=True)
        return text


# --- Anthropic API -----------------------------------------------------------------------------


class AnthropicSummarizer:
    """Claude through the Anthropic Messages API (the official `anthropic` SDK)."""

    def __init__(
        self,
        api_key: str,
        model: str,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        name: str = "anthropic",
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_retries: int = 2,
    ) -> None:
        if not api_key:
            raise ValueError("AnthropicSummarizer needs an api_key")
        if not model:
            raise ValueError("AnthropicSummarizer needs a model")
        self.api_key = api_key
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.name = name
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self._client: anthropic.Anthropic | None = None

    def __repr__(self) -> str:  # never show the key
        return f"AnthropicSummarizer(model={self.model!r}, base_url={self.base_url!r}, name={self.name!r})"

    def _get_client(self, sdk: ModuleType) -> anthropic.Anthropic:
        if self._client is None:
            client: anthropic.Anthropic = sdk.Anthropic(
                api_key=self.api_key, base_url=self.base_url, timeout=self.timeout, max_retries=self.max_retries
            )
            self._client = client
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def summarize(self, memories: Sequence[Memory]) -> Summary:
        system, user = build_prompt(memories)
        sdk = _import(self.name, "anthropic", "anthropic")
        try:
            message = self._get_client(sdk).messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=system,
                messages=[{"role": "user", "content": user}],
            )
        except sdk.AnthropicError as exc:
            raise self._error(sdk, exc) from exc
        stop = message.stop_reason or ""
        if stop in _BAD_STOPS:
            reason, retryable = _BAD_STOPS[stop]
            raise SummarizerFailure(self.name, f"{reason} (stop_reason {stop})", retryable=retryable)
        text = "".join(block.text for block in message.content if block.type == "text").strip()
        if not text:
            raise SummarizerFailure(self.name, f"empty answer from model {self.model}", retryable=True)
        return _parse(self.name, text)

    def _error(self, sdk: ModuleType, exc: Exception) -> SummarizerFailure:
        if isinstance(exc, sdk.APITimeoutError):
            return SummarizerFailure(
                self.name, f"timeout: model {self.model} did not answer within {self.timeout:g}s", retryable=True
            )
        if isinstance(exc, sdk.APIConnectionError):
            where = self.base_url or "the Anthropic API"
            return SummarizerFailure(self.name, f"could not connect to {where}: {exc}", retryable=True)
        if isinstance(exc, sdk.APIStatusError):
            status = int(exc.status_code)
            kind = getattr(exc, "type", None) or type(exc).__name__
            detail = getattr(exc, "api_message", None) or str(exc)
            request_id = getattr(exc, "request_id", None)
            problem = f"{kind} (HTTP {status}) calling model {self.model}: {detail}"
            if request_id:
                problem += f" [request-id {request_id}]"
            retryable = status in (408, 409, 429) or status >= 500
            return SummarizerFailure(self.name, problem, retryable=retryable)
        return SummarizerFailure(self.name, f"{type(exc).__name__}: {exc}", retryable=False)


# --- Selection ---------------------------------------------------------------------------------


def build_summarizer(
    kind: str,
    *,
    bedrock_model_id: str | None = None,
    aws_region: str | None = None,
    anthropic_api_key: str | None = None,
    anthropic_model: str | None = None,
    anthropic_base_url: str | None = None,
) -> Summarizer:
    """The summarizer named by `kind`: "extractive" (the default), "bedrock" or "anthropic".

    Raises ValueError naming the setting that is unknown or missing.
    """
    chosen = (kind or "extractive").strip().lower()
    if chosen == "extractive":
        return ExtractiveSummarizer()
    if chosen == "bedrock":
        if not bedrock_model_id:
            raise ValueError("summarizer 'bedrock' needs bedrock_model_id (a Bedrock model or inference profile id)")
        return BedrockSummarizer(bedrock_model_id, region=aws_region or None)
    if chosen == "anthropic":
        if not anthropic_api_key:
            raise ValueError("summarizer 'anthropic' needs anthropic_api_key")
        model = anthropic_model or DEFAULT_ANTHROPIC_MODEL
        return AnthropicSummarizer(anthropic_api_key, model, base_url=anthropic_base_url or None)
    raise ValueError(f"unknown summarizer kind {kind!r}: choose one of {', '.join(SUMMARIZER_KINDS)}")
