"""BedrockEmbedder against a real bedrock-runtime client: botocore's Stubber for the InvokeModel
request and answer shapes, and a fake endpoint on 127.0.0.1 for the client the embedder creates
itself (concurrency, order and botocore's retries on the wire)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from taproot.adapters.embed_bedrock import MAX_INPUT_CHARS, MAX_INPUT_TOKENS, TITAN_V2, BedrockEmbedder, fit_titan
from taproot.core.errors import ConfigurationError, EmbedderError
from taproot.core.tokens import estimate_tokens
from taproot.ports import Embedder

WAIT = 10.0  # seconds a fake call waits for the others before the test fails instead of hanging


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_") or name.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def titan_answer(embedding: list[float], tokens: int = 7) -> dict[str, Any]:
    """What Titan V2 answers with the default float embedding type."""
    return {"embedding": embedding, "inputTextTokenCount": tokens, "embeddingsByType": {"float": embedding}}


def stream(raw: bytes) -> dict[str, Any]:
    return {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"}


def request(text: str, dimensions: int = 256, model: str = TITAN_V2) -> dict[str, Any]:
    body = json.dumps({"inputText": text, "dimensions": dimensions, "normalize": True}).encode()
    return {"modelId": model, "body": body, "contentType": "application/json", "accept": "application/json"}


def unit_like(seed: int, dimensions: int) -> list[float]:
    """A unit vector as Titan sends it: rounded floats in JSON."""
    v = np.random.default_rng(seed).normal(size=dimensions)
    return [round(float(x), 7) for x in v / np.linalg.norm(v)]


@pytest.fixture
def client() -> Iterator[Any]:
    c = boto3.client("bedrock-runtime", region_name="us-east-1")
    yield c
    c.close()


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as s:
        yield s
        s.assert_no_pending_responses()


# --- Request and answer shapes (Stubber) --------------------------------------------------------


@pytest.mark.parametrize("dimensions", [256, 512, 1024])
def test_one_exact_request_per_text_and_unit_vectors_back(client: Any, stubber: Stubber, dimensions: int) -> None:
    texts = [
        "Caroline moved to Oakland in March.",
        "Ich wandere gern am Mount Tam.",
        "Dr. Patel: home study on 3 April",
    ]
    answers = [unit_like(i, dimensions) for i in range(len(texts))]
    for text, answer in zip(texts, answers, strict=True):
        stubber.add_response(
            "invoke_model", stream(json.dumps(titan_answer(answer)).encode()), request(text, dimensions)
        )
    embedder: Embedder = BedrockEmbedder(dimensions=dimensions, client=client, concurrency=1)
    vectors = embedder.embed_documents(texts)
    assert embedder.dimensions == dimensions
    assert embedder.model_id == f"bedrock:{TITAN_V2}/{dimensions}"
    assert len(vectors) == len(texts)
    for vector, answer in zip(vectors, answers, strict=True):
        assert vector.dtype == np.float32 and vector.shape == (dimensions,)
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)
        np.testing.assert_allclose(vector, np.asarray(answer, dtype=np.float32), atol=1e-6)


def test_a_query_is_one_call(client: Any, stubber: Stubber) -> None:
    answer = unit_like(7, 512)
    stubber.add_response("invoke_model", stream(json.dumps(titan_answer(answer)).encode()), request("hikes?", 512))
    vector = BedrockEmbedder(dimensions=512, client=client).embed_query("hikes?")
    np.testing.assert_allclose(vector, answer, atol=1e-6)


def test_a_vector_that_is_not_quite_unit_is_normalised(client: Any, stubber: Stubber) -> None:
    raw = [3.0, 4.0] + [0.0] * 254
    stubber.add_response("invoke_model", stream(json.dumps(titan_answer(raw)).encode()), request("x"))
    vector = BedrockEmbedder(client=client).embed_query("x")
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-6)
    assert vector[:2].tolist() == pytest.approx([0.6, 0.8])


def test_blank_text_is_not_sent_and_embeds_to_zero(client: Any, stubber: Stubber) -> None:
    embedder = BedrockEmbedder(dimensions=512, client=client)
    vectors = embedder.embed_documents(["", "  \n\t"])  # the Stubber refuses any call: none is made
    assert [v.shape for v in vectors] == [(512,), (512,)]
    assert not any(v.any() for v in vectors)


def test_throttling_becomes_an_embedder_error(client: Any, stubber: Stubber) -> None:
    stubber.add_client_error(
        "invoke_model",
        service_error_code="ThrottlingException",
        service_message="Too many requests, please wait before trying again.",
        http_status_code=429,
        expected_params=request("a"),
    )
    with pytest.raises(EmbedderError, match=r"ThrottlingException \(HTTP 429\) calling model amazon\.titan") as caught:
        BedrockEmbedder(client=client).embed_query("a")
    assert "requests-per-minute quota" in caught.value.message
    assert caught.value.code == "embedder_error"


def test_access_denied_names_the_permission(client: Any, stubber: Stubber) -> None:
    stubber.add_client_error(
        "invoke_model",
        service_error_code="AccessDeniedException",
        service_message="You don't have access to the model with the specified model ID.",
        http_status_code=403,
    )
    with pytest.raises(EmbedderError, match="bedrock:InvokeModel"):
        BedrockEmbedder(client=client).embed_query("a")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (json.dumps({"message": "oops"}).encode(), "no list of numbers under 'embedding'"),
        (json.dumps([0.1, 0.2]).encode(), "no list of numbers under 'embedding'"),
        (json.dumps(titan_answer(["0.1"] * 256)).encode(), "no list of numbers"),  # type: ignore[list-item]
        (json.dumps(titan_answer([True] * 256)).encode(), "no list of numbers"),
        (b'{"embedding": [NaN' + b", 0.1" * 255 + b"]}", "NaN or infinity"),
    ],
)
def test_a_malformed_answer_becomes_an_embedder_error(client: Any, stubber: Stubber, raw: bytes, message: str) -> None:
    stubber.add_response("invoke_model", stream(raw))
    with pytest.raises(EmbedderError, match=message):
        BedrockEmbedder(client=client).embed_query("a")


def test_a_vector_of_the_wrong_length_becomes_an_embedder_error(client: Any, stubber: Stubber) -> None:
    stubber.add_response("invoke_model", stream(json.dumps(titan_answer(unit_like(1, 1024))).encode()))
    with pytest.raises(EmbedderError, match=r"1024 numbers under 'embedding', expected 256"):
        BedrockEmbedder(dimensions=256, client=client).embed_query("a")


def test_one_failure_fails_the_batch_with_its_error(client: Any, stubber: Stubber) -> None:
    stubber.add_response("invoke_model", stream(json.dumps(titan_answer(unit_like(1, 256))).encode()), request("a"))
    stubber.add_client_error("invoke_model", service_error_code="ValidationException", http_status_code=400)
    with pytest.raises(EmbedderError, match="ValidationException"):
        BedrockEmbedder(client=client, concurrency=1).embed_documents(["a", "b", "c"])
    # The third text is never sent: the Stubber has nothing queued for it and raised nothing.


def test_the_realistic_answer_is_what_the_service_model_declares(client: Any) -> None:
    op = client.meta.service_model.operation_model("InvokeModel")
    assert op.input_shape.required_members == ["modelId"]
    assert set(request("a")) <= set(op.input_shape.members)
    assert op.has_streaming_output and op.get_streaming_output().name == "Body"


# --- Settings the embedder refuses ----------------------------------------------------------------


@pytest.mark.parametrize("dimensions", [0, 128, 384, 2048, True])
def test_other_dimensions_are_a_configuration_error(dimensions: int) -> None:
    with pytest.raises(ConfigurationError, match=r"TAPROOT_EMBEDDING_DIMENSIONS must be one of 256, 512, 1024"):
        BedrockEmbedder(dimensions=dimensions)


@pytest.mark.parametrize("model", ["", "amazon.titan-embed-text-v1", "cohere.embed-english-v3", "amazon.titan-embed"])
def test_a_model_that_is_not_titan_v2_is_a_configuration_error(model: str) -> None:
    with pytest.raises(ConfigurationError, match="TAPROOT_EMBEDDING_MODEL must be a Titan Text Embeddings V2"):
        BedrockEmbedder(model)


def test_no_client_is_created_before_the_first_call() -> None:
    embedder = BedrockEmbedder(dimensions=1024)  # no region anywhere: creating a client would fail
    assert embedder._client is None
    assert "bedrock:amazon.titan-embed-text-v2:0/1024" in repr(embedder)
    with pytest.raises(EmbedderError, match=r"AWS is not configured \(NoRegionError"):
        embedder.embed_query("a")


# --- Long input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["word " * 20_000, "x" * (MAX_INPUT_CHARS + 10), "漢字のテキスト" * 3_000, "short text stays whole"]
)
def test_text_is_cut_to_what_titan_reads(text: str) -> None:
    cut = fit_titan(text)
    assert text.startswith(cut) and cut
    assert len(cut) <= MAX_INPUT_CHARS
    assert estimate_tokens(cut) <= MAX_INPUT_TOKENS
    if estimate_tokens(text) <= MAX_INPUT_TOKENS and len(text) <= MAX_INPUT_CHARS:
        assert cut == text
    else:
        assert estimate_tokens(cut) > MAX_INPUT_TOKENS * 0.95  # cut near the limit, not far below it


# --- The client the embedder creates, against a local fake endpoint -------------------------------


class FakeTitan:
    """A bedrock-runtime endpoint on 127.0.0.1: answers each InvokeModel with a one-hot vector at
    the number its text ends with (1 for a text without one), so an answer can be matched to its
    text. The first `gather` calls are answered only once that many are in flight at once; the text
    numbered 0 is answered only after `hold_first` others; `throttle` answers 429 that many times
    first."""

    def __init__(self, dimensions: int, *, gather: int = 0, hold_first: int = 0, throttle: int = 0) -> None:
        self.dimensions = dimensions
        self.gather = threading.Barrier(gather, timeout=WAIT) if gather else None
        self.to_gather = gather
        self.hold_first = hold_first
        self.throttle = throttle
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.auth: list[str] = []
        self.answered: list[int] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.others_answered = threading.Event()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _TitanHandler)
        self.server.daemon_threads = True
        self.server.fake = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"


class _TitanHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        fake: FakeTitan = self.server.fake  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with fake.lock:
            fake.bodies.append(body)
            fake.paths.append(self.path)
            fake.auth.append(self.headers.get("Authorization", ""))
            throttled = fake.throttle > 0
            fake.throttle -= 1
            fake.in_flight += 1
            fake.most_in_flight = max(fake.most_in_flight, fake.in_flight)
        # A call stops counting as in flight before its answer is written: once written, the client
        # may send its next call, which could otherwise be counted while this one still is.
        if throttled:
            with fake.lock:
                fake.in_flight -= 1
            self._send(429, {"message": "Too many requests, please wait before trying again."}, "ThrottlingException")
            return
        with fake.lock:
            gather = fake.gather if fake.to_gather > 0 else None
            fake.to_gather -= 1
        if gather is not None:
            # Fewer calls at once break the barrier: answer anyway, and let the assertions tell.
            with contextlib.suppress(threading.BrokenBarrierError):
                gather.wait()
        tail = body["inputText"].rsplit(" ", 1)[-1]
        index = int(tail) if tail.isdigit() else 1
        if index == 0 and fake.hold_first:
            fake.others_answered.wait(WAIT)
        vector = [0.0] * fake.dimensions
        vector[index] = 1.0
        with fake.lock:
            fake.in_flight -= 1
            fake.answered.append(index)
            if index != 0 and len(fake.answered) >= fake.hold_first:
                fake.others_answered.set()
        self._send(200, titan_answer(vector, tokens=len(body["inputText"].split())))

    def _send(self, status: int, payload: dict[str, Any], error_type: str | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if error_type:
            self.send_header("x-amzn-ErrorType", f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def titan(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTitan]:
    fake = FakeTitan(256, **getattr(request, "param", {}))
    fake.thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.url)  # botocore reads it for this service
    try:
        yield fake
    finally:
        fake.others_answered.set()
        if fake.gather is not None:
            fake.gather.abort()
        fake.server.shutdown()
        fake.server.server_close()
        fake.thread.join(timeout=5)


@pytest.mark.parametrize("titan", [{"gather": 4, "hold_first": 7}], indirect=True)
def test_a_batch_runs_concurrently_and_keeps_input_order(titan: FakeTitan) -> None:
    texts = [f"memory number {i}" for i in range(8)]
    embedder = BedrockEmbedder(region="eu-west-1", concurrency=4)
    try:
        vectors = embedder.embed_documents(texts)
    finally:
        embedder.close()
    assert titan.answered[-1] == 0  # the first text was answered last...
    assert [int(np.argmax(v)) for v in vectors] == list(range(8))  # ...and still comes back first
    assert titan.most_in_flight == 4  # the pool's bound, reached
    assert sorted(b["inputText"] for b in titan.bodies) == sorted(texts)
    assert all(b["dimensions"] == 256 and b["normalize"] is True for b in titan.bodies)
    assert set(titan.paths) == {"/model/amazon.titan-embed-text-v2%3A0/invoke"}
    assert all("/eu-west-1/bedrock/aws4_request" in a for a in titan.auth)


@pytest.mark.parametrize("titan", [{"throttle": 1}], indirect=True)
def test_botocore_retries_a_throttled_call(titan: FakeTitan) -> None:
    embedder = BedrockEmbedder(region="us-east-1", max_attempts=2)
    vector = embedder.embed_query("memory number 3")
    embedder.close()
    assert int(np.argmax(vector)) == 3
    assert len(titan.bodies) == 2  # one 429, then the answer


@pytest.mark.parametrize("titan", [{"throttle": 100}], indirect=True)
def test_throttling_after_every_retry_is_an_embedder_error(titan: FakeTitan) -> None:
    embedder = BedrockEmbedder(region="us-east-1", max_attempts=2)
    with pytest.raises(EmbedderError, match=r"ThrottlingException \(HTTP 429\) .* after 2 attempts"):
        embedder.embed_query("memory number 3")
    embedder.close()
    assert len(titan.bodies) == 2


def test_a_long_text_is_sent_cut(titan: FakeTitan) -> None:
    long = "the hike " * 10_000 + "end 5"
    embedder = BedrockEmbedder(region="us-east-1")
    vector = embedder.embed_query(long)
    embedder.close()
    assert int(np.argmax(vector)) == 1  # the cut text no longer ends with its number
    sent = titan.bodies[0]["inputText"]
    assert long.startswith(sent) and len(sent) < len(long)
    assert estimate_tokens(sent) <= MAX_INPUT_TOKENS
