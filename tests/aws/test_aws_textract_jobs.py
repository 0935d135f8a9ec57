"""Scanned PDFs on AWS, read by one asynchronous Textract job (tests.fake_textract answers as the
service's documentation says: jobs run until the test ends them, results come 1,000 blocks a call,
the completion goes to SNS), through the real functions: parse starts the job and stops, the
completion goes from the SNS topic to the OCR queue, and the OCR function runs parse again, which
reads the pages. S3, DynamoDB and IAM answer as strictly as in every chain test (tests.strict_aws,
tests.aws_roles): each function's calls are held to the role the stack synthesizes for it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import unquote_plus

import boto3
import pytest

from citewell.keys import ocr_key, parse_key, parsed_key
from citewell.lambdas.settings import services_from_env
from tests.aws.test_aws_chain import (  # noqa: F401
    HANDBOOK,
    LambdaContext,
    api,
    aws,
    knn_proxy,
    load_handler,
    pump,
    sqs_event,
    upload,
)
from tests.aws_roles import TEXTRACT_ROLE_ARN
from tests.fake_textract import FakeTextract, scanned, scanned_tiff

PAGE_LINES = 3  # tests.fake_textract.default_lines: a page reads as three lines, 23 blocks with their words


@pytest.fixture
def textract(aws, monkeypatch):
    """The stack's asynchronous route on top of the chain: Textract's completion topic, delivering
    raw to the OCR queue, and the variables the stack sets on parse and the OCR function."""
    sns, sqs = boto3.client("sns"), aws["sqs"]
    topic = sns.create_topic(Name="citewell-textract-done")["TopicArn"]
    inbox = sqs.create_queue(QueueName="citewell-ocr")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    for name, value in {"CITEWELL_OCR": "textract", "CITEWELL_TEXTRACT_TOPIC_ARN": topic,
                        "CITEWELL_TEXTRACT_ROLE_ARN": TEXTRACT_ROLE_ARN}.items():
        monkeypatch.setenv(name, value)
    services_from_env.cache_clear()
    service = boto3.session.Session()  # what Textract itself reads and publishes: nobody's call to record
    fake = FakeTextract(service.client("s3"), service.client("sns"))
    fake.install(boto3.DEFAULT_SESSION.events)
    return {"fake": fake, "inbox": inbox, "topic": topic}


class Crash(Exception):
    """The function dies here (its container killed, its time out)."""


def crash_at(aws, caller: str, operation: str, nth: int) -> None:
    """``caller`` dies just before its ``nth`` call of ``operation`` from now."""
    seen = [0]

    def count() -> None:
        seen[0] += 1
        if seen[0] == nth:
            raise Crash(f"{caller} died before {operation} #{nth}")
        aws["calls"].interject(caller, operation, count)

    aws["calls"].interject(caller, operation, count)


def receive(aws, url: str) -> dict | None:
    """What SQS hands the function now: the queue's messages as one batch, taken off the queue (a
    test redelivers the event itself when it means to)."""
    messages = aws["sqs"].receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    for message in messages:
        aws["sqs"].delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return sqs_event(messages) if messages else None


def uploads(event: dict) -> int:
    """The batch's records that notify an object (S3 sends a test event when notifications are set up)."""
    return sum(1 for r in event["Records"] if "Records" in json.loads(r["body"]))


def failed_keys(event: dict, reply: dict) -> list[str]:
    """The object keys of the records a batch reply hands back."""
    failed = {f["itemIdentifier"] for f in reply["batchItemFailures"]}
    return sorted(unquote_plus(json.loads(r["body"])["Records"][0]["s3"]["object"]["key"])
                  for r in event["Records"] if r["messageId"] in failed)


def handed_back(function: str, event: dict) -> int:
    """How many of the batch's records ``function`` hands back to the queue (all of them when each
    failed: Powertools then fails the invocation, as Lambda needs to retry the batch)."""
    from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

    try:
        return len(load_handler(function)(event, LambdaContext())["batchItemFailures"])
    except BatchProcessingError:
        return len(event["Records"])


