"""Replies that fit a Lambda response: the document listing and a document's text come in pages.

Every call here goes through the API function as ``tests.aws.test_aws_chain`` runs it, held to
Lambda's 6 MB payload limit (``tests.strict_aws.invocation``), against moto and osmem."""

from __future__ import annotations

import hashlib
import json

import pytest

from citewell.api.paging import LIST_PAGE_MAX, TEXT_PAGE_CHARS
from citewell.lambdas.settings import services_from_env
from citewell.models.chunks import Chunk
from citewell.models.documents import Document, DocumentStatus
from tests.aws.test_aws_chain import HANDBOOK, LambdaContext, api, aws, knn_proxy, pump, upload  # noqa: F401
from tests.strict_aws import PAYLOAD_BYTES, PayloadTooLarge, invocation

READER = "[staff]"


def test_the_harness_fails_a_reply_or_request_over_6_mb_as_lambda_does():
    big = {"statusCode": 200, "body": "x" * PAYLOAD_BYTES}
    with pytest.raises(PayloadTooLarge, match="Response payload size"):
        invocation(lambda event, context: big, {}, LambdaContext())
    with pytest.raises(PayloadTooLarge, match="Request must be smaller"):
        invocation(lambda event, context: {}, {"body": "x" * PAYLOAD_BYTES}, LambdaContext())
    # Measured as the runtime writes it: a character outside the BMP is 12 bytes of escapes.
    with pytest.raises(PayloadTooLarge):
        invocation(lambda event, context: {"body": "\U0001f600" * (PAYLOAD_BYTES // 12 + 1)}, {}, LambdaContext())
    assert invocation(lambda event, context: {"body": "x" * 1000}, {}, LambdaContext()) == {"body": "x" * 1000}


def seed_long_document(document_id: str, text: str, part: int = 50_000) -> str:
    """A published document whose revision holds ``text`` in chunks of ``part`` characters: the
    state the stages leave for a 50 MB upload, written to the stores directly (the stages would
    spend minutes embedding it)."""
    services = services_from_env()[1]
    revision = hashlib.sha256(text.encode()).hexdigest()
    chunks = [Chunk(chunk_id=f"{document_id}#0#{n}", document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                    revision=revision, title="Long", section_index=0, index=n, heading_path=[], start=start,
                    end=start + len(text[start:start + part]), body_start=start, text=text[start:start + part])
              for n, start in enumerate(range(0, len(text), part))]
    services.chunks.put_chunks(chunks)
    stored = services.documents.save_document(Document(
        document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}), title="Long", source="test",
        status=DocumentStatus.PUBLISHED, active_revision=revision, chunk_count=len(chunks), generation="a" * 32))
    assert stored is not None
    return revision


def read_all(path: str, limit: int | None = None, groups: str = READER) -> tuple[str, list[dict]]:
    pages, cursor = [], None
    while True:
        query = {k: str(v) for k, v in (("cursor", cursor), ("limit", limit)) if v is not None}
        status, page = api("GET", path, query=query or None, groups=groups)
        assert status == 200, page
        pages.append(page)
        if (cursor := page["next"]) is None:
            return "".join(p["text"] for p in pages), pages


def test_a_text_too_long_for_one_reply_is_read_in_pages_of_one_revision(aws):
    """1.1 million characters outside the BMP: 4.4 MB of UTF-8, 13 MB as Lambda writes it. Each
    page of at most ``TEXT_PAGE_CHARS`` fits the 6 MB the harness holds every reply to."""
    text = ("\U0001f600" * 99 + "\n") * 11_000
    revision = seed_long_document("long.txt", text)
    whole, pages = read_all("/documents/long.txt")
    assert whole == text and len(pages) == 3
    assert [p["offset"] for p in pages] == [0, TEXT_PAGE_CHARS, 2 * TEXT_PAGE_CHARS]
    assert {p["revision"] for p in pages} == {revision} and {p["total_chars"] for p in pages} == {len(text)}
    assert [len(p["text"]) for p in pages] == [TEXT_PAGE_CHARS, TEXT_PAGE_CHARS, len(text) - 2 * TEXT_PAGE_CHARS]
    small, _ = read_all("/documents/long.txt", limit=333_333)
    assert small == text


def test_a_cursor_of_a_replaced_revision_is_a_409_never_mixed_text(aws):
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    status, first = api("GET", "/documents/handbook.md", query={"limit": "20"}, groups=READER)
    assert status == 200 and len(first["text"]) == 20 and first["next"]
    status, second = api("GET", "/documents/handbook.md", query={"limit": "20", "cursor": first["next"]}, groups=READER)
    assert status == 200 and second["offset"] == 20 and second["revision"] == first["revision"]
    upload(aws, "handbook.md", HANDBOOK.replace(b"27 days", b"31 days"))
    pump(aws)
    status, stale = api("GET", "/documents/handbook.md", query={"limit": "20", "cursor": second["next"]}, groups=READER)
    assert status == 409 and stale["error"]["code"] == "stale_cursor" and "first page" in stale["error"]["message"]
    whole, _ = read_all("/documents/handbook.md", limit=20)
    assert "31 days" in whole and "27 days" not in whole  # read again from the start: the new revision's, whole


def test_paging_parameters_are_checked_and_a_cursor_cannot_reach_another_document_or_reader(aws):
    seed_long_document("long.txt", "Annual leave is 27 days. " * 100)
    _, first = api("GET", "/documents/long.txt", query={"limit": "100"}, groups=READER)
    for bad in ({"limit": "0"}, {"limit": str(TEXT_PAGE_CHARS + 1)}, {"limit": "ten"}, {"limit": "-1"}, {"cursor": "not-a-cursor"},
                {"cursor": "e30"}, {"cursor": first["next"][:-3]}):
        status, refused = api("GET", "/documents/long.txt", query=bad, groups=READER)
        assert status == 400 and refused["error"]["code"] == "invalid_input", (bad, refused)
    seed_long_document("other.txt", "Sick leave is reported before the shift. " * 10)
    _, listed = api("GET", "/documents", query={"limit": "1"}, groups=READER)
    status, refused = api("GET", "/documents/long.txt", query={"cursor": listed["next"]}, groups=READER)
    assert status == 400  # a listing's cursor is not a text's
    # A cursor names a revision and an offset, not a reader: another tenant or role still gets 404.
    assert api("GET", "/documents/long.txt", query={"cursor": first["next"]}, tenant="bluefen", groups=READER)[0] == 404
    assert api("GET", "/documents/long.txt", query={"cursor": first["next"]}, groups="[hr]")[0] == 404


def test_the_listing_pages_hold_and_count_only_what_the_reader_may_read(aws):
    services = services_from_env()[1]
    for n in range(7):
        roles = frozenset({"hr"}) if n % 2 else frozenset({"staff"})
        services.documents.save_document(Document(document_id=f"policies/p{n}.md", tenant="northpier", allowed_roles=roles,
                                                 title=f"Policy {n}", source="test"))
    services.documents.save_document(Document(document_id="guide.md", tenant="bluefen", allowed_roles=frozenset({"staff"}),
                                             title="Guide", source="test"))
    pages, cursor = [], None
    while True:
        status, page = api("GET", "/documents", query={"limit": "2", **({"cursor": cursor} if cursor else {})}, groups=READER)
        assert status == 200 and set(page) == {"documents", "next"}
        pages.append([d["document_id"] for d in page["documents"]])
        if (cursor := page["next"]) is None:
            break
    assert pages == [["policies/p0.md", "policies/p2.md"], ["policies/p4.md", "policies/p6.md"]]  # no hr record, no empty page
    assert [d["document_id"] for d in api("GET", "/documents", groups="[hr staff]")[1]["documents"]] == [
        f"policies/p{n}.md" for n in range(7)]
    assert api("GET", "/documents", tenant="bluefen", groups=READER)[1]["documents"][0]["document_id"] == "guide.md"
    assert api("GET", "/documents", query={"limit": str(LIST_PAGE_MAX + 1)}, groups=READER)[0] == 400
    assert api("GET", "/documents", query={"cursor": "%%%"}, groups=READER)[0] == 400
    assert "hr" not in json.dumps(api("GET", "/documents", groups=READER)[1])


def test_a_conversation_is_viewed_in_pages_through_the_api_function(aws):
    """``GET /conversations/{id}`` through the Lambda handler: the newest page and ``next`` back to
    turn 1, a cut cursor a 400, another tenant's token a 404 with the id and the cursor."""
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    status, first = api("POST", "/query", {"question": "How many days of paid annual leave do full-time staff receive?"})
    assert status == 200
    cid = first["conversation_id"]
    for question in ("and for part-time staff?", "How many days of paid annual leave do full-time staff receive?"):
        assert api("POST", "/query", {"question": question, "conversation_id": cid})[0] == 200
    pages, cursor = [], None
    while True:
        status, page = api("GET", f"/conversations/{cid}", query={"limit": "2", **({"cursor": cursor} if cursor else {})})
        assert status == 200 and page["turn_count"] == 3, page
        pages.append([t["seq"] for t in page["turns"]])
        if (cursor := page["next"]) is None:
            break
    assert pages == [[2, 3], [1]]
    _, newest = api("GET", f"/conversations/{cid}", query={"limit": "2"})
    status, refused = api("GET", f"/conversations/{cid}", query={"cursor": newest["next"][:-3]})
    assert status == 400 and refused["error"]["code"] == "invalid_input"
    assert api("GET", f"/conversations/{cid}", query={"limit": "101"})[0] == 400
    for query in (None, {"cursor": newest["next"]}):
        status, found = api("GET", f"/conversations/{cid}", query=query, tenant="bluefen")
        assert status == 404 and "annual leave" not in json.dumps(found)
