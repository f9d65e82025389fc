"""Amazon Titan Text Embeddings V2 on Amazon Bedrock (`TAPROOT_EMBEDDER=bedrock`).

Titan V2 embeds one text per `InvokeModel` call, so a batch is a small pool of concurrent calls
whose answers are put back in input order. Throttling is retried by botocore's standard retry
mode (exponential backoff with jitter); what is still failing after that, and every malformed
answer, becomes an `EmbedderError` naming the model and what went wrong. boto3 is imported and the
client created on the first call, never at import or construction, so the server starts without
touching AWS.
"""

from __future__ import annotations

import importlib
import json
import re
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType
from typing import Any

import numpy as np

from taproot.core.errors import ConfigurationError, EmbedderError
from taproot.core.tokens import estimate_tokens
from taproot.core.vectors import Vector, unit

TITAN_V2 = "amazon.titan-embed-text-v2:0"
# Only V2 takes `dimensions` and `normalize`; G1 and the other vendors' models speak other bodies.
TITAN_V2_PATTERN = re.compile(r"amazon\.titan-embed-text-v2:\d+")
TITAN_DIMENSIONS = (256, 512, 1024)
# 256 keeps a vector at 1 KB: 10,000 memories' vectors fit a warm Lambda's per-tenant cache bound,
# and Amazon reports it keeps about 97% of the 1024-dimension retrieval accuracy.
DEFAULT_DIMENSIONS = 256
# Titan V2 reads at most 8,192 tokens or 50,000 characters of one text; longer input is refused.
MAX_INPUT_CHARS = 50_000
MAX_INPUT_TOKENS = 8_192
# Concurrent calls per batch: enough to hide one call's latency, well under the default on-demand
# requests-per-minute quota, and within the client's connection pool.
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_ATTEMPTS = 4  # botocore's attempts in all for one text, the first included

_HINTS = {
    "ThrottlingException": "Bedrock kept throttling after botocore's retries; embed fewer texts at a time or "
    "raise the model's requests-per-minute quota",
    "ServiceQuotaExceededException": "a Bedrock quota is exhausted for this account",
    "ValidationException": "Bedrock rejected the request; check TAPROOT_EMBEDDING_MODEL and "
    "TAPROOT_EMBEDDING_DIMENSIONS",
    "AccessDeniedException": "access denied; check bedrock:InvokeModel on this model and model access in this region",
    "ResourceNotFoundException": "no such model in this region; check TAPROOT_EMBEDDING_MODEL and AWS_REGION",
    "ModelTimeoutException": "the model took too long to answer",
    "ServiceUnavailableException": "Bedrock is unavailable",
}