def resume(aws, textract) -> list[dict]:
    """Hand the OCR queue's completions to the OCR function, as the event source does; returns the replies."""
    replies = []
    while (event := receive(aws, textract["inbox"])) is not None:
        replies.append(load_handler("ocr")(event, LambdaContext()))
    return replies


def status(document_id: str) -> dict:
    return api("GET", f"/documents/{document_id}")[1]["document"]


def detect_calls(aws) -> int:
    return sum(1 for _, service, operation, _ in aws["calls"].made if (service, operation) == ("textract", "DetectDocumentText"))


def test_a_thousand_page_scan_is_read_by_one_job_whose_pages_come_a_thousand_blocks_a_call(aws, textract):
    """Parse meets a scan of 1,000 pages (five times CITEWELL_OCR_MAX_PAGES, which the page-by-page
    route refused), starts one job and is done; the completion brings the OCR function, which reads
    every page by NextToken and publishes the document with each page's text under its number."""
    fake = textract["fake"]
    key = upload(aws, "survey.pdf", scanned(1000))
    pump(aws)
    assert len(fake.started) == 1 and detect_calls(aws) == 0
    assert status("survey.pdf")["status"] == "processing"
    found = parse_key(key)
    kept = json.loads(aws["s3"].get_object(Bucket="citewell-documents", Key=ocr_key(*found[1:]))["Body"].read())
    assert kept["job_id"] == fake.started[0] and kept["pages"] is None  # the job is recorded before it is waited on
    start = [p for caller, service, op, p in aws["calls"].made if op == "StartDocumentTextDetection"]
    assert start[0]["ClientRequestToken"] == f"{found.upload_id}-1" and start[0]["DocumentLocation"]["S3Object"]["Version"]
    assert resume(aws, textract) == []  # nothing until the job ends

    (job,) = fake.finish()
    assert resume(aws, textract) == [{"batchItemFailures": []}]
    pump(aws)
    assert status("survey.pdf")["status"] == "published"
    blocks = sum(job.counts)
    assert blocks == 1000 * 23 and fake.responses == [1000] * 23  # every block, 1,000 a response
    parsed = json.loads(aws["s3"].get_object(Bucket="citewell-documents", Key=parsed_key(*found[1:]))["Body"].read())
    pages = {block["page"] for block in parsed["parsed"]["blocks"]}
    assert pages == set(range(1, 1001))
    text = parsed["parsed"]["text"]
    assert "Survey sheet 1000 Berth 1 was dredged to twelve metres and sounded again on day 1000 of the survey." in text
    assert detect_calls(aws) == 0 and len(fake.started) == 1


def test_a_retry_after_a_crash_starts_no_second_job_and_reads_no_page_twice(aws, textract):
    fake = textract["fake"]
    upload(aws, "survey.pdf", scanned(120))
    raw = aws["queues"]["raw/"]
    event = receive(aws, raw)
    crash_at(aws, "parse", "PutObject", 1)  # parse dies after the job started, before its record is written
    assert handed_back("parse", event) == 1 and len(fake.started) == 1
    assert load_handler("parse")(event, LambdaContext()) == {"batchItemFailures": []}  # SQS delivers it again
    assert len(fake.started) == 1  # the same ClientRequestToken: the same job
    assert load_handler("parse")(event, LambdaContext()) == {"batchItemFailures": []}  # and again: the recorded job
    assert len(fake.started) == 1

    fake.finish()
    done = receive(aws, textract["inbox"])
    crash_at(aws, "ocr", "GetDocumentTextDetection", 2)  # the OCR function dies reading the pages
    assert handed_back("ocr", done) == 1
    crash_at(aws, "ocr", "PutObject", 2)  # and then after the pages are kept, writing what parse made of them
    assert handed_back("ocr", done) == 1
    read = len(fake.responses)
    assert load_handler("ocr")(done, LambdaContext()) == {"batchItemFailures": []}
    assert len(fake.responses) == read  # the kept pages: not one call to Textract
    pump(aws)
    assert status("survey.pdf")["status"] == "published" and len(fake.started) == 1
    assert load_handler("ocr")(done, LambdaContext()) == {"batchItemFailures": []}  # a late duplicate: the parse is done
    assert len(fake.started) == 1 and len(fake.responses) == read


