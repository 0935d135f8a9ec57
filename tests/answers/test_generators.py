"""Model adapters against a local HTTP server and botocore's Stubber: success, refusal and every failure."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber

from citewell.answers.generators.bedrock import BedrockGenerator
from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator
from citewell.answers.prompt import REFUSAL_SENTINEL, SYSTEM_PROMPT, user_prompt
from citewell.errors import GeneratorUnavailable
from citewell.models.evidence import EvidenceItem, EvidenceSpan
from tests import fake_model_service
from tests.fake_model_service import Reply

EVIDENCE = [
    EvidenceItem(ref="S1", document_id="handbook.md", revision="r1", title="Handbook", section_path=["Leave"],
                 text="Staff receive 27 days of annual leave.", spans=[EvidenceSpan(chunk_id="handbook.md#1#0", section_path=["Leave"], start=0, end=38)], rank=1),
]


@pytest.fixture
def service():
    svc, server = fake_model_service.start()
    yield svc
    server.shutdown()


def generator(service, **kw) -> OpenAICompatibleGenerator:
    return OpenAICompatibleGenerator(base_url=service.url, model="house-model", api_key="k-123", backoff=0.01, **kw)


def test_openai_compatible_success_sends_the_grounded_prompt(service):
    service.replies.append(service.chat("Staff get 27 days [S1]."))
    draft = generator(service).generate("How much leave?", EVIDENCE)
    assert draft.text == "Staff get 27 days [S1]." and not draft.refused
    (request,) = service.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer k-123"
    messages = request["json"]["messages"]
    assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert '<source id="S1"' in messages[1]["content"] and "Question: How much leave?" in messages[1]["content"]
    assert request["json"]["temperature"] == 0


def test_openai_compatible_refusal_sentinel(service):
    service.replies.append(service.chat(REFUSAL_SENTINEL))
    assert generator(service).generate("Who won the cup?", EVIDENCE).refused


def test_openai_compatible_retries_429_and_5xx_then_succeeds(service):
    service.replies.extend([Reply(status=429, body={"error": "slow down"}), Reply(status=503, body="busy"), service.chat("ok [S1]")])
    assert generator(service, retries=2).generate("q", EVIDENCE).text == "ok [S1]"
    assert len(service.requests) == 3


@pytest.mark.parametrize(
    ("replies", "message"),
    [
        ([Reply(status=500, body="boom")] * 3, "HTTP 500"),
        ([Reply(status=401, body={"error": "bad key"})], "HTTP 401"),
        ([Reply(status=200, body="<html>not json</html>")], "not JSON"),
        ([Reply(status=200, body={"choices": []})], "no choices"),
        ([Reply(status=200, body={"choices": [{"message": {"content": None}}]})], "not text"),
    ],
)
def test_openai_compatible_failures_are_typed(service, replies, message):
    service.replies.extend(replies)
    with pytest.raises(GeneratorUnavailable, match=message):
        generator(service, retries=2).generate("q", EVIDENCE)


def test_openai_compatible_timeout(service):
    service.replies.extend([Reply(delay=1.0, body={"choices": []})] * 2)
    with pytest.raises(GeneratorUnavailable, match="timed out"):
        generator(service, timeout=0.2, retries=1).generate("q", EVIDENCE)


def test_unreachable_service():
    unreachable = OpenAICompatibleGenerator(base_url="http://127.0.0.1:9/v1", model="m", retries=0)
    with pytest.raises(GeneratorUnavailable, match="could not be reached"):
        unreachable.generate("q", EVIDENCE)


def bedrock_stub():
    client = boto3.client("bedrock-runtime", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
    return client, Stubber(client)


def converse_params(question: str = "q") -> dict:
    return {
        "modelId": "anthropic.claude-test",
        "system": [{"text": SYSTEM_PROMPT}],
        "messages": [{"role": "user", "content": [{"text": user_prompt(question, EVIDENCE)}]}],
        "inferenceConfig": {"temperature": 0, "maxTokens": 800},
    }


def converse_reply(text: str) -> dict:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 12},
    }


def test_bedrock_success_and_refusal():
    client, stub = bedrock_stub()
    stub.add_response("converse", converse_reply("27 days [S1]."), converse_params())
    stub.add_response("converse", converse_reply(REFUSAL_SENTINEL), converse_params())
    with stub:
        bedrock = BedrockGenerator("anthropic.claude-test", client=client)
        assert bedrock.generate("q", EVIDENCE).text == "27 days [S1]."
        assert bedrock.generate("q", EVIDENCE).refused
    stub.assert_no_pending_responses()


@pytest.mark.parametrize("code", ["ThrottlingException", "ServiceUnavailableException", "ModelTimeoutException", "AccessDeniedException"])
def test_bedrock_errors_are_typed(code):
    client, stub = bedrock_stub()
    stub.add_client_error("converse", service_error_code=code, http_status_code=429 if code == "ThrottlingException" else 500)
    with stub, pytest.raises(GeneratorUnavailable, match=code):
        BedrockGenerator("anthropic.claude-test", client=client).generate("q", EVIDENCE)


def test_bedrock_empty_reply_is_typed():
    client, stub = bedrock_stub()
    stub.add_response("converse", converse_reply("   "), converse_params())
    with stub, pytest.raises(GeneratorUnavailable, match="empty"):
        BedrockGenerator("anthropic.claude-test", client=client).generate("q", EVIDENCE)


def test_bedrock_timeout_and_malformed_reply_over_real_http(service):
    """botocore against a local server: a reply slower than the read timeout, then one without output."""
    from botocore.config import Config

    client = boto3.client(
        "bedrock-runtime", region_name="eu-west-1", endpoint_url=service.url.removesuffix("/v1"),
        aws_access_key_id="x", aws_secret_access_key="y",
        config=Config(read_timeout=0.2, connect_timeout=1, retries={"total_max_attempts": 1, "mode": "standard"}),
    )
    bedrock = BedrockGenerator("anthropic.claude-test", client=client)
    service.replies.append(Reply(delay=1.0, body=converse_reply("late")))
    with pytest.raises(GeneratorUnavailable, match="could not be reached"):
        bedrock.generate("q", EVIDENCE)
    service.replies.append(Reply(body={"stopReason": "end_turn"}))
    with pytest.raises(GeneratorUnavailable, match="no output"):
        bedrock.generate("q", EVIDENCE)
    assert service.requests[-1]["path"] == "/model/anthropic.claude-test/converse"


def test_the_bedrock_client_is_shared_and_gives_up_inside_the_api_functions_30_seconds(monkeypatch):
    from citewell.llm import bedrock

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    bedrock.shared_client.cache_clear()
    first, second = BedrockGenerator("anthropic.claude-test", region="eu-west-1"), BedrockGenerator("other", region="eu-west-1")
    assert first.client is second.client
    config = first.client.meta.config
    assert config.retries["total_max_attempts"] == 1
    assert config.read_timeout + config.connect_timeout < 30


def event_message(event_type: str, payload: dict, message_type: str = "event") -> bytes:
    """One message of AWS's event-stream framing (application/vnd.amazon.eventstream): a prelude
    (total and header lengths, its CRC32), string headers, the JSON payload, the message's CRC32."""
    import struct
    import zlib

    kind = ":event-type" if message_type == "event" else ":exception-type"
    headers = b"".join(bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
                       for name, value in ((kind, event_type), (":content-type", "application/json"),
                                           (":message-type", message_type)))
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(body), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


