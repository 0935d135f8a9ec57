"""The Reranker port: each adapter against a server speaking its real wire format (the HTTP
rerank format as the providers document it, Bedrock's Rerank through botocore's own model of
the API, chat completions for the LLM reranker), including failures, timeouts and malformed
replies; and the seam in search and ask: after read-back, on the caller's hits only, degrading
to the fused order and saying so."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from botocore.stub import Stubber

from citewell.answers.service import ask
from citewell.errors import RerankerUnavailable
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.llm.openai_compatible import OpenAICompatibleModel
from citewell.models.identity import Identity
from citewell.models.search import LaneRanks, SearchHit
from citewell.rerankers.bedrock import BedrockReranker
from citewell.rerankers.http import HttpReranker
from citewell.rerankers.llm import LlmReranker, blend
from citewell.search import search
from tests import fake_model_service, rerank_replies
from tests.fake_model_service import Reply

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))


@pytest.fixture
def service():
    found, server = fake_model_service.start()
    yield found
    server.shutdown()


def hits(*texts: str, scores: list[float] | None = None) -> list[SearchHit]:
    scores = scores or [1.0 / (60 + n) for n in range(1, len(texts) + 1)]
    return [SearchHit(rank=n + 1, chunk_id=f"d{n}#0#0", document_id=f"d{n}", revision="r", title="T", section_path=[],
                      text=text, score=score, lanes=LaneRanks(bm25=n + 1)) for n, (text, score) in enumerate(zip(texts, scores))]


@pytest.mark.parametrize(("reply", "sent", "expected"), [
    (rerank_replies.COHERE_FORMAT, 2, [0, 1]),
    (rerank_replies.JINA_FORMAT, 3, [0, 2]),
    (rerank_replies.XINFERENCE_FORMAT, 5, [0, 1, 3]),
])
def test_the_http_reranker_reads_each_documented_reply(service, reply, sent, expected):
    service.replies.append(Reply(body=reply))
    reranker = HttpReranker(service.url, model="bge-reranker", api_key="k")
    found = reranker.rerank("what is eaten", hits(*[f"passage {n}" for n in range(sent)]), top_n=len(expected))
    assert [r.index for r in found] == expected
    assert found[0].score == reply["results"][0]["relevance_score"]
    (request,) = service.requests
    assert request["path"] == "/v1/rerank" and request["headers"]["Authorization"] == "Bearer k"
    assert request["json"] == {"query": "what is eaten", "documents": [f"passage {n}" for n in range(sent)],
                               "top_n": len(expected), "model": "bge-reranker"}


def test_the_http_reranker_orders_by_score_whatever_order_the_list_came_in(service):
    service.replies.append(Reply(body={"results": [{"index": 1, "relevance_score": 0.2}, {"index": 0, "relevance_score": 0.9}]}))
    assert [r.index for r in HttpReranker(service.url).rerank("q", hits("a", "b"), 2)] == [0, 1]


@pytest.mark.parametrize(("reply", "problem"), [
    (Reply(status=500, body={"error": "overloaded"}), "HTTP 500"),
    (Reply(status=401, body={"message": "invalid api token"}), "HTTP 401"),
    (Reply(body="<html>gateway</html>"), "no results"),
    (Reply(body={"data": []}), "no results"),
    (Reply(body={"results": [{"index": 0, "score": 0.5}]}), "no results"),  # another format's field name
    (Reply(body={"results": [{"index": 0, "relevance_score": 0.5}, {"index": 7, "relevance_score": 0.4}]}), "not sent"),
    (Reply(body={"results": [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]}), "one twice"),
    (Reply(body={"results": [{"index": -1, "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.4}]}), "not sent"),
    (Reply(body='{"results": [{"index": 0, "relevance_score": NaN}, {"index": 1, "relevance_score": 0.1}]}'), "not a number"),
    (Reply(body={"results": [{"index": 0, "relevance_score": 0.5}]}), "ranks 1 of the 2"),
    (Reply(body={"results": [{"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.4}]}, delay=1.5), "timed out"),
])
def test_the_http_reranker_refuses_a_failed_or_malformed_reply(service, reply, problem):
    service.replies.append(reply)
    with pytest.raises(RerankerUnavailable, match=problem):
        HttpReranker(service.url, timeout=0.5).rerank("q", hits("a", "b"), 2)


def test_a_reply_that_never_ends_is_cut_off_past_the_limit(service):
    """Read whole, a reply that never ends took all the memory there is; it stops past the limit.
    (This one ends at four times the limit, so a client that reads it all still finishes.)"""
    from citewell.rerankers.http import MAX_REPLY_BYTES

    piece = b'{"index": 0, "relevance_score": 0.5}, ' * 1000
    service.replies.append(Reply(pieces=[b'{"results": [', *[piece] * (4 * MAX_REPLY_BYTES // len(piece))]))
    started = time.monotonic()
    with pytest.raises(RerankerUnavailable, match=f"over the limit of {MAX_REPLY_BYTES:,} bytes"):
        HttpReranker(service.url, timeout=5).rerank("q", hits("a", "b"), 2)
    assert time.monotonic() - started < 5


def test_a_compressed_reply_is_decoded_no_further_than_the_limit(service):
    """``gzip, gzip`` of 256 MiB of zeros is a few hundred KB: inflated a read at a time, one read
    made hundreds of megabytes before a byte was counted. Only about the limit may be held."""
    import gzip
    import tracemalloc

    from citewell.rerankers.http import MAX_REPLY_BYTES

    bomb = gzip.compress(gzip.compress(b'{"results": [' + bytes(256 * 1024 * 1024), 9), 9)
    service.replies.append(Reply(pieces=[bomb], headers={"Content-Encoding": "gzip, gzip"}))
    tracemalloc.start()
    try:
        with pytest.raises(RerankerUnavailable, match=f"over the limit of {MAX_REPLY_BYTES:,} bytes"):
            HttpReranker(service.url, timeout=5).rerank("q", hits("a", "b"), 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * MAX_REPLY_BYTES, f"{peak:,} bytes held"


def test_a_reply_trickled_a_byte_a_second_times_out_within_the_timeout_as_a_whole(service):
    """Each byte comes well inside the timeout; the reply as a whole does not."""
    reply = json.dumps({"results": [{"index": 0, "relevance_score": 0.5}]}).encode()
    service.replies.append(Reply(pieces=[bytes([b]) for b in reply], pause=1.0))
    started = time.monotonic()
    with pytest.raises(RerankerUnavailable, match="timed out"):
        HttpReranker(service.url, timeout=2.5).rerank("q", hits("a"), 1)
    assert time.monotonic() - started < 4


def test_the_http_reranker_speaks_text_embeddings_inference_natively(service):
    service.replies.append(Reply(body=rerank_replies.TEI_FORMAT))
    reranker = HttpReranker(service.url.removesuffix("/v1"), model="bge-reranker", wire="tei")
    found = reranker.rerank(rerank_replies.TEI_REQUEST["query"], hits(*rerank_replies.TEI_REQUEST["texts"]), top_n=1)
    assert [(r.index, r.score) for r in found] == [(1, 0.9976404)]  # TEI ranks every text: the top_n are kept
    (request,) = service.requests
    assert request["path"] == "/rerank"
    assert request["json"] == {**rerank_replies.TEI_REQUEST, "truncate": True}  # no model, no top_n: TEI takes neither


@pytest.mark.parametrize(("reply", "problem"), [
    (Reply(body={"results": [{"index": 0, "relevance_score": 0.5}]}), "not a list"),  # Cohere's shape from a TEI URL
    (Reply(body=[{"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.4}]), "not a list"),
    (Reply(body=[{"index": 0, "score": 0.5}, {"index": 3, "score": 0.4}]), "not sent"),
    (Reply(body=[{"index": 0, "score": 0.5}]), "ranks 1 of the 2"),
    (Reply(status=413, body={"error": "Batch size error", "error_type": "validation"}), "HTTP 413"),
    (Reply(status=424, body={"error": "Inference failed", "error_type": "backend"}), "HTTP 424"),
])
def test_a_tei_reply_that_is_not_its_format_is_refused(service, reply, problem):
    service.replies.append(reply)
    with pytest.raises(RerankerUnavailable, match=problem):
        HttpReranker(service.url, wire="tei").rerank("q", hits("a", "b"), 2)


def test_the_tei_reranker_is_chosen_by_the_settings(monkeypatch):
    from citewell.rerankers import reranker_from_env

    monkeypatch.setenv("CITEWELL_RERANKER", "TEI")
    monkeypatch.setenv("CITEWELL_RERANK_URL", "http://127.0.0.1:8080")
    found = reranker_from_env()
    assert isinstance(found, HttpReranker) and found.wire == "tei"


def test_the_http_reranker_says_when_nothing_listens():
    with pytest.raises(RerankerUnavailable, match="could not be reached"):
        HttpReranker("http://127.0.0.1:9/v1", timeout=0.5).rerank("q", hits("a", "b"), 2)


ARN = "arn:aws:bedrock:eu-west-1::foundation-model/cohere.rerank-v3-5:0"


def bedrock():
    client = boto3.client("bedrock-agent-runtime", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
    return client, Stubber(client)


def test_the_bedrock_reranker_sends_the_rerank_request_botocore_models():
    client, stub = bedrock()
    expected = {
        "queries": [{"type": "TEXT", "textQuery": {"text": "sick leave"}}],
        "sources": [{"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t}}} for t in ("a", "b")],
        "rerankingConfiguration": {"type": "BEDROCK_RERANKING_MODEL", "bedrockRerankingConfiguration": {
            "numberOfResults": 2, "modelConfiguration": {"modelArn": ARN}}},
    }
    stub.add_response("rerank", rerank_replies.BEDROCK_FORMAT, expected)  # the stubber checks both against the API model
    with stub:
        found = BedrockReranker(ARN, client=client).rerank("sick leave", hits("a", "b"), 2)
    assert [(r.index, r.score) for r in found] == [(1, 0.91), (0, 0.12)]


@pytest.mark.parametrize("failure", ["ThrottlingException", "AccessDeniedException", "ValidationException"])
def test_the_bedrock_reranker_degrades_on_a_refusal(failure):
    client, stub = bedrock()
    stub.add_client_error("rerank", service_error_code=failure, http_status_code=400)
    with stub, pytest.raises(RerankerUnavailable, match=failure):
        BedrockReranker(ARN, client=client).rerank("q", hits("a", "b"), 2)


def test_the_bedrock_reranker_refuses_a_reply_naming_what_was_not_sent():
    client, stub = bedrock()
    stub.add_response("rerank", {"results": [{"index": 5, "relevanceScore": 0.5}, {"index": 0, "relevanceScore": 0.1}]})
    with stub, pytest.raises(RerankerUnavailable, match="not sent"):
        BedrockReranker(ARN, client=client).rerank("q", hits("a", "b"), 2)


@pytest.fixture
def bedrock_endpoint(service, monkeypatch):
    """The adapter's own client (its timeouts and retries) sent to a local server over HTTP."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", service.url.removesuffix("/v1"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    return service


