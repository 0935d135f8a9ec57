"""One deadline per request: against a Bedrock that stalls (a real HTTP server that holds its reply
past every limit), each model call of a ``/query`` gets only what the request has left, a call
with too little left is not made, and the question is still answered, degraded (the rules'
rewrite, the extractive answer), before the deadline: never a 5xx from API Gateway's 30 s.

The bounds asserted are the deadline's, seconds wide; the stalls are longer than every one."""

from __future__ import annotations

import time

import boto3
import pytest
from botocore.config import Config

from citewell.answers.generators.bedrock import BedrockGenerator
from citewell.deadline import FALLBACK_RESERVE_S, MIN_CALL_S, Deadline, applying, bounded, last_resort, time_for
from citewell.embedders.remote import BedrockTitanEmbedder
from citewell.errors import EmbedderUnavailable, GeneratorUnavailable, RerankerUnavailable
from citewell.models.answers import Outcome
from citewell.rerankers.bedrock import BedrockReranker
from tests import fake_model_service
from tests.answers.test_conversations import ANNA, MEALS, add
from tests.fake_model_service import Reply

STALL_S = 8.0  # longer than any deadline here: a reply that comes only after the request gave up


@pytest.fixture
def stalling():
    """A Bedrock endpoint whose every reply waits ``STALL_S``."""
    service, server = fake_model_service.start()
    service.respond = lambda body: Reply(delay=STALL_S, body={})
    yield service
    server.shutdown()


def client(service, name: str = "bedrock-runtime"):
    """A botocore client of Bedrock's own limits (20 s read), pointed at the fake."""
    return boto3.client(name, region_name="eu-west-1", endpoint_url=service.url.removesuffix("/v1"), aws_access_key_id="x",
                        aws_secret_access_key="y",
                        config=Config(read_timeout=20, connect_timeout=3, retries={"total_max_attempts": 1, "mode": "standard"}))


class Invocation:
    """A Lambda context with ``remaining_ms`` left."""

    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_a_call_gets_what_the_request_has_left_and_none_when_too_little():
    assert time_for(20.0) == 20.0  # no request: the call's own limit
    assert 8.0 < Deadline.for_invocation(Invocation(10_000)).left() <= 9.0  # the invocation's end, less its margin
    assert 27.0 < Deadline.for_invocation(Invocation(900_000)).left() <= 28.0  # API Gateway's, less the way back
    with applying(Deadline.after(3.0, reserve=0.0)):
        assert 2.0 < time_for(20.0) <= 3.0 and time_for(1.0) == 1.0
    with applying(Deadline.after(3.0, reserve=2.0)):
        assert 0.5 < time_for(20.0) <= 1.0  # the reserve is kept for the extractive answer
        with last_resort():  # which may spend it
            assert 2.0 < time_for(20.0) <= 3.0
        assert bounded(lambda: "quick", 20.0) == "quick"
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="no reply in the"):
            bounded(lambda: time.sleep(STALL_S), 20.0)
        assert time.monotonic() - started < 2.0  # given up on at its share, not after the stall
    with applying(Deadline.after(3.0, reserve=3.0 - MIN_CALL_S / 2)), pytest.raises(TimeoutError, match="not made"):
        time_for(20.0)


def test_each_bedrock_stage_gives_up_when_the_request_runs_out(stalling):
    """The generator (20 + 3 s of its own), the reranker (10 + 5 s) and Titan (60 s, retried)
    each end at the deadline less the reserve for what follows; the next call is not made."""
    from citewell.models.search import LaneRanks, SearchHit

    generator = BedrockGenerator("anthropic.claude-test", client=client(stalling))
    reranker = BedrockReranker("arn:aws:bedrock:eu-west-1::foundation-model/amazon.rerank-v1:0",
                               client=client(stalling, "bedrock-agent-runtime"))
    titan = BedrockTitanEmbedder(dims=4, client=client(stalling), workers=1)
    hits = [SearchHit(rank=1, chunk_id="meals.md#0#0", document_id="meals.md", revision="r1", title="Meals", section_path=[],
                      text="Leeds: 16 pounds.", score=1.0, lanes=LaneRanks(bm25=1))]
    for call, failure in [(lambda: generator.rewrite(["How much is the meal allowance?"], "and Leeds?"), GeneratorUnavailable),
                          (lambda: reranker.rerank("Leeds?", hits, 1), RerankerUnavailable),
                          (lambda: titan.embed(["Leeds?"]), EmbedderUnavailable)]:
        made = len(stalling.requests)
        with applying(Deadline.after(FALLBACK_RESERVE_S + 1.5)):
            started = time.monotonic()
            with pytest.raises(failure, match="in time"):
                call()
            assert time.monotonic() - started < 3.0, call  # its 1.5 s share, not its own limit
            assert len(stalling.requests) == made + 1
            with pytest.raises(failure):  # what is left is the reserve: the next call is not made
                call()
        assert len(stalling.requests) == made + 1