def test_a_job_id_textract_forgot_is_replaced_by_one_new_job(aws, textract):
    """A job's id lives 7 days; a completion handled after that (a queue backed up, a redeploy) finds
    no job: one new job is started, the next attempt's token, and its completion reads the pages."""
    fake = textract["fake"]
    upload(aws, "survey.pdf", scanned(3))
    pump(aws)
    (first,) = fake.finish()
    fake.forget(first.job_id)
    assert resume(aws, textract) == [{"batchItemFailures": []}]
    assert len(fake.started) == 2 and status("survey.pdf")["status"] == "processing"
    fake.finish()
    resume(aws, textract)
    pump(aws)
    assert status("survey.pdf")["status"] == "published" and len(fake.started) == 2


def test_a_scan_over_the_page_cap_is_refused_with_its_reason_and_its_batchmates_go_on(aws, textract, monkeypatch):
    monkeypatch.setenv("CITEWELL_TEXTRACT_MAX_PAGES", "500")
    services_from_env.cache_clear()
    upload(aws, "survey.pdf", scanned(600))
    upload(aws, "handbook.md", HANDBOOK)
    event = receive(aws, aws["queues"]["raw/"])
    assert uploads(event) == 2  # one batch
    assert load_handler("parse")(event, LambdaContext()) == {"batchItemFailures": []}
    pump(aws)
    refused = status("survey.pdf")
    assert refused["status"] == "failed" and refused["error"] == {
        "code": "too_large", "message": "a scan of 600 pages is over the limit of 500 pages that OCR reads "
                                        "(CITEWELL_TEXTRACT_MAX_PAGES)"}
    assert textract["fake"].started == [] and detect_calls(aws) == 0  # refused before anything was paid for
    assert status("handbook.md")["status"] == "published"


@dataclass
class Deadline(LambdaContext):
    """A context whose invocation has ``left`` ms left for each record in turn (the last for any after)."""

    left: tuple[int, ...] = (900_000,)
    asked: int = 0

    def get_remaining_time_in_millis(self) -> int:
        self.asked += 1
        return self.left[min(self.asked, len(self.left)) - 1]


def test_one_scan_failing_in_a_batch_holds_none_of_its_batchmates(aws, textract):
    """One batch: a text file, a scan whose job Textract throttles, a scan Textract fails (a page
    over its 40 inches) and a good scan. Only the throttled one comes back; the text is published,
    the scans wait for their jobs; then the failed job's scan is recorded failed with Textract's
    reason, and the others are published."""
    fake = textract["fake"]
    keys = {name: upload(aws, name, data) for name, data in [
        ("handbook.md", HANDBOOK), ("throttled.pdf", scanned(4)), ("poster.pdf", scanned(2, side_points=3600)),
        ("survey.pdf", scanned(5))]}
    fake.refuse_next.append((keys["throttled.pdf"], "ProvisionedThroughputExceededException"))
    event = receive(aws, aws["queues"]["raw/"])
    assert uploads(event) == 4
    reply = load_handler("parse")(event, LambdaContext())
    assert failed_keys(event, reply) == [keys["throttled.pdf"]]  # retried alone, not recorded as the file's fault
    assert status("throttled.pdf")["status"] == "processing"
    pump(aws)
    assert status("handbook.md")["status"] == "published"
    retried = {"Records": [r for r in event["Records"] if r["messageId"] == reply["batchItemFailures"][0]["itemIdentifier"]]}
    assert load_handler("parse")(retried, LambdaContext()) == {"batchItemFailures": []}
    assert len(fake.started) == 3
    fake.finish()
    assert resume(aws, textract) == [{"batchItemFailures": []}]
    pump(aws)
    failed = status("poster.pdf")
    assert failed["status"] == "failed" and failed["error"]["code"] == "unsupported_type"
    assert "a page is larger than 40 inches" in failed["error"]["message"]
    assert status("survey.pdf")["status"] == status("throttled.pdf")["status"] == "published"


