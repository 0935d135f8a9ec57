"""One deadline per ``/query``, over every outside service it calls, through the API function's
handler as API Gateway invokes it: the HTTP reranker and the OpenAI-compatible embedder (a real
loopback server that holds its reply), OpenSearch (the chain's stand-in in front of osmem-server,
holding its ``_msearch``) and DynamoDB (moto, with a reply held back by a botocore hook that reads
as urllib3 does: the attempt's read timeout, then ReadTimeoutError). Each stall outlasts the
deadline; the reply comes before it, degraded and said so, or as a 503 that says what ran out,
never a 500 and never API Gateway's 30 s.

The deadline is the invocation's time left less its margin (a few seconds here, so a test is
quick); the bounds asserted are that deadline, seconds wide."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ReadTimeoutError

from citewell.answers.service import NOT_KEPT
from citewell.conversations import TURN_NOT_KEPT
from citewell.deadline import FALLBACK_RESERVE_S, INVOCATION_MARGIN_S
from tests import fake_model_service
from tests.aws.test_aws_chain import HANDBOOK, LambdaContext, api, aws, knn_proxy, pump, upload  # noqa: F401
from tests.fake_model_service import Reply

STALL_S = 8.0  # longer than any deadline here
SECONDS = FALLBACK_RESERVE_S + 2.5  # what each request may take: a model call's share is 2.5 s, the reserve kept
QUESTION = {"question": "How many days of paid annual leave do full-time staff receive?"}
DIMS = 8


def asked(body: dict[str, Any] = QUESTION) -> tuple[int, dict[str, Any], float]:
    """``POST /query`` with :data:`SECONDS` left to the request; its status, reply and time taken."""
    started = time.monotonic()
    status, reply = api("POST", "/query", body, context=LambdaContext(remaining_ms=int((SECONDS + INVOCATION_MARGIN_S) * 1000)))
    return status, reply, time.monotonic() - started


def vector(text: str) -> list[float]:
    """A text's made-up embedding: the same text, the same vector."""
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255 - 0.5 for b in digest[:DIMS]]


@pytest.fixture
def service():
    """A loopback model service: embeddings at once until a test makes it stall."""
    found, server = fake_model_service.start()
    found.respond = lambda body: Reply(body={"data": [{"index": i, "embedding": vector(t)} for i, t in enumerate(body["input"])]})
    yield found
    server.shutdown()


def test_a_stalled_http_reranker_is_given_up_on_and_the_fused_order_answers(aws, service, monkeypatch):  # noqa: F811
    """The reranker's own limit (10 s) is longer than the request: it gets the request's share."""
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    service.respond = lambda body: Reply(delay=STALL_S, body={"results": []})
    monkeypatch.setenv("CITEWELL_RERANKER", "http")
    monkeypatch.setenv("CITEWELL_RERANK_URL", service.url)
    status, answer, took = asked()
    assert status == 200 and "27 days" in answer["answer"], answer
    assert any(note.startswith("reranker unavailable (the rerank service timed out") for note in answer["degraded"]), answer
    assert took < SECONDS, took
    assert len(service.requests) == 1  # asked, and given up on


def test_a_stalled_embedding_service_leaves_the_lexical_lane_in_time(aws, service, monkeypatch):  # noqa: F811
    """The embedder's own limit is 30 s, retried three times: one attempt, cut to what is left."""
    for name, value in {"CITEWELL_EMBEDDER": "openai", "CITEWELL_OPENAI_BASE_URL": service.url,
                        "CITEWELL_OPENAI_EMBED_MODEL": "fake-embed", "CITEWELL_OPENAI_EMBED_DIMS": str(DIMS)}.items():
        monkeypatch.setenv(name, value)
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)  # embedded by the service while it answers
    service.respond = lambda body: Reply(delay=STALL_S, body={"data": []})
    status, answer, took = asked()
    assert status == 200 and "27 days" in answer["answer"], answer
    assert "vector lane unavailable (embedder_unavailable): lexical results only" in answer["degraded"], answer
    assert took < SECONDS, took


def test_a_stalled_search_index_is_a_503_in_time_not_nothing_found(aws):  # noqa: F811
    """The domain holds ``_msearch`` past the deadline: both lanes are that one request, so there
    is nothing to answer from, and the reply says retrieval timed out (never "no such material")
    while API Gateway is still waiting."""
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    aws["proxy"].stalled["_msearch"] = STALL_S
    status, reply, took = asked()
    assert status == 503 and reply["error"]["code"] == "retrieval_timed_out", reply
    assert "no reply in the time the request had left" in reply["error"]["message"]
    assert took < SECONDS, took


