"""A 1,000-page scan read through Textract's asynchronous route, simulated (`tests.fake_textract` on
moto's S3): the parse that starts the job, the parse the job's completion runs (every page of
results read by NextToken, the record checkpointed on the way), and a retry after that (the pages
kept under ``ocr/``), each timed and its Python memory peak traced, with the calls each makes and
the bytes the results would be on the wire; then a completion's parse killed halfway through the
results and delivered again, with the calls the redelivery makes. A page reads as ``--lines``
lines of ``--words`` words (a dense typed page: 40 of 10). The scan is a PDF, or with ``--tiff`` a
multi-page TIFF of as many frames (what a scanner or a fax writes).

What the simulation cannot give is the service's own time: a job's minutes, and each
GetDocumentTextDetection round trip. Those are scaled from the calls counted, at the latencies
given (``--latency``), beside the Lambda limits the functions run under (docs/aws.md, "Scans").

    python -m benchmarks.textract_scale [--pages 1000] [--lines 40] [--words 10] [--tiff] [--latency 0.1 0.3 0.5]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from typing import Any

PARSE_TIMEOUT_S, OCR_TIMEOUT_S, MEMORY_MB = 300, 900, 2048  # infra/stacks/functions.py


def page_lines(lines: int, words: int):
    vocabulary = ("berth", "dredged", "survey", "harbour", "sounding", "metres", "tide", "channel", "buoy", "pilot")

    def read(number: int) -> list[str]:
        return [" ".join(f"{vocabulary[(number + n + m) % len(vocabulary)]}{m}" for m in range(words)) for n in range(lines)]

    return read


class Killed(BaseException):
    """The function's timeout, midway through the results (a BaseException: what kills the process is no error to handle)."""