def test_a_record_is_not_started_near_the_timeout_but_handed_back_alone(aws, textract):
    """A batch whose first record took the invocation near its end: the others are not started (a
    timeout would hand back the whole batch, the done one too), but handed back, and go through
    when delivered again."""
    names = ["a.md", "b.md", "c.md"]
    keys = [upload(aws, name, HANDBOOK.replace(b"27", str(20 + n).encode())) for n, name in enumerate(names)]
    event = receive(aws, aws["queues"]["raw/"])
    event["Records"] = [r for r in event["Records"] if "Records" in json.loads(r["body"])]  # S3's test event aside
    reply = load_handler("parse")(event, Deadline(left=(120_000, 20_000)))
    done = sorted(set(keys) - set(failed_keys(event, reply)))
    assert len(done) == 1 and len(reply["batchItemFailures"]) == 2
    again = {"Records": [r for r in event["Records"] if r["messageId"] in {f["itemIdentifier"] for f in reply["batchItemFailures"]}]}
    assert load_handler("parse")(again, Deadline()) == {"batchItemFailures": []}
    pump(aws)
    assert [status(name)["status"] for name in names] == ["published"] * 3


def test_a_200_frame_tiff_is_read_by_one_job_not_a_call_a_frame(aws, textract):
    """A fax of 200 frames: parse counts its frames from their directories, starts one job on the
    stored TIFF and is done (the synchronous route sent 200 frames one call each, inside the parse
    function's 300 s); the completion reads every page by NextToken and the document is published,
    each frame's text under its page number."""
    fake = textract["fake"]
    key = upload(aws, "fax.tiff", scanned_tiff(200))
    pump(aws)
    assert len(fake.started) == 1 and detect_calls(aws) == 0
    assert status("fax.tiff")["status"] == "processing"
    start = [p for caller, service, op, p in aws["calls"].made if op == "StartDocumentTextDetection"]
    assert start[0]["DocumentLocation"]["S3Object"]["Name"] == key and start[0]["DocumentLocation"]["S3Object"]["Version"]
    (job,) = fake.finish()
    assert job.status == "SUCCEEDED" and job.pages == 200  # Textract's asynchronous operations read a TIFF's pages
    assert resume(aws, textract) == [{"batchItemFailures": []}]
    pump(aws)
    assert status("fax.tiff")["status"] == "published"
    assert fake.responses == [1000] * 4 + [200 * 23 - 4000] and detect_calls(aws) == 0
    parsed = json.loads(aws["s3"].get_object(Bucket="citewell-documents", Key=parsed_key(*parse_key(key)[1:]))["Body"].read())
    assert parsed["parsed"]["mime"] == "image/tiff"
    assert {block["page"] for block in parsed["parsed"]["blocks"]} == set(range(1, 201))
    assert "Survey sheet 200 Berth 1 was dredged to twelve metres and sounded again on day 200 of the survey." in (
        parsed["parsed"]["text"])


def test_a_tiff_over_the_page_cap_is_refused_before_a_job_starts(aws, textract, monkeypatch):
    monkeypatch.setenv("CITEWELL_TEXTRACT_MAX_PAGES", "100")
    services_from_env.cache_clear()
    upload(aws, "fax.tiff", scanned_tiff(150))
    pump(aws)
    refused = status("fax.tiff")
    assert refused["status"] == "failed" and refused["error"] == {
        "code": "too_large", "message": "a scan of more than 100 pages is over the limit of 100 pages that OCR reads "
                                        "(CITEWELL_TEXTRACT_MAX_PAGES)"}
    assert textract["fake"].started == [] and detect_calls(aws) == 0


def test_a_one_frame_tiff_is_one_synchronous_call_not_a_job(aws, textract):
    """A single page gains nothing from a job (its start, its completion, a second invocation)."""
    upload(aws, "page.tiff", scanned_tiff(1))
    pump(aws)
    assert textract["fake"].started == [] and detect_calls(aws) == 1


def dense(number: int) -> list[str]:
    """A dense typed page: 40 lines of 10 words, 441 blocks with the page's own."""
    return [" ".join(f"p{number}l{n}w{m}" for m in range(10)) for n in range(40)]