def test_a_bedrock_call_given_up_on_stops_reading_with_its_waiter(stalling):
    """The waiter gives up on a call at its share; the call itself, in its thread, stops reading
    then too (its attempt's read timeout is that share), not at its client's own 20 s: its thread
    and connection are free for the extractive answer's calls."""
    from botocore.exceptions import ReadTimeoutError

    generator = BedrockGenerator("anthropic.claude-test", client=client(stalling))
    with applying(Deadline.after(FALLBACK_RESERVE_S + 1.5)):
        started = time.monotonic()
        with pytest.raises(ReadTimeoutError):
            generator.client.converse(modelId="anthropic.claude-test", messages=[{"role": "user", "content": [{"text": "hi"}]}])
        assert time.monotonic() - started < 3.0  # its 1.5 s share and a moment, not the stall nor 20 s
    assert len(stalling.requests) == 1  # one attempt


def test_titan_throttled_retries_stop_when_the_request_has_no_time_for_one(stalling):
    stalling.respond = lambda body: Reply(status=429, body={"message": "slow down"},
                                          headers={"x-amzn-ErrorType": "ThrottlingException"})
    titan = BedrockTitanEmbedder(dims=4, client=client(stalling), workers=1, retries=4, backoff=2.0)
    with applying(Deadline.after(FALLBACK_RESERVE_S + 1.0)), pytest.raises(EmbedderUnavailable, match="no time for a retry"):
        titan.embed(["Leeds?"])
    assert len(stalling.requests) == 1  # a 2 s pause would outlive the request: no second try


def test_a_query_against_a_stalled_bedrock_answers_degraded_before_its_deadline(services, stalling):
    """A follow-up with a model generator whose Bedrock never answers in time: the rewrite gets the
    time left less the reserve and is given up on (the rules rewrite it), the answer's call is not
    made (no time left), and the extractive answer is given, said so, inside the deadline."""
    if getattr(services.conversations, "table", None) is not None:
        pytest.skip("the deadline is the query's, whatever the record store")
    from citewell.answers.service import ask
    from citewell.conversations import ask_in_conversation

    add(services, MEALS, "meals.md")
    generator = BedrockGenerator("anthropic.claude-test", client=client(stalling))

    def turn(asked: str, conversation_id: str | None = None):
        return ask_in_conversation(services, ANNA, asked, conversation_id,
                                   lambda question: ask(services, ANNA, question, generator), generator)

    with applying(Deadline.after(FALLBACK_RESERVE_S + 2.0)):
        first = turn("How much is the meal allowance in Manchester?")  # the answer's call: 2 s, then extractive
    assert first.outcome is Outcome.ANSWERED and "18 pounds" in first.answer
    assert any("in time" in note for note in first.degraded), first.degraded
    made = len(stalling.requests)

    seconds = FALLBACK_RESERVE_S + 2.0
    started = time.monotonic()
    with applying(Deadline.after(seconds)):
        follow = turn("what about Leeds?", first.conversation_id)
    took = time.monotonic() - started
    assert took < seconds, took  # before the deadline: API Gateway would still be waiting
    assert follow.outcome is Outcome.ANSWERED and "16 pounds" in follow.answer
    assert follow.question == "How much is the meal allowance in Leeds?"  # rewritten by the rules
    assert len(stalling.requests) == made + 1  # the rewrite's call; the answer's found no time and was not made
    notes = " | ".join(follow.degraded)
    assert "follow-up rewritten by rules" in notes and "no reply in the" in notes, notes  # the rewrite, given up on
    assert "(not made: " in notes and "; answering extractively" in notes, notes  # the answer's call, never made