class HeldBack:
    """DynamoDB ``operation`` answered only after ``STALL_S`` once ``on``: an attempt waits its read
    timeout (the request context's, else the client's) and raises ReadTimeoutError as urllib3 makes
    botocore do, or, given longer, gets moto's reply late."""

    def __init__(self, operation: str, passed: int = 0) -> None:
        self.operation = operation
        self.passed = passed  # calls let through first, once on
        self.on = False
        self.attempts: list[float] = []  # each held attempt's read timeout

    def __call__(self, request: Any, **_: object) -> None:
        target = request.headers.get("X-Amz-Target", b"")  # DynamoDB_20120810.<operation>
        if not self.on or (target.decode() if isinstance(target, bytes) else target).rpartition(".")[2] != self.operation:
            return
        if self.passed:
            self.passed -= 1
            return
        wait = float(request.context.get("read_timeout") or 60.0)  # botocore's default read timeout
        self.attempts.append(wait)
        time.sleep(min(wait, STALL_S))
        if wait < STALL_S:
            raise ReadTimeoutError(endpoint_url=request.url)


def published_then_held(aws: dict[str, Any], operation: str, passed: int = 0) -> HeldBack:  # noqa: F811
    """The handbook published as usual, then ``operation`` held back: a client takes the session's
    hooks when it is made, so the hook is there before the first call (on the service's event, as
    the client's own hooks are: botocore runs an operation's handlers before its service's)."""
    stall = HeldBack(operation, passed)
    boto3.DEFAULT_SESSION.events.register("before-send.dynamodb", stall)
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    stall.on = True
    return stall


def test_a_stalled_read_back_is_a_503_in_time(aws):  # noqa: F811
    """The records every hit is read back against do not come: no hit can be shown unread, so the
    reply is an honest 503 that says the request ran out, before the deadline, not a 500."""
    stall = published_then_held(aws, "BatchGetItem")
    status, reply, took = asked()
    assert status == 503 and reply["error"]["code"] == "out_of_time", reply
    assert took < SECONDS, (took, stall.attempts, reply)
    assert 1 <= len(stall.attempts) <= 2 and all(wait < SECONDS for wait in stall.attempts), stall.attempts


def test_an_answer_whose_record_cannot_be_kept_in_time_is_given_said_so(aws):  # noqa: F811
    """The answer's record (a transaction conditional on every source still serving) gets no reply
    in the time left: the answer is given, said not kept, with no conversation that would rest on
    it; nothing is ever recorded without its check."""
    stall = published_then_held(aws, "TransactWriteItems")
    status, answer, took = asked()
    assert status == 200 and "27 days" in answer["answer"], answer
    assert any(note.startswith(f"{NOT_KEPT}: the request had no time left") for note in answer["degraded"]), answer
    assert answer["conversation_id"] is None  # a new conversation, never written
    assert took < SECONDS, took
    assert stall.attempts and all(wait < SECONDS for wait in stall.attempts), stall.attempts
    stall.on = False
    assert api("GET", f"/answers/{answer['answer_id']}/citations")[0] == 404  # nothing recorded without its check


def test_a_turn_that_cannot_be_written_in_time_is_said_not_kept(aws):  # noqa: F811
    """The answer is recorded (the first transaction), the conversation's turn (the second) gets no
    reply in time: the recorded answer is given, its citations there to look up, the turn said not
    kept and no id given for a conversation whose write may not have landed."""
    stall = published_then_held(aws, "TransactWriteItems", passed=1)
    status, answer, took = asked()
    assert status == 200 and "27 days" in answer["answer"], answer
    assert any(note.startswith(f"{TURN_NOT_KEPT}: the request had no time left") for note in answer["degraded"]), answer
    assert not any(note.startswith(NOT_KEPT) for note in answer["degraded"]) and answer["conversation_id"] is None
    assert took < SECONDS, took
    assert stall.attempts, stall.attempts
    stall.on = False
    assert api("GET", f"/answers/{answer['answer_id']}/citations")[0] == 200


def test_the_signing_connection_gives_each_attempt_what_the_request_has_left(knn_proxy):  # noqa: F811
    """The domain's own connection (SigV4 over requests, as ``OpenSearchIndex.connect`` makes it)
    bounds an attempt as the URL one does: the alias's mapping held past the deadline is a
    timeout before it, not the client's own 30 s, and with no time left nothing is sent."""
    from opensearchpy import OpenSearch

    from citewell.deadline import Deadline, applying
    from citewell.errors import RetrievalTimedOut
    from citewell.index.opensearch import OpenSearchIndex
    from citewell.index.opensearch_deadline import BoundedRequestsConnection
    from citewell.models.identity import Identity

    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url], connection_class=BoundedRequestsConnection, timeout=30))
    knn_proxy.stalled["citewell-chunks"] = STALL_S  # HEAD /_alias/citewell-chunks
    anna = Identity(tenant="northpier", roles=frozenset({"staff"}))
    with applying(Deadline.after(2.0)):
        started = time.monotonic()
        with pytest.raises(RetrievalTimedOut, match="no reply in the time"):
            index.lanes("annual leave", None, "minilm", anna, 5)
        assert time.monotonic() - started < 2.0
        asked = len(knn_proxy.requests)
        with pytest.raises(RetrievalTimedOut, match="not asked"):
            index.lanes("annual leave", None, "minilm", anna, 5)
    assert len(knn_proxy.requests) == asked  # too little left: not sent