@pytest.fixture
def converse_stream():
    """A local server answering Bedrock's ConverseStream in its wire format; ``script`` holds the
    messages of the next reply."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    state = {"script": [], "paths": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state["paths"].append(self.path)
            body = b"".join(state["script"])
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.amazon.eventstream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = boto3.client("bedrock-runtime", region_name="eu-west-1", endpoint_url=f"http://127.0.0.1:{server.server_port}",
                          aws_access_key_id="x", aws_secret_access_key="y")
    yield client, state
    server.shutdown()


def test_bedrock_streams_its_draft_through_converse_stream_when_a_listener_wants_it(converse_stream):
    from citewell.answers.drafts import drafts_to

    client, state = converse_stream
    state["script"] = [
        event_message("messageStart", {"role": "assistant"}),
        *(event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}})
          for piece in ("Staff get ", '"27 days of annual leave"', " [S1].")),
        event_message("contentBlockStop", {"contentBlockIndex": 0}),
        event_message("messageStop", {"stopReason": "end_turn"}),
        event_message("metadata", {"usage": {"inputTokens": 9, "outputTokens": 7, "totalTokens": 16}, "metrics": {"latencyMs": 5}}),
    ]
    heard: list[str] = []
    with drafts_to(heard.append):
        draft = BedrockGenerator("anthropic.claude-test", client=client).generate("How much leave?", EVIDENCE)
    assert heard == ["Staff get ", '"27 days of annual leave"', " [S1]."]
    assert draft.text == 'Staff get "27 days of annual leave" [S1].' and draft.quotes == {"S1": "27 days of annual leave"}
    assert state["paths"] == ["/model/anthropic.claude-test/converse-stream"]


def test_a_bedrock_stream_that_breaks_off_or_says_nothing_is_typed(converse_stream):
    from citewell.answers.drafts import drafts_to

    client, state = converse_stream
    bedrock = BedrockGenerator("anthropic.claude-test", client=client)
    state["script"] = [event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Staff get"}}),
                       event_message("modelStreamErrorException", {"message": "the model stopped"}, message_type="exception")]
    with drafts_to(lambda piece: None), pytest.raises(GeneratorUnavailable, match="modelStreamErrorException"):
        bedrock.generate("q", EVIDENCE)
    state["script"] = [event_message("messageStart", {"role": "assistant"}), event_message("messageStop", {"stopReason": "end_turn"})]
    with drafts_to(lambda piece: None), pytest.raises(GeneratorUnavailable, match="empty"):
        bedrock.generate("q", EVIDENCE)


def test_the_bedrock_generator_answers_inside_the_apis_thirty_seconds_on_one_client_per_region():
    """A 60 s read and a retry outlived API Gateway's 30 s integration limit
    (the caller got a 503 while the function still waited), and a client made per request cost
    its set-up and a cold TLS session each time."""

    first, second = BedrockGenerator("m-one", region="eu-west-1"), BedrockGenerator("m-two", region="eu-west-1")
    assert first.client is second.client
    assert BedrockGenerator("m-one", region="us-east-1").client is not first.client
    config = first.client.meta.config
    assert config.retries["total_max_attempts"] == 1
    assert config.connect_timeout + config.read_timeout < 30