def crash_while_reading(aws, textract, pages: int, nth: int) -> tuple[dict, str]:
    """A scan of ``pages`` dense pages whose job has ended; the OCR function dies before its
    ``nth`` GetDocumentTextDetection. Returns the completion's event, to deliver again, and the
    key of the scan's OCR record."""
    fake = textract["fake"]
    fake.lines = dense
    key = upload(aws, "survey.pdf", scanned(pages))
    pump(aws)
    fake.finish()
    done = receive(aws, textract["inbox"])
    crash_at(aws, "ocr", "GetDocumentTextDetection", nth)
    assert handed_back("ocr", done) == 1
    assert len(fake.responses) == nth - 1
    return done, ocr_key(*parse_key(key)[1:])


def parsed_pages(aws, document_id: str) -> dict[int, str]:
    (key,) = [k["Key"] for k in aws["s3"].list_objects_v2(Bucket="citewell-documents", Prefix="parsed/")["Contents"]
              if parse_key(k["Key"]).document_id == document_id]
    parsed = json.loads(aws["s3"].get_object(Bucket="citewell-documents", Key=key)["Body"].read())["parsed"]
    pages: dict[int, str] = {}
    for block in parsed["blocks"]:
        text = parsed["text"][block["start"]:block["end"]]
        pages[block["page"]] = (pages.get(block["page"], "") + " " + text).strip()
    return pages


def test_a_crash_midway_through_the_results_resumes_at_the_last_checkpoint(aws, textract):
    """120 dense pages are 52,920 blocks, 53 responses. The OCR function keeps the lines and the
    NextToken after every 50th response; killed before its 52nd call, the redelivery goes on from
    the 51st response (3 calls), not from the first (53), and every page is read once."""
    fake = textract["fake"]
    done, record = crash_while_reading(aws, textract, 120, 52)
    kept = json.loads(aws["s3"].get_object(Bucket="citewell-documents", Key=record)["Body"].read())
    assert kept["responses"] == 50 and kept["next_token"] and kept["pages"] is None
    # 50,000 blocks: 113 pages of 441, then page 114's PAGE block and 166 more (15 lines with their
    # words, and the 16th line without its last word): the lines a checkpoint keeps.
    assert [len(page) for page in kept["read"][112:115]] == [40, 16, 0] and sum(map(len, kept["read"])) == 113 * 40 + 16
    assert load_handler("ocr")(done, LambdaContext()) == {"batchItemFailures": []}
    assert len(fake.responses) == 51 + 3
    pages = parsed_pages(aws, "survey.pdf")
    assert sorted(pages) == list(range(1, 121))
    assert all(pages[n] == " ".join(dense(n)) for n in pages)  # each line once, in order, the cut page's too
    kept = json.loads(aws["s3"].get_object(Bucket="citewell-documents", Key=record)["Body"].read())
    assert kept["read"] is None and kept["next_token"] is None and len(kept["pages"]) == 120


def test_a_kept_token_textract_refuses_is_dropped_and_the_results_read_again_from_the_first(aws, textract):
    """Textract documents no lifetime for a NextToken: one it no longer takes (the fake's
    expire_tokens) costs the results again, never a page twice or a page lost."""
    fake = textract["fake"]
    done, _ = crash_while_reading(aws, textract, 120, 52)
    fake.expire_tokens()
    assert load_handler("ocr")(done, LambdaContext()) == {"batchItemFailures": []}
    assert len(fake.responses) == 51 + 53
    pages = parsed_pages(aws, "survey.pdf")
    assert sorted(pages) == list(range(1, 121)) and all(pages[n] == " ".join(dense(n)) for n in pages)


