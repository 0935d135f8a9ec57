"""Randomised interleavings of uploads, stages, deletes and role changes, checked after every step.

Several documents under two tenants are uploaded again and again with changing text and roles;
each upload's stages (parse, chunk, embed, publish) run one at a time, in an order drawn from a
seeded generator, mixed with deletes of whole documents. After each step (a *probe*) nothing
served or recorded may contradict the records and the model of what must have happened:

- a search under any identity returns only text of a document's active upload, and only to
  callers its record lets read it; the index rows of an active revision carry the record's roles;
- an upload publishes only while it is its document's latest upload and no delete came after it
  registered (an older upload never replaces a newer one, a delete is never undone);
- a document that is deleted and has no upload in flight has nothing left in any store.

At the end every upload still in flight runs to its end, every document is deleted, the audit
repairs what it finds and must then find nothing, and no file under a local home holds a byte
of any text. Used by ``tests/test_interleavings.py`` (a fixed-seed sample) and by ``make fuzz``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from citewell.audit import audit
from citewell.benchmarks.report import FUZZ_END, FUZZ_START
from citewell.deletion import delete_document
from citewell.errors import Conflict, NotFound
from citewell.ingest.stages import (
    IngestRequest,
    chunk_stage,
    embed_stage,
    parse_stage,
    publish_stage,
    register,
    release_embeddings,
)
from citewell.keys import STAGES, document_prefix
from citewell.models import DocumentStatus, Identity, Upload
from citewell.search import search
from citewell.services import Services

TENANTS = ("northpier", "bluefen")
DOCUMENTS = ("policy.md", "guide", "guide/intro.md")  # one id a path prefix of another, on purpose
ROLES = ("staff", "hr", "engineering")
SYLLABLES = ("zan", "quo", "rif", "tel", "mok", "vasp", "dru", "kel", "poth", "yim")


def marker(rng: random.Random) -> str:
    """A word no other text contains, so any byte of it found later is a leak or a residue."""
    return "".join(rng.choice(SYLLABLES) for _ in range(4)) + str(rng.randrange(10**6))


@dataclass
class InFlight:
    upload: Upload
    marker: str
    next_stage: int = 0  # 0 parse, 1 chunk, 2 embed, 3 publish
    revision: str | None = None
    content_sha256: str | None = None
    chunks: list = field(default_factory=list)  # type: ignore[type-arg]


@dataclass
class Model:
    """What must be true, kept independently of the stores."""

    latest: dict[tuple[str, str], str] = field(default_factory=dict)  # doc -> latest upload id registered since its last delete
    active: dict[tuple[str, str], tuple[str, frozenset[str]]] = field(default_factory=dict)  # doc -> (marker, roles) served
    served_markers: dict[str, tuple[str, str]] = field(default_factory=dict)  # every marker ever served -> doc
    gone: set[str] = field(default_factory=set)  # markers that may never be served again


class Violation(AssertionError):
    pass


class _PowerCut(Exception):
    """A process dying mid-operation."""


class Interleaver:
    def __init__(self, services: Services, seed: int, home: Path | None = None) -> None:
        self.services = services
        self.rng = random.Random(seed)
        self.home = home
        self.model = Model()
        self.in_flight: list[InFlight] = []
        self.probes = 0
        self.markers: set[str] = set()

    # -- operations ----------------------------------------------------------------------

    def upload(self) -> None:
        tenant, document_id = self.rng.choice(TENANTS), self.rng.choice(DOCUMENTS)
        key = (tenant, document_id)
        active = self.model.active.get(key)
        if active is not None and self.rng.random() < 0.25:
            word = active[0]  # the same text again: only the roles may change
        else:
            word = marker(self.rng)
        roles = frozenset(self.rng.sample(ROLES, self.rng.randint(1, 2)))
        text = f"# Notice\n\nThe {word} procedure applies to {tenant}. Every {word} request is logged.\n"
        try:
            upload = register(self.services, IngestRequest(
                document_id=document_id, tenant=tenant, allowed_roles=roles, data=text.encode(), filename="notice.md",
                title="Notice", source="interleavings",
            ))
        except Conflict:
            return  # a delete is under way: refused, nothing registered
        self.markers.add(word)
        self.model.latest[key] = upload.upload_id
        self.in_flight.append(InFlight(upload, word))

    def step(self, flight: InFlight) -> None:
        services, upload = self.services, flight.upload
        key = (upload.tenant, upload.document_id)
        if flight.next_stage == 0:
            outcome = parse_stage(services, upload)
            if outcome.status == "parsed":
                flight.revision, flight.content_sha256 = outcome.revision, outcome.content_sha256
            else:
                self._end(flight, superseded=outcome.status == "superseded")
                if outcome.status == "unchanged":
                    self._expect_latest(flight, "settled as unchanged")
                    self.model.active[key] = (flight.marker, upload.allowed_roles)
                return
        elif flight.next_stage == 1:
            chunked = chunk_stage(services, upload)
            if chunked is None:
                return self._end(flight, superseded=True)
            flight.chunks = chunked.chunks
        elif flight.next_stage == 2:
            embed_stage(services, flight.chunks)
        else:
            assert flight.revision and flight.content_sha256
            count = publish_stage(services, upload, flight.revision, flight.content_sha256)
            if count is None:
                release_embeddings(services, flight.chunks)  # as both drivers do after a superseded publish
                return self._end(flight, superseded=True)
            self._expect_latest(flight, "published")
            previous = self.model.active.get(key)
            if previous is not None and previous[0] != flight.marker:
                self.model.gone.add(previous[0])
            self.model.active[key] = (flight.marker, upload.allowed_roles)
            self.model.served_markers[flight.marker] = key
            self._end(flight, superseded=False)
            return
        flight.next_stage += 1

    def _expect_latest(self, flight: InFlight, what: str) -> None:
        key = (flight.upload.tenant, flight.upload.document_id)
        if self.model.latest.get(key) != flight.upload.upload_id:
            raise Violation(f"{what} upload {flight.upload.upload_id[:8]} of {key} though a newer upload or a delete came after it")

    def _end(self, flight: InFlight, superseded: bool) -> None:
        self.in_flight.remove(flight)
        key = (flight.upload.tenant, flight.upload.document_id)
        if superseded and self.model.latest.get(key) == flight.upload.upload_id:
            raise Violation(f"the latest upload {flight.upload.upload_id[:8]} of {key} was called superseded")

    def delete(self) -> None:
        """A whole delete, or one that stops right after its tombstone (a crash) and is finished later."""
        tenant, document_id = self.rng.choice(TENANTS), self.rng.choice(DOCUMENTS)
        key = (tenant, document_id)
        if self.rng.random() < 0.3:
            self.crash_after_tombstone(tenant, document_id)
        else:
            try:
                delete_document(self.services, tenant, document_id)
            except NotFound:
                pass
        self.model.latest.pop(key, None)
        active = self.model.active.pop(key, None)
        if active is not None:
            self.model.gone.add(active[0])

    def crash_after_tombstone(self, tenant: str, document_id: str) -> None:
        index = self.services.index
        original = index.revisions

        def power_cut(*args: object) -> list[str]:
            raise _PowerCut

        index.revisions = power_cut  # type: ignore[method-assign]  # the first read after the tombstone
        try:
            delete_document(self.services, tenant, document_id)
        except (_PowerCut, NotFound):
            pass
        finally:
            index.revisions = original  # type: ignore[method-assign]

    # -- checks --------------------------------------------------------------------------

    def check(self) -> None:
        self.probes += 1
        services = self.services
        for tenant in TENANTS:
            for document_id in DOCUMENTS:
                self._check_document(tenant, document_id)
        word = self.rng.choice(sorted(self.markers)) if self.markers else "procedure"
        for tenant in TENANTS:
            caller = Identity(tenant=tenant, roles=frozenset(self.rng.sample(ROLES, self.rng.randint(1, 2))))
            lanes = ("bm25", "vector") if self.probes % 5 == 0 else ("bm25",)
            for hit in search(services, caller, f"{word} procedure", k=10, lanes=lanes).hits:
                document = services.metadata.get_document(tenant, hit.document_id)
                active = self.model.active.get((tenant, hit.document_id))
                if document is None or active is None or not document.serves(hit.revision, caller):
                    raise Violation(f"{caller} was served {hit.document_id} at {hit.revision[:8]}, which the record does not serve them")
                if active[0] not in hit.text or not caller.roles & active[1]:
                    raise Violation(f"{caller} was served text of {hit.document_id} that is not its active upload's: {hit.text!r}")

    def _check_document(self, tenant: str, document_id: str) -> None:
        services, key = self.services, (tenant, document_id)
        document = services.metadata.get_document(tenant, document_id)
        active = self.model.active.get(key)
        if document is not None and document.active_revision is not None:
            if active is None:
                raise Violation(f"{key} serves revision {document.active_revision[:8]} though the model has nothing active")
            if document.allowed_roles != active[1]:
                raise Violation(f"{key}: the record's roles {set(document.allowed_roles)} are not the last published {set(active[1])}")
            for t, d, revision, roles, _ in services.index.access_inventory():
                if (t, d, revision) == (tenant, document_id, document.active_revision) and roles != document.allowed_roles:
                    raise Violation(f"{key}: index rows carry roles {set(roles)}, the record {set(document.allowed_roles)}")
        elif active is not None:
            raise Violation(f"{key} should serve {active[0]} but serves nothing")
        if any((f.upload.tenant, f.upload.document_id) == key for f in self.in_flight):
            return
        if document is not None and document.status is DocumentStatus.DELETING:
            return  # a delete that stopped half way: finished by the next delete or the audit
        # Settled: only the served upload's things may exist, and nothing at all of a deleted document.
        served = document.active_upload if document is not None else None
        revisions = {document.active_revision} if document is not None and document.active_revision else set()
        objects = [k for stage in STAGES for k in services.objects.list(document_prefix(stage, tenant, document_id))]
        stray = [k for k in objects if served is None or served not in k]
        stray += [f"upload {u.upload_id}" for u in services.metadata.list_uploads(tenant, document_id) if u.upload_id != served]
        stray += [f"chunk records of {r[:8]}" for r in set(services.metadata.chunk_revisions(tenant, document_id)) - revisions]
        stray += [f"index rows of {r[:8]}" for r in set(services.index.revisions(tenant, document_id)) - revisions]
        if stray:
            state = "is deleted" if document is None else "has no upload in flight"
            raise Violation(f"{key} {state}, yet something not served is left: {stray[:3]}")

    # -- the run -------------------------------------------------------------------------

    def run(self, steps: int, on_probe: Callable[[int], None] | None = None) -> int:
        for _ in range(steps):
            roll = self.rng.random()
            if roll < 0.25 or not self.in_flight:
                self.upload()
            elif roll < 0.33:
                self.delete()
            else:
                self.step(self.rng.choice(self.in_flight))
            self.check()
            if on_probe:
                on_probe(self.probes)
        self.finish()
        return self.probes

    def finish(self) -> None:
        while self.in_flight:
            self.step(self.rng.choice(self.in_flight))
            self.check()
        for tenant in TENANTS:
            for document_id in DOCUMENTS:
                try:
                    delete_document(self.services, tenant, document_id)
                except NotFound:
                    pass
        self.model.gone |= {m for m, _ in self.model.active.values()}
        self.model.active.clear()
        self.model.latest.clear()
        report = audit(self.services, repair=True, stuck=timedelta(0))
        if report.findings:  # every upload ran to its end and every document was deleted: nothing may be left
            raise Violation(f"after every upload finished and every document was deleted the audit finds: {report.findings}")
        self.check()
        if self.home is not None:
            self._no_residue()

    def _no_residue(self) -> None:
        assert self.home is not None
        needles = [m.encode() for m in self.markers]
        for path in sorted(p for p in self.home.rglob("*") if p.is_file()):
            data = path.read_bytes()
            found = [n.decode() for n in needles if n in data]
            if found:
                raise Violation(f"{path.relative_to(self.home)} still holds {found[:3]} after every document was deleted")


def fuzz_block(probes: int, runs: int, seconds: float, failures: list[str], command: str) -> str:
    lines = [FUZZ_START, "## Interleavings (`make fuzz`)", "",
             f"`{command}` on {time.strftime('%Y-%m-%d', time.gmtime())}: {probes:,} probes in {runs} seeded runs "
             f"({seconds / 60:.1f} minutes), each run {STEPS} random steps of uploads (new text, the same text with "
             "other roles), single stages of any upload in flight, whole deletes and deletes that stop after their "
             "tombstone, on the embedded stores (every fourth run on DynamoDB and S3 on moto); a probe is one step "
             "followed by every check in `tests/interleavings.py`, and each run ends with all uploads finished, every "
             "document deleted, an audit that must find nothing and, on the embedded stores, no byte of any text left "
             "in any file of the home.", ""]
    lines += [f"Failures: {len(failures)}.", ""]
    lines += [f"- {f}" for f in failures] + ([""] if failures else [])
    return "\n".join(lines + [FUZZ_END])


def write_block(path: Path, block: str) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    start, end = text.find(FUZZ_START), text.find(FUZZ_END)
    if start >= 0 and end >= 0:
        text = text[:start] + block + text[end + len(FUZZ_END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


STEPS = 300


def main() -> int:
    """``make fuzz``: seeded runs until at least ``--probes`` probes; the result goes into BENCHMARKS.md."""
    import argparse
    import tempfile
    import traceback

    from citewell.embedders.minilm import MiniLMEmbedder

    from tests.conftest import make_services

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--probes", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"))
    parser.add_argument("--first-seed", type=int, default=1000)
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    started, probes, runs, failures = time.monotonic(), 0, 0, []
    seed = args.first_seed
    while probes < args.probes:
        with tempfile.TemporaryDirectory() as folder:
            home = Path(folder)
            services = make_services(home, embedder)
            interleaver = Interleaver(services, seed, home=home)
            try:
                if runs % 4 == 3:
                    with cloud_stores(services):
                        interleaver.home = None  # the index stays local; the rest lives in moto
                        interleaver.run(STEPS)
                else:
                    interleaver.run(STEPS)
            except Exception as error:  # a violation, or a crash: both are failures to report
                failures.append(f"seed {seed}, probe {interleaver.probes}: {type(error).__name__}: {error}")
                traceback.print_exc()
            probes += interleaver.probes
        runs += 1
        seed += 1
        print(f"{probes} probes, {runs} runs, {len(failures)} failures", flush=True)
    command = f"python -m tests.interleavings --probes {args.probes}"
    write_block(args.out, fuzz_block(probes, runs, time.monotonic() - started, failures, command))
    return 1 if failures else 0


@contextmanager
def cloud_stores(services: Services) -> Iterator[Services]:
    """``services`` with DynamoDB and S3 (moto) as metadata and object stores, built as the stack builds them."""
    import os

    import boto3
    from moto import mock_aws

    from citewell.aws.metadata import TABLE_DEFINITION, DynamoMetadataStore
    from citewell.aws.objects import S3ObjectStore

    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        credentials = {"region_name": "eu-west-1", "aws_access_key_id": "x", "aws_secret_access_key": "y"}
        dynamodb = boto3.resource("dynamodb", **credentials)
        dynamodb.create_table(TableName="citewell-metadata", **TABLE_DEFINITION)
        s3 = boto3.client("s3", **credentials)
        s3.create_bucket(Bucket="citewell-interleavings", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_bucket_versioning(Bucket="citewell-interleavings", VersioningConfiguration={"Status": "Enabled"})
        services.metadata = DynamoMetadataStore("citewell-metadata", dynamodb)
        services.objects = S3ObjectStore("citewell-interleavings", s3)
        yield services


if __name__ == "__main__":
    raise SystemExit(main())