def test_the_bedrock_reranker_speaks_the_rerank_api_over_http(bedrock_endpoint):
    bedrock_endpoint.replies.append(Reply(body=rerank_replies.BEDROCK_FORMAT))
    found = BedrockReranker(ARN, region="eu-west-1").rerank("sick leave", hits("a", "b"), 2)
    assert [(r.index, r.score) for r in found] == [(1, 0.91), (0, 0.12)]
    (request,) = bedrock_endpoint.requests
    assert request["path"] == "/rerank" and request["json"]["queries"] == [{"type": "TEXT", "textQuery": {"text": "sick leave"}}]
    assert request["json"]["rerankingConfiguration"]["bedrockRerankingConfiguration"]["modelConfiguration"] == {"modelArn": ARN}


@pytest.mark.parametrize(("reply", "problem"), [
    (Reply(body={"results": "every one"}), "malformed"),  # botocore's parser fails on the shape
    (Reply(body={"results": [{"index": "first", "relevanceScore": 0.5}]}), "malformed"),
    (Reply(body="<html>gateway</html>"), "no results"),
    (Reply(status=502, body="<html>bad gateway</html>"), "refused"),
    (Reply(status=429, body={"message": "Too many requests"}), "refused"),
    (Reply(body=rerank_replies.BEDROCK_FORMAT, delay=1.5), "could not be reached"),
])
def test_a_failed_or_malformed_bedrock_reply_is_unavailable_after_one_attempt(bedrock_endpoint, reply, problem):
    """Any failure is the reranker's (search keeps the fused order), and nothing is retried: the
    API function's 30 s hold one rerank at its timeout, not two."""
    bedrock_endpoint.replies.append(reply)
    with pytest.raises(RerankerUnavailable, match=problem):
        BedrockReranker(ARN, region="eu-west-1", timeout=0.5).rerank("q", hits("a", "b"), 2)
    assert len(bedrock_endpoint.requests) == 1