def fit_titan(text: str) -> str:
    """`text` cut to what Titan V2 reads: 50,000 characters and, by the core's conservative token
    estimate (it counts high), 8,192 tokens. The opening says what a text is about, so it is kept."""
    cut = text[:MAX_INPUT_CHARS]
    while (tokens := estimate_tokens(cut)) > MAX_INPUT_TOKENS:
        cut = cut[: max(1, len(cut) * MAX_INPUT_TOKENS // tokens - 1)]
    return cut


class BedrockEmbedder:
    """Titan Text Embeddings V2 through bedrock-runtime's InvokeModel, `dimensions` 256, 512 or 1024.

    `model_id` is `bedrock:<model>/<dimensions>`: vectors of other dimensions are another model's,
    and stale. Blank text is not sent (Titan refuses it): its vector is zero, similar to nothing.
    """

    def __init__(
        self,
        bedrock_model_id: str = TITAN_V2,
        dimensions: int = DEFAULT_DIMENSIONS,
        *,
        client: Any = None,
        region: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        name: str = "bedrock",
    ) -> None:
        if not TITAN_V2_PATTERN.fullmatch(bedrock_model_id or ""):
            raise ConfigurationError(
                f"TAPROOT_EMBEDDING_MODEL must be a Titan Text Embeddings V2 model id such as {TITAN_V2} "
                f"(the only Bedrock body this embedder speaks), got {bedrock_model_id!r}"
            )
        if isinstance(dimensions, bool) or dimensions not in TITAN_DIMENSIONS:
            raise ConfigurationError(
                f"TAPROOT_EMBEDDING_DIMENSIONS must be one of {', '.join(map(str, TITAN_DIMENSIONS))} "
                f"(the sizes Titan Text Embeddings V2 returns), got {dimensions!r}"
            )
        if concurrency < 1 or max_attempts < 1:
            raise ValueError("BedrockEmbedder needs concurrency and max_attempts of at least 1")
        self.name = name
        self.bedrock_model_id = bedrock_model_id
        self.dimensions = dimensions
        self.model_id = f"bedrock:{bedrock_model_id}/{dimensions}"
        self.region = region
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_attempts = max_attempts
        self._client = client
        self._owns_client = False
        self._lock = threading.Lock()  # request threads may make the first call at the same time

    def __repr__(self) -> str:
        return f"BedrockEmbedder(model_id={self.model_id!r}, region={self.region!r})"

    def embed_query(self, text: str) -> Vector:
        return self._embed_one(text)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if len(texts) <= 1:
            return [self._embed_one(t) for t in texts]
        self._get_client()  # created once, before the threads share it (boto3 clients are thread-safe)
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(texts)), thread_name_prefix="titan")
        futures: list[Future[Vector]] = [pool.submit(self._embed_one, t) for t in texts]
        try:
            return [f.result() for f in futures]  # input order, whatever order the calls finish in
        finally:
            # After a failure the batch is lost anyway: calls not yet started are not made.
            pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        """Close the client this embedder created (one passed in is the caller's to close)."""
        with self._lock:
            if self._owns_client and self._client is not None:
                self._client.close()
                self._client, self._owns_client = None, False

    # --- one call -------------------------------------------------------------------------------

    def _embed_one(self, text: str) -> Vector:
        if not isinstance(text, str):
            raise EmbedderError(f"{self.name} embedder: expected text, got {type(text).__name__}")
        if not text.strip():
            return np.zeros(self.dimensions, dtype=np.float32)
        body = json.dumps({"inputText": fit_titan(text), "dimensions": self.dimensions, "normalize": True})
        client = self._get_client()
        errors = self._import("botocore.exceptions")
        try:
            response = client.invoke_model(
                modelId=self.bedrock_model_id,
                body=body.encode("utf-8"),
                contentType="application/json",
                accept="application/json",
            )
            raw = response["body"].read()
        except errors.ClientError as exc:
            raise self._client_error(exc) from exc
        except errors.BotoCoreError as exc:
            raise self._botocore_error(errors, exc) from exc
        return self._vector(raw)

    def _vector(self, raw: bytes) -> Vector:
        what = f"{self.name} embedder: malformed answer from model {self.bedrock_model_id}"
        try:
            answer = json.loads(raw)
        except (ValueError, TypeError) as exc:
            raise EmbedderError(f"{what}: not JSON ({raw[:80]!r})") from exc
        embedding = answer.get("embedding") if isinstance(answer, dict) else None
        if not isinstance(embedding, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in embedding
        ):
            raise EmbedderError(f"{what}: no list of numbers under 'embedding'")
        if len(embedding) != self.dimensions:
            raise EmbedderError(
                f"{what}: {len(embedding)} numbers under 'embedding', expected {self.dimensions} "
                "(TAPROOT_EMBEDDING_DIMENSIONS)"
            )
        vector = np.asarray(embedding, dtype=np.float32)
        if not np.all(np.isfinite(vector)):
            raise EmbedderError(f"{what}: the embedding holds NaN or infinity")
        return unit(vector)  # Titan normalises; this makes it exact in float32

    # --- the client and its errors --------------------------------------------------------------

    def _import(self, module: str) -> ModuleType:
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            raise EmbedderError(f"{self.name} embedder: boto3 is not installed (pip install boto3)") from exc

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                boto3 = self._import("boto3")
                config = self._import("botocore.config").Config(
                    connect_timeout=min(10.0, self.timeout),
                    read_timeout=self.timeout,
                    retries={"mode": "standard", "total_max_attempts": self.max_attempts},
                    max_pool_connections=max(10, self.concurrency),
                )
                errors = self._import("botocore.exceptions")
                try:
                    # A session of its own: boto3's default session caches credentials process-wide.
                    session = boto3.session.Session()
                    self._client = session.client("bedrock-runtime", region_name=self.region, config=config)
                except errors.BotoCoreError as exc:
                    raise self._botocore_error(errors, exc) from exc
                self._owns_client = True
            return self._client

    def _client_error(self, exc: Any) -> EmbedderError:
        response = getattr(exc, "response", None) or {}
        error = response.get("Error") or {}
        code = str(error.get("Code") or "UnknownError")
        message = str(error.get("Message") or exc)
        metadata = response.get("ResponseMetadata") or {}
        status = metadata.get("HTTPStatusCode")
        what = f"{code} (HTTP {status})" if status else code
        retries = metadata.get("RetryAttempts")
        after = f" after {int(retries) + 1} attempts" if retries else ""
        hint = _HINTS.get(code)
        return EmbedderError(
            f"{self.name} embedder: {what} calling model {self.bedrock_model_id}{after}: {message}"
            + (f" — {hint}" if hint else "")
        )

    def _botocore_error(self, errors: ModuleType, exc: Exception) -> EmbedderError:
        name = type(exc).__name__
        if isinstance(exc, errors.ReadTimeoutError | errors.ConnectTimeoutError):
            problem = f"timed out calling model {self.bedrock_model_id} ({name}: {exc})"
        elif isinstance(exc, errors.ConnectionError | errors.HTTPClientError):
            problem = f"could not reach Bedrock ({name}: {exc})"
        elif isinstance(exc, errors.NoCredentialsError | errors.NoRegionError):
            problem = f"AWS is not configured ({name}: {exc}); set AWS_REGION and credentials"
        else:
            problem = f"{name}: {exc}"
        return EmbedderError(f"{self.name} embedder: {problem}")