def measure(pages: int, lines: int, words: int, tiff: bool = False) -> dict[str, Any]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "x")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "x")
    import boto3
    from moto import mock_aws

    from citewell.errors import OcrPending
    from citewell.objects.s3 import S3ObjectStore
    from citewell.ocr.textract import TextractOcr
    from citewell.ocr.textract_jobs import Channel, TextractJobs
    from citewell.parsers import parse
    from tests.fake_textract import FakeTextract, scanned, scanned_tiff

    with mock_aws():
        session = boto3.session.Session()
        s3, sns = session.client("s3"), session.client("sns")
        s3.create_bucket(Bucket="scans", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_bucket_versioning(Bucket="scans", VersioningConfiguration={"Status": "Enabled"})
        topic = sns.create_topic(Name="textract-done")["TopicArn"]
        name = "survey.tiff" if tiff else "survey.pdf"
        key, record = f"raw/t/{name}/" + "0" * 32, f"ocr/t/{name}/" + "0" * 32 + ".json"
        data = scanned_tiff(pages) if tiff else scanned(pages)
        version = s3.put_object(Bucket="scans", Key=key, Body=data)["VersionId"]
        service = boto3.session.Session()
        fake = FakeTextract(service.client("s3"), service.client("sns"), lines=page_lines(lines, words))
        client = session.client("textract")
        wire: list[int] = []  # what each GetDocumentTextDetection reply would weigh as JSON
        decode_s: list[float] = []  # and what botocore would spend decoding it

        service_s: list[float] = []  # the simulation's own work (the fake's blocks, the JSON written): not ours

        def weigh(parsed: dict[str, Any], **_: Any) -> None:
            started = time.process_time()
            body = json.dumps({k: v for k, v in parsed.items() if k != "ResponseMetadata"}).encode()
            wire.append(len(body))
            decoding = time.process_time()
            json.loads(body)
            decode_s.append(time.process_time() - decoding)
            service_s.append(decoding - started)

        answer = fake._get
        kill_at = [0]  # the GetDocumentTextDetection call (counted from 1) the function dies before; 0: none

        def timed(**kwargs: Any) -> Any:
            if kill_at[0] and len(fake.responses) + 1 == kill_at[0]:
                raise Killed(f"killed before call {kill_at[0]}")
            started = time.process_time()
            try:
                return answer(**kwargs)
            finally:
                service_s.append(time.process_time() - started)

        written: list[int] = []  # the bytes of each write of the OCR record

        def weigh_record(params: dict[str, Any], **_: Any) -> None:
            if params.get("Key") == record:
                written.append(len(params["Body"]))

        s3.meta.events.register("before-parameter-build.s3.PutObject", weigh_record)

        fake._get = timed  # type: ignore[method-assign]
        fake.install(client.meta.events)  # after the wrapping: install registers the bound methods it finds
        client.meta.events.register("after-call.textract.GetDocumentTextDetection", weigh)
        jobs = TextractJobs(client, Channel(topic, "arn:aws:iam::123456789012:role/textract"))
        objects = S3ObjectStore("scans", s3).pinned(key, version)

        def run(traced: bool) -> tuple[float, int, Any]:
            """CPU seconds of the parse less the simulation's own (the machine is shared: wall time
            would time the neighbours), or, ``traced``, its Python memory peak."""
            engine = jobs.for_upload(TextractOcr(client), objects, key, record, "0" * 32)
            if traced:
                tracemalloc.start()
            service_s.clear()
            started = time.process_time()
            try:
                outcome: Any = parse(data, name, max_bytes=500 * 1024 * 1024, ocr=engine)
            except OcrPending as pending:
                outcome = pending
            elapsed = time.process_time() - started - sum(service_s)
            peak = tracemalloc.get_traced_memory()[1] if traced else 0
            if traced:
                tracemalloc.stop()
            return elapsed, peak, outcome

        def reset() -> None:
            s3.delete_object(Bucket="scans", Key=record)
            fake.jobs.clear(), fake.tokens.clear(), fake.started.clear(), fake.responses.clear(), wire.clear(), decode_s.clear()
            written.clear()

        found: dict[str, Any] = {}
        for traced in (False, True):
            reset()
            start_s, start_peak, pending = run(traced)
            assert isinstance(pending, OcrPending), pending
            fake.finish()
            written.clear()
            read_s, read_peak, parsed = run(traced)
            calls, blocks = len(fake.responses), sum(fake.responses)
            checkpoints = written[:-1]  # the last write is the finished record
            retry_s, retry_peak, again = run(traced)
            assert len(fake.responses) == calls and len(fake.started) == 1 and again.text == parsed.text
            if traced:
                found |= {"start_peak": start_peak, "read_peak": read_peak, "retry_peak": retry_peak}
            else:
                found |= {"start_s": start_s, "read_s": read_s, "retry_s": retry_s, "decode_s": sum(decode_s),
                          "checkpoints": len(checkpoints), "checkpoint_bytes": sum(checkpoints)}
        kept = len(s3.get_object(Bucket="scans", Key=record)["Body"].read())
        # Killed halfway through the results, then delivered again.
        reset()
        run(False)
        fake.finish()
        kill_at[0] = calls // 2 + 1
        try:
            run(False)
            raise AssertionError("the kill did not happen")
        except Killed:
            pass
        kill_at[0] = 0
        before = len(fake.responses)
        resumed_s, _, resumed = run(False)
        assert resumed.text == parsed.text and len(fake.started) == 1
        found |= {"killed_after": before, "resumed_calls": len(fake.responses) - before, "resumed_s": resumed_s}
    return found | {"pages": pages, "lines": lines, "words": words, "kind": "TIFF" if tiff else "PDF", "file_bytes": len(data),
                    "blocks": blocks, "calls": calls,
                    "wire_bytes": sum(wire), "kept_bytes": kept, "text_chars": len(parsed.text),
                    "blocks_out": len(parsed.blocks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--lines", type=int, default=40)
    parser.add_argument("--words", type=int, default=10)
    parser.add_argument("--tiff", action="store_true", help="a multi-page TIFF of --pages frames, not a PDF")
    parser.add_argument("--latency", type=float, nargs="+", default=[0.1, 0.3, 0.5],
                        help="seconds per GetDocumentTextDetection round trip to scale the calls by")
    args = parser.parse_args()
    found = measure(args.pages, args.lines, args.words, args.tiff)
    mb = 1024 * 1024
    print(f"{found['pages']:,} pages of {found['lines']} lines of {found['words']} words; "
          f"the {found['kind']} {found['file_bytes'] / mb:.2f} MB")
    print("CPU seconds of the parse (the simulated service's own work taken out; botocore's decoding of the JSON in)")
    counted = "counts the frames" if found["kind"] == "TIFF" else "reads the text layers"
    print(f"start:  {found['start_s']:.2f} s, peak {found['start_peak'] / mb:.0f} MB (parse {counted}, starts one job)")
    print(f"read:   {found['read_s']:.2f} s, peak {found['read_peak'] / mb:.0f} MB: {found['calls']:,} GetDocumentTextDetection "
          f"calls for {found['blocks']:,} blocks, {found['wire_bytes'] / mb:.0f} MB as JSON (decoding it: "
          f"{found['decode_s']:.2f} s of that); kept under ocr/: {found['kept_bytes'] / mb:.1f} MB, after "
          f"{found['checkpoints']} checkpoint{'s' if found['checkpoints'] != 1 else ''} "
          f"writing {found['checkpoint_bytes'] / mb:.1f} MB")
    print(f"retry:  {found['retry_s']:.2f} s, peak {found['retry_peak'] / mb:.0f} MB, no call to Textract")
    print(f"killed after {found['killed_after']:,} of the {found['calls']:,} calls, then delivered again: "
          f"{found['resumed_s']:.2f} s, {found['resumed_calls']:,} calls")
    print(f"parsed: {found['text_chars']:,} characters in {found['blocks_out']:,} blocks")
    for latency in args.latency:
        total = found["read_s"] + found["calls"] * latency
        print(f"at {latency:.1f} s a round trip: the read takes {total:.0f} s of the OCR function's {OCR_TIMEOUT_S} s")


if __name__ == "__main__":
    main()