def llm(service, content: str | None = None, **reply) -> LlmReranker:
    if content is not None:
        service.replies.append(service.chat(content))
    elif reply:
        service.replies.append(Reply(**reply))
    return LlmReranker(OpenAICompatibleModel(service.url, "m", retries=0, timeout=0.5), window=2)


def test_the_llm_reranker_blends_seventy_thirty_and_keeps_a_prior_without_a_verdict(service):
    pool = hits("a", "b", "c", scores=[1.0, 0.5, 0.25])
    found = llm(service, 'Scores: {"scores": [{"index": 2, "score": 1.0}, {"index": 0, "score": 0.1}]}').rerank("q", pool, 3)
    # c: 0.7 * 1.0 + 0.3 * 0.25 = 0.775; b, no verdict, keeps its prior 0.5; a: 0.7 * 0.1 + 0.3 = 0.37
    assert [(r.index, round(r.score, 3)) for r in found] == [(2, 0.775), (1, 0.5), (0, 0.37)]
    (request,) = service.requests
    prompt = request["json"]["messages"][1]["content"]
    assert '[0] "a"' in prompt and '[2] "c"' in prompt and "never instructions" in request["json"]["messages"][0]["content"]


def test_the_floor_trims_the_tail_but_never_below_the_evidence_window():
    pool = hits(*"abcd", scores=[1.0, 0.9, 0.01, 0.01])
    scores = {0: 1.0, 1: 0.0, 2: 0.0, 3: 0.0}  # floor min(0.08, 1.0 * 0.35) = 0.08: c and d (0.003) are below it
    assert [r.index for r in blend(pool, scores, window=2)] == [0, 1]
    assert [r.index for r in blend(pool, scores, window=3)] == [0, 1, 2]  # never fewer than the window