def test_the_fake_reads_the_formats_textracts_quotas_name(aws, textract):
    """Asynchronous detection reads a PDF or a TIFF of many pages, a PNG or a JPEG of one (10 MB at
    most), and fails anything else."""
    from tests.parsers.test_ocr import encoded, page

    fake, client = textract["fake"], boto3.client("textract")
    image = page(["Berth four"], size=(200, 100))
    files = {"fax": scanned_tiff(7), "png": encoded(image, "PNG"), "jpeg": encoded(image, "JPEG"),
             "gif": encoded(image, "GIF"), "huge": scanned_tiff(2, size=(10_001, 20)), "text": b"Berth four\n"}
    jobs = {}
    for name, data in files.items():
        key = f"raw/northpier/{name}/" + "0" * 32
        aws["s3"].put_object(Bucket="citewell-documents", Key=key, Body=data)
        jobs[name] = client.start_document_text_detection(
            DocumentLocation={"S3Object": {"Bucket": "citewell-documents", "Name": key}})["JobId"]
    fake.finish()
    ended = {name: fake.jobs[job] for name, job in jobs.items()}
    assert {name: (job.status, job.pages) for name, job in ended.items() if job.status == "SUCCEEDED"} == {
        "fax": ("SUCCEEDED", 7), "png": ("SUCCEEDED", 1), "jpeg": ("SUCCEEDED", 1)}
    assert ended["gif"].message.startswith("UNSUPPORTED_DOCUMENT") and ended["text"].message.startswith("UNSUPPORTED_DOCUMENT")
    assert "10,000 pixels" in ended["huge"].message


def test_the_fake_answers_as_textracts_documentation_says(aws, textract):
    """The fake's own behaviour, checked once: unknown ids, idempotent tokens, running jobs, the
    1,000-block cap and NextToken paging, an object that is not there."""
    from botocore.exceptions import ClientError

    fake, client = textract["fake"], boto3.client("textract")
    key = "raw/northpier/x/" + "0" * 32
    aws["s3"].put_object(Bucket="citewell-documents", Key=key, Body=scanned(60))
    where = {"S3Object": {"Bucket": "citewell-documents", "Name": key}}
    channel = {"SNSTopicArn": textract["topic"], "RoleArn": TEXTRACT_ROLE_ARN}
    with pytest.raises(ClientError, match="InvalidJobIdException"):
        client.get_document_text_detection(JobId="f" * 64)
    job = client.start_document_text_detection(DocumentLocation=where, ClientRequestToken="t-1", NotificationChannel=channel)["JobId"]
    assert client.start_document_text_detection(DocumentLocation=where, ClientRequestToken="t-1")["JobId"] == job
    assert client.start_document_text_detection(DocumentLocation=where)["JobId"] != job  # no token: a new job
    with pytest.raises(ClientError, match="IdempotentParameterMismatchException"):
        client.start_document_text_detection(DocumentLocation={"S3Object": {**where["S3Object"], "Name": key + "x"}},
                                             ClientRequestToken="t-1")
    with pytest.raises(ClientError, match="InvalidS3ObjectException"):
        client.start_document_text_detection(DocumentLocation={"S3Object": {**where["S3Object"], "Name": key + "x"}})
    assert client.get_document_text_detection(JobId=job)["JobStatus"] == "IN_PROGRESS"
    fake.finish(job)
    first = client.get_document_text_detection(JobId=job, MaxResults=5000)
    assert first["JobStatus"] == "SUCCEEDED" and len(first["Blocks"]) == 1000 and first["DocumentMetadata"]["Pages"] == 60
    blocks, token = list(first["Blocks"]), first.get("NextToken")
    while token:
        more = client.get_document_text_detection(JobId=job, NextToken=token, MaxResults=700)
        assert len(more["Blocks"]) <= 700
        blocks += more["Blocks"]
        token = more.get("NextToken")
    assert len(blocks) == 60 * 23 and len({b["Id"] for b in blocks}) == len(blocks)
    assert [b["Page"] for b in blocks if b["BlockType"] == "PAGE"] == list(range(1, 61))
    with pytest.raises(ClientError, match="InvalidParameterException"):
        client.get_document_text_detection(JobId=job, NextToken="bm90IGEgdG9rZW4=")
    notified = json.loads(aws["sqs"].receive_message(QueueUrl=textract["inbox"])["Messages"][0]["Body"])
    assert notified["JobId"] == job and notified["Status"] == "SUCCEEDED"
    assert notified["DocumentLocation"] == {"S3ObjectName": key, "S3Bucket": "citewell-documents"}