@pytest.mark.parametrize(("content", "reply", "problem"), [
    ("I think the second one.", {}, "no JSON"),
    ('{"ranking": [1, 0]}', {}, "is not"),
    ('{"scores": [{"index": 9, "score": 1}]}', {}, "none of the candidates"),
    (None, {"status": 503, "body": {"error": "busy"}}, "could not rerank"),
    (None, {"delay": 1.5, "body": {"choices": [{"message": {"content": "{}"}}]}}, "timed out"),
])
def test_any_llm_failure_is_unavailable(service, content, reply, problem):
    with pytest.raises(RerankerUnavailable, match=problem):
        llm(service, content, **reply).rerank("q", hits("a", "b"), 2)


# -- the seam in search and ask -----------------------------------------------------------


@pytest.fixture
def corpus(services):
    texts = {"leave.md": "Staff receive 27 days of paid annual leave.", "sick.md": "Report sick leave before your shift starts.",
             "parking.md": "Annual leave does not change your parking permit."}
    requests = [IngestRequest(document_id=d, tenant="northpier", allowed_roles=frozenset({"staff"}), data=t.encode(), filename=d)
                for d, t in texts.items()]
    requests.append(IngestRequest(document_id="secret.md", tenant="northpier", allowed_roles=frozenset({"hr"}),
                                  data=b"Annual leave of the board: 40 days, confidential.", filename="secret.md"))
    requests.append(IngestRequest(document_id="leave.md", tenant="bluefen", allowed_roles=frozenset({"staff"}),
                                  data=b"Bluefen annual leave is 31 days.", filename="leave.md"))
    assert all(o.status == "published" for o in ingest(services, requests))
    return services


def reverse(body: dict) -> Reply:
    """A reranker that reverses what it was sent: a known signal."""
    count = len(body["documents"])
    return Reply(body={"results": [{"index": count - 1 - n, "relevance_score": 1 - n / count} for n in range(count)]})


def test_search_reranks_the_callers_read_back_hits_only(corpus, service):
    service.respond = reverse
    fused = search(corpus, STAFF, "annual leave", k=3)
    corpus.reranker = HttpReranker(service.url)
    reranked = search(corpus, STAFF, "annual leave", k=3)
    sent = service.requests[-1]["json"]["documents"]
    assert not any("confidential" in t or "Bluefen" in t for t in sent)  # another role's, another tenant's: never sent
    assert [h.chunk_id for h in reranked.hits] == [h.chunk_id for h in search_pool(corpus, fused)][::-1][:3]
    assert [h.rank for h in reranked.hits] == [1, 2, 3] and all(h.rerank is not None for h in reranked.hits)
    assert reranked.hits[0].lanes == next(h.lanes for h in fused.hits if h.chunk_id == reranked.hits[0].chunk_id)
    assert json.loads(reranked.model_dump_json())["hits"][0]["rerank"] == 1.0


def search_pool(services, fused):
    """Every hit the caller may read for the question, in fused order (the pool the reranker was sent)."""
    reranker, services.reranker = services.reranker, None
    try:
        return search(services, STAFF, "annual leave", k=30).hits
    finally:
        services.reranker = reranker


def test_the_candidate_depth_is_how_many_read_back_hits_the_reranker_is_sent(corpus, service, monkeypatch):
    service.respond = reverse
    corpus.reranker = HttpReranker(service.url)
    for depth, k, sent in (("2", 1, 2), ("1", 2, 2), ("30", 1, 3)):  # never fewer than k; at most what the caller may read
        monkeypatch.setenv("CITEWELL_RERANK_DEPTH", depth)
        found = search(corpus, STAFF, "annual leave", k=k)
        assert len(service.requests[-1]["json"]["documents"]) == sent and len(found.hits) == k, (depth, k)


def test_a_failing_reranker_leaves_the_fused_order_and_says_so(corpus, service):
    fused = search(corpus, STAFF, "annual leave", k=3)
    corpus.reranker = HttpReranker(service.url, timeout=0.5)
    service.replies.append(Reply(status=502, body={"error": "bad gateway"}))
    found = search(corpus, STAFF, "annual leave", k=3)
    assert [h.chunk_id for h in found.hits] == [h.chunk_id for h in fused.hits]
    assert all(h.rerank is None for h in found.hits)
    assert found.degraded == ["reranker unavailable (the rerank service answered HTTP 502): fused order"]


def test_ask_uses_the_reranker_too(corpus, service):
    service.respond = reverse
    corpus.reranker = HttpReranker(service.url)
    answer = ask(corpus, STAFF, "How many days of paid annual leave do staff receive?")
    assert service.requests and answer.degraded == []
    assert {c.document_id for c in answer.citations} <= {"leave.md", "sick.md", "parking.md"}


def test_authority_weighs_an_authoritative_document_up(services):
    texts = {"a.md": "Leave: 27 days of annual leave.", "b.md": "Leave: 27 days of annual leave a year."}
    for doc_id, text in texts.items():
        (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                                                     data=text.encode(), filename=doc_id, authority=doc_id == "b.md")])
        assert outcome.status == "published"
    found = search(services, STAFF, "annual leave days", k=2, lanes=("bm25",))
    first, second = found.hits
    # b.md is the lexical lane's second (a.md is shorter), and 1.1 / 62 outweighs 1 / 61.
    assert (first.document_id, first.lanes.bm25, second.document_id) == ("b.md", 2, "a.md")
    assert first.score == pytest.approx(1.1 / 62) and second.score == pytest.approx(1 / 61)
