"""Randomised interleavings of every operation, with simulated kill -9, checked after every step.

Several documents under two tenants are uploaded again and again with changing text and roles;
each upload's stages (register, parse, chunk, embed, publish) run one at a time in an order drawn
from a seeded generator, mixed with whole replacements, deletes, asks (the extractive generator,
and a scripted model that cites one source but repeats a rare word of another, uncited one),
asks repeated to hit the answer cache, asks inside a conversation (first questions and
follow-ups quoting a word of a document the asker reads, as people paste what they read),
feedback on a turn's answer (its comment quoting the same word), ``recorded_citations``
look-ups, and ``audit`` with and without ``--repair``.

Every store call is a *step* of the operation making it: there another operation may run whole
(a delete or a replacement landing inside an ask between retrieval and recording, an upload
registering or publishing inside an audit after its snapshot), and at a drawn write the process
dies as under kill -9 (the write and everything after it never happen, its lease is dead). A
restart then runs what a restarted server runs (``adopt_orphans``, the uploads it resumes, the
deletions it finishes) and a read-only audit.

After each step (a *probe*), whatever is served, recorded or cached may not contradict the records:

- a search under any identity returns only text of a document's active upload, only to callers
  its record lets read it; its index rows carry the record's roles;
- nothing current was removed: an active revision is indexed in full, its chunk records and raw
  upload exist; a current upload whose process lives still has its raw upload;
- an answer record shown by ``recorded_citations`` is shown only to a caller who may read every
  source it was given, and holds no word the caller may not read; no answer record, cache entry
  or unit vector holds text of a document or revision that is gone;
- a conversation turn whose answer was withdrawn (a source deleted or replaced) keeps no words and
  no feedback, and no turn or feedback comment holds a word of a gone source its answer rested on;
  a turn whose answer stands keeps its words and the last feedback given on it;
- an upload publishes only while it is the latest; a replaced revision leaves nothing behind once
  its publish (or the restart after it died) ended; a settled document keeps only what it serves;
- after a restart, a read-only audit that says ok means no byte of a deleted document is left.

At the end every upload runs to its end, every document is deleted, ``audit --repair`` runs, a
read-only audit must find nothing, every turn whose answer rested on a source is withdrawn
without feedback, and no byte of any text is left under the home (files, and tantivy's term
dictionaries asked directly) but the words of questions that read nothing (the asker's own). ``tests/integrity/test_interleavings.py`` runs a fixed-seed
sample; ``make fuzz`` runs many more and reports into BENCHMARKS.md.
"""

from __future__ import annotations

import random
import re
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.report import FUZZ_END, FUZZ_START
from benchmarks.report import write_block as replace_block
from citewell.answers.extractive.generator import ExtractiveGenerator
from citewell.answers.service import ask, recorded_citations
from citewell.audit import audit
from citewell.conversations import ask_in_conversation, give_feedback
from citewell.deletion import delete_document
from citewell.errors import CitewellError, Conflict, NotFound
from citewell.ingest.orphans import adopt_orphans
from citewell.ingest.runner import resume_vectors
from citewell.ingest.stages import (
    IngestRequest,
    chunk_stage,
    embed_stage,
    parse_stage,
    publish_stage,
    record_failure,
    register,
    release_embeddings,
    vector_stage,
)
from citewell.keys import STAGES, document_prefix, raw_key, units_identity
from citewell.leases import Lease, current
from citewell.models.answers import Draft
from citewell.models.documents import Document, DocumentStatus, Upload
from citewell.models.evidence import EvidenceItem
from citewell.models.identity import Identity
from citewell.ports import Generator
from citewell.records import current_upload, is_current
from citewell.search import search
from citewell.services import Records, Services, records
from tests.residue import file_residue, sqlite_rows, tantivy_residue

TENANTS = ("northpier", "bluefen")
DOCUMENTS = ("policy.md", "guide", "guide/intro.md")  # one id a path prefix of another, on purpose
ROLES = ("staff", "hr", "engineering")
TOPICS = ("berth", "gate", "ledger")
SUBJECTS = ("anna", "ben")  # whose conversations (a token's sub)
SYLLABLES = ("zan", "quo", "rif", "tel", "mok", "vasp", "dru", "kel", "poth", "yim")
IDENTITY_ROLES = [frozenset(c) for c in (("staff",), ("hr",), ("engineering",), ("staff", "hr"),
                                         ("staff", "engineering"), ("hr", "engineering"), ROLES)]
WRITES = {  # by the Services attribute a store is reached through: the object store, each record role, the index
    "objects": {"put", "delete"},
    "documents": {"save_document", "delete_document"},
    "uploads": {"put_upload", "delete_upload"},
    "chunks": {"put_chunks", "delete_chunks"},
    "embeddings": {"put_embeddings", "delete_embeddings", "delete_unused_embeddings", "delete_identity"},
    "answers": {"put_answer", "record_answer"},
    "answer_cache": {"drop_cached_answers", "bump_epoch", "put_cached_answer"},
    "conversations": {"save_conversation", "delete_conversation"},
    "removals": {"begin_removal", "end_removal", "clear_removals", "compact"},
    "index": {"upsert", "set_vectors", "flush", "delete_revision", "delete_document", "compact"},
}
RECORDS = tuple(Records.__annotations__)  # the record roles, one store behind them all
# The writes a process may be drawn to die at: the record roles' in one run ordered by method, as
# one store's, so each seed keeps drawing the points its runs were checked with.
KILL_POINTS = [*(f"objects.{m}" for m in sorted(WRITES["objects"])),
               *sorted((f"{r}.{m}" for r in RECORDS for m in WRITES[r]), key=lambda point: point.partition(".")[2]),
               *(f"index.{m}" for m in sorted(WRITES["index"]))]
INJECT = 0.03  # the chance that another operation runs whole at one store call of an operation
INJECT_GENERATE = 0.35  # ... at the generator's call, between an ask's retrieval and its recording
CRASH = 0.12  # the chance that an operation is drawn to die at one of its writes


def marker(rng: random.Random) -> str:
    """A word no other text contains (letters only: a model may repeat it, and verification lets
    words through but not numbers), so any byte of it found later is a leak or a residue."""
    return "".join(rng.choice(SYLLABLES) for _ in range(4)) + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(4))


def text_of(word: str, topic: str, tenant: str) -> str:
    return f"# Notice\n\nThe {topic} procedure of {word} applies to {tenant}. Every {word} request is logged at the {topic}.\n"


class Violation(AssertionError):
    """A broken invariant; ``kind`` names which, so a run can be told to look past kinds already found."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"[{kind}] {message}")
        self.kind = kind


class Killed(BaseException):  # noqa: N818 (a signal, not an error: no `except Exception` may swallow it)
    """kill -9 of the process running the operation."""


class Process:
    """A simulated process: a sleeping child stands in for it, so the leases its records carry are
    judged by :func:`citewell.leases.is_dead` as a real owner's would be (alive, then dead at once)."""

    def __init__(self) -> None:
        self.child = subprocess.Popen(["sleep", "86400"])
        self.lease = Lease(host=socket.gethostname(), pid=self.child.pid)

    def kill(self) -> None:
        self.child.kill()
        self.child.wait()


class Boundary:
    """One store, as seen by the simulated processes: each call is a step where another operation
    may run, each write a point where the process may die; leases written name the acting process."""

    def __init__(self, store: Any, name: str, world: Interleaver) -> None:
        self._store, self._name, self._world = store, name, world

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._store, attr)
        if attr.startswith("_") or not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            args = self._world.before(self._name, attr, args)
            return value(*args, **kwargs)

        return call


@dataclass
class InFlight:
    upload: Upload
    marker: str
    next_stage: int = 0  # 0 parse, 1 chunk, 2 embed, 3 publish; staged: 2 publish by words, then its vectors follow
    staged: bool = False  # published before its vectors (as the local runner does), or embedded first (serve, AWS)
    revision: str | None = None
    content_sha256: str | None = None
    chunks: list = field(default_factory=list)  # type: ignore[type-arg]


@dataclass
class Asked:
    """An answer the fuzz asked for: who asked, and every source the generator was given."""

    tenant: str
    answer_id: str
    asker: Identity
    given: set[tuple[str, str]]


@dataclass
class Said:
    """A turn the fuzz kept in a conversation, and the last feedback it gave on its answer."""

    asker: Identity
    conversation_id: str
    answer_id: str
    asked: str
    rested_on: set[tuple[str, str]]  # every source its answer was given (or, from the cache, rests on)
    feedback: bool = False  # given, and the comment it was given with
    comment: str | None = None


@dataclass
class Model:
    """What must be true, kept independently of the stores (resynced from them after a crash)."""

    latest: dict[tuple[str, str], str] = field(default_factory=dict)  # doc -> latest upload id registered since its last delete
    active: dict[tuple[str, str], tuple[str, frozenset[str]]] = field(default_factory=dict)  # doc -> (marker, roles) served
    ever_active: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # doc -> every revision it ever served
    ever_served: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # doc -> every upload it ever served
    deleted: set[str] = field(default_factory=set)  # markers once served by a document whose delete finished


class Recording:
    """A generator port that notes the evidence it was given (an ask records every source it was
    given, not only the cited ones) and is a step where another operation may run."""

    def __init__(self, inner: Generator, world: Interleaver) -> None:
        self.inner, self.world, self.given = inner, world, set[tuple[str, str]]()
        self.fingerprint = getattr(inner, "fingerprint", "")

    @property
    def name(self) -> str:
        return self.inner.name

    def generate(self, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        # The last pass's evidence: an ask whose source changed before its record asks again, and
        # the answer it keeps rests on that pass alone.
        self.given = {(e.document_id, e.revision) for e in evidence}
        self.world.maybe_inject("generate", INJECT_GENERATE)
        return self.inner.generate(question, evidence)


_SOURCE = re.compile(r'<source id="(S\d+)"[^>]*>\n(.*?)\n</source>', re.S)


def scripted_reply(body: dict) -> Any:  # type: ignore[type-arg]
    """What a summarising model might write: a true quote of S1, cited, and the rare word of
    another source it does not cite (from another document, when there is one)."""
    from tests.fake_model_service import Reply

    prompt = body["messages"][-1]["content"]
    sources = _SOURCE.findall(prompt)
    if not sources:
        return Reply(body={"choices": [{"message": {"role": "assistant", "content": "NOT_IN_DOCUMENTS"}}]})
    ref, text = sources[0]
    sentence = next((s.strip() for s in re.split(r"(?<=\.)\s", text) if "procedure" in s), text.splitlines()[-1]).rstrip(".")
    words = {w for _, t in sources[1:] for w in re.findall(r"\b[a-z]{14,}\b", t)} - set(re.findall(r"\b[a-z]{14,}\b", text))
    extra = f" It also covers {sorted(words)[0]}." if words else ""
    content = f'The procedure: "{sentence}" [{ref}].{extra}'
    return Reply(body={"choices": [{"message": {"role": "assistant", "content": content}}]})


class Interleaver:
    def __init__(self, services: Services, seed: int, home: Path | None = None, model_url: str | None = None,
                 crashes: bool = True, skip: frozenset[str] = frozenset()) -> None:
        self.skip = skip  # kinds of violation not raised (to look for others past a known defect)
        self.log: list[str] = []  # the operations so far, for a failure's story
        self.rng = random.Random(seed)
        self.home = home
        self.model_url = model_url
        self.crashes = crashes
        self.real = services
        self.services = Services(
            objects=Boundary(services.objects, "objects", self),
            **{role: Boundary(getattr(services, role), role, self) for role in RECORDS},
            index=Boundary(services.index, "index", self), embedder=services.embedder, chunker=services.chunker,
            max_bytes=services.max_bytes,
        )
        self.model = Model()
        self.in_flight: list[InFlight] = []
        self.changes: Counter[tuple[str, str]] = Counter()  # deletes and publishes per document, to tell one ran inside a stage
        self.running: list[InFlight] = []  # uploads whose stage is under way (an operation may run inside it)
        self.abandoned: set[str] = set()  # uploads whose process died, left to a restart or the audit
        self.abandoned_revisions: set[str] = set()
        self.marker_of: dict[str, str] = {}  # upload id -> its text's marker
        self.asked: list[Asked] = []
        self.questions: list[tuple[Identity, str, bool]] = []
        self.probes = 0
        self.markers: set[str] = set()
        self.ops: Counter[str] = Counter()
        self.process = Process()
        self.real_lease = current()
        self.depth = 0  # 1 inside a top-level operation, 2 inside one run at its step
        self.writes = 0
        self.kill_at: int | tuple[str, int] | None = None
        self.calls: Counter[str] = Counter()
        self.dead = False
        self.current = ""
        self.pending_marker: str | None = None
        self.registering: set[str] = set()  # uploads whose intent is stored but whose register has not returned
        self.topic_of: dict[str, str] = {}
        self.vectorless: list[list[Any]] = []  # chunks of revisions published by words, their vectors to follow
        self.said: dict[str, Said] = {}  # answer id -> the turn kept with it (its latest), by a conversation ask that returned
        self.marker_of_revision: dict[str, str] = {}

    def violation(self, kind: str, message: str) -> None:
        if kind not in self.skip:
            raise Violation(kind, message)
        self.ops[f"skipped violation: {kind}"] += 1

    def note(self, event: str) -> None:
        self.log.append(f"p{self.probes} {'  ' * self.depth}{event}")
        del self.log[:-60]

    # -- the boundary --------------------------------------------------------------------

    def before(self, store: str, method: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
        if self.dead:
            raise Killed
        if self.depth and method in WRITES[store]:
            self.writes += 1
            self.calls[f"{store}.{method}"] += 1
            if self.kill_at == self.writes or self.kill_at == (f"{store}.{method}", self.calls[f"{store}.{method}"]):
                self.dead = True
                self.ops[f"crash at {store}.{method}"] += 1
                self.ops[f"crash in {self.current}"] += 1
                self.note(f"kill -9 at {store}.{method} #{self.calls[f'{store}.{method}']}")
                raise Killed
        if method in ("save_document", "put_upload") and args and getattr(args[0], "lease", None) == self.real_lease:
            args = (args[0].model_copy(update={"lease": self.process.lease}), *args[1:])
        if method == "begin_removal" and args and args[0] == self.real_lease:  # the intent is the simulated process's
            args = (self.process.lease, *args[1:])
        if method == "put_upload" and self.pending_marker is not None:
            self.marker_of[args[0].upload_id] = self.pending_marker
            self.registering.add(args[0].upload_id)
        if self.depth == 1:
            self.maybe_inject(f"{store}.{method}", INJECT)
        return args

    def maybe_inject(self, where: str, chance: float) -> None:
        """At a step of the running operation, maybe run another one whole (as another process would)."""
        if self.depth != 1 or self.rng.random() >= chance:
            return
        self.depth = 2
        pending = self.pending_marker
        try:
            kind = self.rng.choice(("delete", "replace", "stage", "ask", "converse", "feedback"))
            self.ops[f"inside: {kind}"] += 1
            self.ops[f"interleaved with {self.current}"] += 1
            self.note(f"inside {where}: {kind}")
            {"delete": self.delete, "replace": self.replace, "stage": self.any_stage, "ask": self.ask,
             "converse": self.converse, "feedback": self.feedback}[kind]()
        finally:
            self.depth, self.pending_marker = 1, pending

    @contextmanager
    def operation(self, name: str) -> Iterator[None]:
        """A top-level operation; it may be drawn to die at one of its writes."""
        self.ops[name] += 1
        self.current = name
        self.note(name)
        self.depth, self.writes, self.calls, self.kill_at = 1, 0, Counter(), None
        if self.crashes and self.rng.random() < CRASH:
            if self.rng.random() < 0.5:
                self.kill_at = self.rng.randrange(1, 30)
            else:
                method = self.rng.choice(KILL_POINTS)
                self.kill_at = (method, self.rng.randint(1, 2))
        try:
            yield
        except Killed:
            self.depth, self.kill_at = 0, None
            self.restart()
        finally:
            self.depth, self.kill_at, self.pending_marker = 0, None, None

    # -- operations ----------------------------------------------------------------------

    def upload(self, key: tuple[str, str] | None = None) -> InFlight | None:
        tenant, document_id = key or (self.rng.choice(TENANTS), self.rng.choice(DOCUMENTS))
        key = (tenant, document_id)
        active = self.model.active.get(key)
        same = active is not None and self.rng.random() < 0.25
        word = active[0] if active is not None and same else marker(self.rng)  # the same text: only the roles change
        roles = frozenset(self.rng.sample(ROLES, self.rng.randint(1, 2)))
        topic = self.topic_of.setdefault(word, self.rng.choice(TOPICS))
        self.markers.add(word)
        self.pending_marker = word
        try:
            upload = register(self.services, IngestRequest(
                document_id=document_id, tenant=tenant, allowed_roles=roles, data=text_of(word, topic, tenant).encode(),
                filename="notice.md", title="Notice", source="interleavings",
            ))
        except Conflict:
            return None  # a delete is under way: refused, nothing registered
        finally:
            self.pending_marker = None
        self.marker_of[upload.upload_id] = word
        self.registering.discard(upload.upload_id)
        # A register's moment is its record write: an operation run inside it (a delete, a whole
        # replacement) may come before or after that write, so the record says which happened.
        record = self.real.documents.get_document(*key)
        if record is not None and is_current(record, upload):
            self.model.latest[key] = upload.upload_id
        flight = InFlight(upload, word, staged=self.rng.random() < 0.5)
        self.in_flight.append(flight)
        return flight

    def replace(self) -> None:
        """A whole upload in one go (a replacement when the document is served)."""
        flight = self.upload()
        while flight is not None and flight in self.in_flight:
            self.step(flight)

    def any_stage(self) -> None:
        idle = [f for f in self.in_flight if f not in self.running]  # a stage under way is not run again inside itself
        if self.vectorless and (not idle or self.rng.random() < 0.3):
            self.vectors()
        elif idle:
            self.step(self.rng.choice(idle))

    def vectors(self) -> None:
        """The second step of a staged publication: a published revision's vectors (as the runner
        embeds them between documents, or the next ingest for a run that stopped)."""
        chunks = self.vectorless.pop(self.rng.randrange(len(self.vectorless)))
        tenant, document_id, revision = chunks[0].tenant, chunks[0].document_id, chunks[0].revision
        vector_stage(self.services, chunks)
        document = self.real.documents.get_document(tenant, document_id)
        waiting = {(t, d, r) for t, d, r, _ in self.real.index.vectorless()}
        if document is not None and document.active_revision == revision and (tenant, document_id, revision) in waiting:
            self.violation("vectors-lost", f"{(tenant, document_id)}: its vector stage ended with revision {revision[:8]} "
                                           "still served and rows of it still waiting for vectors")
        rows = self.real.index.inventory()
        if (tenant, document_id, revision) not in {(t, d, r) for t, d, r, _ in rows}:
            left = self.real.embeddings.embedding_hashes(self.real.embedder.identity) & {c.content_hash for c in chunks}
            left -= self.real.chunks.hashes_in_use(left)
            if left:
                self.violation("recorded-after-delete", f"{(tenant, document_id)}: vectors were made for revision {revision[:8]} "
                                                        f"after it was deleted or replaced, and {len(left)} stay cached")

    def step(self, flight: InFlight) -> None:
        if flight not in self.in_flight:
            return  # finished by an operation run inside this one
        self.running.append(flight)
        try:
            self._stage(flight)
        except CitewellError as error:  # as both drivers do: the upload fails with its reason
            self.ops[f"stage failed: {error.code}"] += 1
            record_failure(self.services, flight.upload, error)
            if flight.chunks:
                release_embeddings(self.services, flight.chunks)
            if flight in self.in_flight:
                self.in_flight.remove(flight)
        finally:
            self.running.remove(flight)

    def _stage(self, flight: InFlight) -> None:
        services, upload = self.services, flight.upload
        key = (upload.tenant, upload.document_id)
        # Operations run inside this stage may delete or replace the document after its switch:
        # whether the upload was the latest is judged as the stage began, and it is the served one
        # afterwards only if nothing deleted or published the document meanwhile.
        latest, changes = self.model.latest.get(key), self.changes[key]
        if flight.next_stage == 0:
            outcome = parse_stage(services, upload)
            if outcome.status == "parsed":
                flight.revision, flight.content_sha256 = outcome.revision, outcome.content_sha256
                self.marker_of_revision[outcome.revision] = flight.marker
            else:
                self._end(flight, superseded=outcome.status == "superseded")
                if outcome.status == "unchanged":
                    self._expect_latest(flight, "settled as unchanged", latest)
                    self._served(key, flight, changes)
                return
        elif flight.next_stage == 1:
            chunked = chunk_stage(services, upload)
            if chunked is None:
                return self._end(flight, superseded=True)
            flight.chunks = chunked.chunks
        elif flight.next_stage == 2 and not flight.staged:
            embed_stage(services, flight.chunks)
        else:
            assert flight.revision and flight.content_sha256
            count = publish_stage(services, upload, flight.revision, flight.content_sha256, vectors_follow=flight.staged)
            if count is None:
                release_embeddings(services, flight.chunks)  # as both drivers do after a superseded publish
                return self._end(flight, superseded=True)
            self._expect_latest(flight, "published", latest)
            self._served(key, flight, changes)
            self._end(flight, superseded=False)
            if flight.staged:
                self.vectorless.append(flight.chunks)  # searchable by words now; its vectors follow
            return
        if flight in self.in_flight:
            flight.next_stage += 1

    def _served(self, key: tuple[str, str], flight: InFlight, changes: int) -> None:
        if self.changes[key] == changes:
            self.model.active[key] = (flight.marker, flight.upload.allowed_roles)
            self.changes[key] += 1

    def _expect_latest(self, flight: InFlight, what: str, latest: str | None) -> None:
        key = (flight.upload.tenant, flight.upload.document_id)
        if latest != flight.upload.upload_id:
            self.violation("order", f"{what} upload {flight.upload.upload_id[:8]} of {key} though a newer upload or a delete came after it")

    def _end(self, flight: InFlight, superseded: bool) -> None:
        if flight in self.in_flight:
            self.in_flight.remove(flight)
        key = (flight.upload.tenant, flight.upload.document_id)
        if superseded and self.model.latest.get(key) == flight.upload.upload_id:
            # The model learns of a newer upload when its register returns; an operation run inside
            # that register (after its record write) already meets the newer sequence number.
            record = self.real.documents.get_document(*key)
            newer = record is not None and (record.generation != flight.upload.generation or record.upload_seq > flight.upload.seq)
            if not newer:
                self.violation("order", f"the latest upload {flight.upload.upload_id[:8]} of {key} was called superseded")

    def delete(self, key: tuple[str, str] | None = None) -> None:
        tenant, document_id = key or (self.rng.choice(TENANTS), self.rng.choice(DOCUMENTS))
        key = (tenant, document_id)
        self.changes[key] += 1
        self.model.latest.pop(key, None)  # from its tombstone on, no upload registered before may publish
        active = self.model.active.pop(key, None)
        if active is not None:  # before it runs: a kill -9 in its compaction still leaves it deleted
            self.model.deleted.add(active[0])
        try:
            delete_document(self.services, tenant, document_id)
        except NotFound:
            pass
        # A delete's moment is its tombstone: a replacement run inside it before that write was
        # published and then deleted with the rest; one run after the record went is a new life.
        record = self.real.documents.get_document(tenant, document_id)
        if record is None or record.status is DocumentStatus.DELETING:
            self.model.latest.pop(key, None)
            served = self.model.active.pop(key, None)
            if served is not None:
                self.model.deleted.add(served[0])

    def ask(self, again: bool = False) -> None:
        """An ask, by the extractive generator or the scripted model; ``again``: a question asked before."""
        if again and self.questions:
            identity, question, model = self.rng.choice(self.questions)
        else:
            identity = Identity(tenant=self.rng.choice(TENANTS), roles=self.rng.choice(IDENTITY_ROLES))
            question = f"What is the {self.rng.choice(TOPICS)} procedure?"
            model = self.model_url is not None and self.rng.random() < 0.5
            self.questions.append((identity, question, model))
        inner: Generator
        if model:
            from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator

            inner = OpenAICompatibleGenerator(base_url=self.model_url, model="scripted", api_key=None, timeout=10)
        else:
            inner = ExtractiveGenerator(self.services.embedder, self.services.embeddings)
        generator = Recording(inner, self)
        readable = self._readable(identity)
        answer = ask(self.services, identity, question, generator=generator)
        readable |= self._readable(identity)
        self.asked.append(Asked(identity.tenant, answer.answer_id, identity, generator.given))
        told = self._markers_in(answer.answer or "")
        if told - readable:
            self.violation("answer-unreadable", f"{identity} was answered with words of text it could not read during the ask: {sorted(told - readable)}")

    def converse(self) -> None:
        """A question in a conversation: a follow-up in one the fuzz kept, or a first question by a
        named caller; it quotes a word of a document the caller reads now (people paste what they read)."""
        follow = self.rng.random() < 0.6 and self.said
        if follow:
            earlier = self.rng.choice(list(self.said.values()))
            identity, conversation_id = earlier.asker, earlier.conversation_id
        else:
            identity = Identity(tenant=self.rng.choice(TENANTS), roles=self.rng.choice(IDENTITY_ROLES),
                                subject=self.rng.choice(SUBJECTS))
            conversation_id = None
        readable = sorted(self._readable(identity))
        quoted = self.rng.choice(readable) if readable else marker(self.rng)  # the asker's own word, else
        self.markers.add(quoted)
        topic = self.rng.choice(TOPICS)
        asked = f"and the {topic} procedure of {quoted}?" if follow else f"What is the {topic} procedure of {quoted}?"
        generator = Recording(ExtractiveGenerator(self.services.embedder, self.services.embeddings), self)
        try:
            answer = ask_in_conversation(self.services, identity, asked, conversation_id,
                                         lambda question: self._recorded(ask(self.services, identity, question, generator=generator),
                                                                         identity, generator), generator)
        except NotFound:
            return  # its conversation is gone (none expire in a run: a defect the checks name)
        rested = self.asked[-1].given if self.asked and self.asked[-1].answer_id == answer.answer_id else set(generator.given)
        self.said[answer.answer_id] = Said(identity, answer.conversation_id or "", answer.answer_id, asked, rested)

    def _recorded(self, answer: Any, identity: Identity, generator: Recording) -> Any:
        """Between an answer's record and its turn's: another operation may run here (a delete of
        its source). The answer is checked as every ask's is from here on, kept turn or not."""
        record = self.real.answers.get_answer(identity.tenant, answer.answer_id)
        rested = set(generator.given) | (record.rests_on() if record is not None else set())
        self.asked.append(Asked(identity.tenant, answer.answer_id, identity, rested))
        self.maybe_inject("answer recorded, turn not yet kept", INJECT_GENERATE)
        return answer

    def feedback(self) -> None:
        """Feedback on a turn's answer, its comment quoting the word its question quoted."""
        if not self.said:
            return self.converse()
        said = self.rng.choice(list(self.said.values()))
        quoted = min(self._markers_in(said.asked), default="")
        comment = f"wrong about {quoted}" if self.rng.random() < 0.8 else None
        try:
            given = give_feedback(self.services, said.asker, said.answer_id, self.rng.random() < 0.3, comment)
        except NotFound:
            return  # withdrawn, or no longer the asker's to read
        said.comment = given.feedback.comment if given.feedback else None
        said.feedback = True

    def _readable(self, identity: Identity) -> set[str]:
        """The markers of the active uploads ``identity`` may read now."""
        return {self.marker_of.get(d.active_upload or "", "") for d in self.real.documents.list_documents(identity.tenant)
                if d.active_revision and identity.can_see(d.tenant, d.allowed_roles)} - {""}

    def _markers_in(self, text: str) -> set[str]:
        return {m for m in self.markers if m in text}

    def run_audit(self, repair: bool) -> None:
        report = audit(self.services, repair=repair)
        self.ops[f"audit findings ({'repair' if repair else 'read-only'})"] += len(report.findings)
        self.resync()

    # -- a restart -----------------------------------------------------------------------

    def restart(self) -> None:
        """What follows a kill -9: the process is gone, a new one starts and takes over what it
        left (as ``citewell serve`` does), then an operator's read-only audit; if that says ok,
        no byte of a deleted document may be left."""
        self.dead = False
        self.process.kill()
        self.process = Process()
        for flight in self.in_flight:
            self.abandoned.add(flight.upload.upload_id)
            if flight.revision:
                self.abandoned_revisions.add(flight.revision)
        self.abandoned |= self.registering
        self.registering.clear()
        self.in_flight.clear()
        self.ops["restart"] += 1
        # What was published by words and still lacks vectors: the next ingest resumes it.
        resumed: dict[str, list[Any]] = {}
        for chunk in resume_vectors(self.services):
            resumed.setdefault(chunk.revision, []).append(chunk)
        self.vectorless = list(resumed.values())
        adopted = adopt_orphans(self.services, self.process.lease)
        for upload in adopted.resumed:
            self.abandoned.discard(upload.upload_id)
            self.in_flight.append(InFlight(upload, self.marker_of.get(upload.upload_id, "")))
        for document in adopted.deleting:
            try:
                delete_document(self.services, document.tenant, document.document_id)
            except CitewellError:
                pass
        self.resync()
        self.check()
        report = audit(self.services, repair=False)
        # Vectors still to come (resumed below as the next ingest would) say nothing of deleted text.
        clean = all(f.repaired or f.kind == "vectors_pending" for f in report.findings)
        self.ops["vectors pending after a restart"] += any(f.kind == "vectors_pending" for f in report.findings)
        if clean and self.home is not None:
            words = self.model.deleted - self._live_markers() - self._asker_words()
            left = file_residue(self.home, words)
            left += [f"tantivy segment {s}: {t}" for s, t in tantivy_residue(self.home, words).items()]
            if left:
                self.violation("crash-residue", f"after a kill -9 and a restart the read-only audit says ok, yet deleted text is left: {left[:3]}"
                               f"; rows holding it: {sqlite_rows(self.home, words)[:3] or 'none (freed pages only)'}")

    def resync(self) -> None:
        """After a crash or an audit the model follows the records: who is latest, what is served."""
        self.model.latest.clear()
        self.model.active.clear()
        for document in self.real.documents.all_documents():
            key = (document.tenant, document.document_id)
            upload = current_upload(self.real.uploads, document)
            if upload is not None:
                self.model.latest[key] = upload.upload_id
            if document.active_revision and document.status is not DocumentStatus.DELETING and document.active_upload:
                self.model.active[key] = (self.marker_of.get(document.active_upload, ""), document.allowed_roles)

    # -- checks --------------------------------------------------------------------------

    def _live_markers(self) -> set[str]:
        """Markers that may still be served or be on their way: active uploads', current uploads in flight'."""
        documents = {(d.tenant, d.document_id): d for d in self.real.documents.all_documents()}
        live = {self.marker_of.get(d.active_upload or "", "") for d in documents.values() if d.active_revision}
        live |= {f.marker for f in self.in_flight if is_current(documents.get((f.upload.tenant, f.upload.document_id)), f.upload)}
        live |= {self.marker_of.get(u, "") for u in self.abandoned}  # a restart or the audit decides
        return live - {""}

    def check(self) -> None:
        self.probes += 1
        services = self.real
        documents = {(d.tenant, d.document_id): d for d in services.documents.all_documents()}
        deleting = any(d.status is DocumentStatus.DELETING for d in documents.values())
        for key, document in documents.items():
            if document.active_revision and document.status is not DocumentStatus.DELETING:
                self.model.ever_active.setdefault(key, set()).add(document.active_revision)
                if document.active_upload:
                    self.model.ever_served.setdefault(key, set()).add(document.active_upload)
        for tenant in TENANTS:
            for document_id in DOCUMENTS:
                self._check_document(tenant, document_id, documents.get((tenant, document_id)))
        gone = self.markers - self._live_markers() if not deleting else set()
        self._check_search(documents)
        self._check_answers(documents, gone)
        if not deleting:
            self._check_conversations(gone)
        if not deleting:
            prefix = units_identity(services.embedder.identity, "")
            revisions = {r for _, _, r, _ in services.chunks.chunk_inventory()}
            stale = [i for i in services.embeddings.embedding_identities() if i.startswith(prefix) and i.removeprefix(prefix) not in revisions]
            if stale:
                self.violation("recorded-after-delete", f"unit vectors of revision {stale[0].removeprefix(prefix)[:8]} are cached though no chunk of it is left")

    def _markers_of(self, sources: set[tuple[str, str]]) -> set[str]:
        return {self.marker_of_revision[r] for _, r in sources if r in self.marker_of_revision}

    def _check_conversations(self, gone: set[str]) -> None:
        """A turn keeps its words and feedback exactly while its answer stands (asks killed before
        their turn read its answer back are left to the audit)."""
        kept: dict[str, list[Any]] = {}
        for conversation in self.real.conversations.conversation_inventory():
            for turn in conversation.turns:
                kept.setdefault(turn.answer_id, []).append(turn)
                if turn.withdrawn:
                    if turn.asked or turn.question or turn.feedback is not None:
                        self.violation("turn-after-withdraw", f"withdrawn turn {turn.seq} of {conversation.conversation_id[:8]} keeps words")
                    continue
                record = self.real.answers.get_answer(conversation.tenant, turn.answer_id)
                said = self.said.get(turn.answer_id)
                if said is not None and (record is None or record.source_deleted):
                    self.violation("turn-after-withdraw", f"turn {turn.seq} of {conversation.conversation_id[:8]} keeps its words "
                                   f"{turn.asked!r} (feedback {turn.feedback}) though its answer {turn.answer_id[:8]} was withdrawn")
                words = f"{turn.asked} {turn.question} {turn.feedback.comment or '' if turn.feedback else ''}"
                rested = said.rested_on if said is not None else set()
                left = self._markers_in(words) & gone & self._markers_of(rested)
                if left:
                    self.violation("turn-after-delete", f"turn {turn.seq} of {conversation.conversation_id[:8]} holds words of a gone "
                                   f"source its answer rested on: {sorted(left)} in {words!r}")
        for answer_id, said in self.said.items():
            record = self.real.answers.get_answer(said.asker.tenant, answer_id)
            if record is None or record.source_deleted:
                continue
            standing = [t for t in kept.get(answer_id, []) if not t.withdrawn]
            if not standing or not any(t.asked for t in standing):
                self.violation("turn-lost", f"the turn of answer {answer_id[:8]} ({said.asked!r}) lost its words though its answer stands")
            if said.feedback and not any(t.feedback is not None and t.feedback.comment == said.comment for t in standing):
                self.violation("turn-lost", f"the feedback {said.comment!r} on answer {answer_id[:8]} was lost though its answer stands: "
                               f"{[t.feedback for t in standing]}")

    def _asker_words(self) -> set[str]:
        """Markers held, as they may be, by what askers typed into questions that read no source
        they quote, and kept with answers that stand (a delete cannot know of them)."""
        words = set()
        for conversation in self.real.conversations.conversation_inventory():
            for turn in conversation.turns:
                record = None if turn.withdrawn else self.real.answers.get_answer(conversation.tenant, turn.answer_id)
                if record is not None and not record.source_deleted:
                    words |= self._markers_in(f"{turn.asked} {turn.question} {turn.feedback.comment or '' if turn.feedback else ''}")
        for asked in self.asked:  # a conversation's answer whose turn was never kept (its ask killed) too
            record = self.real.answers.get_answer(asked.tenant, asked.answer_id)
            if record is not None and not record.source_deleted:
                words |= self._markers_in(record.question)
        return words

    def _check_search(self, documents: dict[tuple[str, str], Document]) -> None:
        word = self.rng.choice(sorted(self.markers)) if self.markers else "procedure"
        for tenant in TENANTS:
            caller = Identity(tenant=tenant, roles=self.rng.choice(IDENTITY_ROLES))
            lanes = ("bm25", "vector") if self.probes % 5 == 0 else ("bm25",)
            for hit in search(self.real, caller, f"{word} procedure", k=10, lanes=lanes).hits:
                document = self.real.documents.get_document(tenant, hit.document_id)
                if document is None or not document.serves(hit.revision, caller):
                    self.violation("served", f"{caller} was served {hit.document_id} at {hit.revision[:8]}, which the record does not serve them")
                expected = self.marker_of.get(document.active_upload or "")
                if expected is not None and expected not in hit.text:
                    self.violation("served", f"{caller} was served text of {hit.document_id} that is not its active upload's: {hit.text!r}")

    def _check_answers(self, documents: dict[tuple[str, str], Document], gone: set[str]) -> None:
        for asked in self.asked:
            record = self.real.answers.get_answer(asked.tenant, asked.answer_id)
            if record is None:
                continue
            # Its words come from its sources; its question is the asker's, and quotes a gone source only when it read it.
            left = (self._markers_in(record.answer or "") | (self._markers_in(record.question) & self._markers_of(asked.given))) & gone
            if left:
                self.violation("recorded-after-delete", f"answer {asked.answer_id[:8]} still records text of a deleted or replaced source: {sorted(left)}")
        for asked in self.asked[-12:]:
            for roles in self.rng.sample(IDENTITY_ROLES, 3):
                reader = Identity(tenant=asked.tenant, roles=roles)
                try:
                    record = recorded_citations(self.real, reader, asked.answer_id)
                except NotFound:
                    continue
                if record.answer is None:
                    continue
                unreadable = [(d, r) for d, r in sorted(asked.given) if (doc := documents.get((asked.tenant, d))) is None
                              or not doc.serves(r, reader)]
                if unreadable:
                    self.violation("uncited-source", f"answer {asked.answer_id[:8]} (asked by {sorted(asked.asker.roles)}) is shown to "
                                    f"{sorted(roles)}, who may not read the source {unreadable[0][0]} at {unreadable[0][1][:8]} it was given: {record.answer!r}")
                foreign = self._markers_in(record.answer) - self._readable(reader)
                if foreign:
                    self.violation("uncited-source", f"answer {asked.answer_id[:8]} shows {sorted(roles)} words of text they may not read: {sorted(foreign)}")
        for tenant, answer_id in self.real.answer_cache.cache_inventory():
            record = self.real.answers.get_answer(tenant, answer_id)
            left = self._markers_in(record.answer or "") & gone if record else set()
            if left:
                self.violation("recorded-after-delete", f"a cache entry serves answer {answer_id[:8]} holding text that is gone: {sorted(left)}")

    def _check_document(self, tenant: str, document_id: str, document: Document | None) -> None:
        services, key = self.real, (tenant, document_id)
        active = self.model.active.get(key)
        if document is not None and document.active_revision is not None:
            revision = document.active_revision
            if active is None:
                self.violation("model", f"{key} serves revision {revision[:8]} though the model has nothing active")
            if document.allowed_roles != active[1]:
                self.violation("roles", f"{key}: the record's roles {set(document.allowed_roles)} are not the last published {set(active[1])}")
            for t, d, r, roles, _ in services.index.access_inventory():
                if (t, d, r) == (tenant, document_id, revision) and roles != document.allowed_roles:
                    self.violation("roles", f"{key}: index rows carry roles {set(roles)}, the record {set(document.allowed_roles)}")
            # Nothing current was removed.
            indexed, records = services.index.count(tenant, document_id, revision), len(services.chunks.get_chunks(tenant, document_id, revision))
            if indexed != document.chunk_count or records != document.chunk_count:
                self.violation("current-removed", f"{key}: its active revision {revision[:8]} has {indexed} index rows and {records} chunk "
                                f"records, the record says {document.chunk_count}: current data was removed")
            if document.active_upload and not services.objects.exists(raw_key(tenant, document_id, document.active_upload)):
                self.violation("current-removed", f"{key}: the raw upload of its served upload {document.active_upload[:8]} was removed")
        elif active is not None:
            self.violation("model", f"{key} should serve {active[0]} but serves nothing")
        for flight in self.in_flight:
            upload = flight.upload
            if (upload.tenant, upload.document_id) == key and is_current(document, upload) \
                    and not services.objects.exists(raw_key(tenant, document_id, upload.upload_id)):
                self.violation("current-removed", f"{key}: the raw upload of its current upload {upload.upload_id[:8]}, in flight, was removed")
        if document is not None and document.status is DocumentStatus.DELETING:
            return  # a delete that stopped half way: finished by the restart, the next delete or the audit
        # A replaced revision leaves nothing once its publish (or the restart after it) ended.
        serving = {document.active_revision} if document is not None and document.active_revision else set()
        pending = {f.revision for f in self.in_flight} | self.abandoned_revisions
        retired = self.model.ever_active.get(key, set()) - serving - pending
        left = [f"chunk records of {r[:8]}" for r in set(services.chunks.chunk_revisions(tenant, document_id)) & retired]
        left += [f"index rows of {r[:8]}" for r in set(services.index.revisions(tenant, document_id)) & retired]
        replaced = self.model.ever_served.get(key, set()) - {document.active_upload if document else None}
        replaced -= {f.upload.upload_id for f in self.in_flight} | self.abandoned
        left += [k for stage in STAGES for k in services.objects.list(document_prefix(stage, tenant, document_id))
                 if any(u in k for u in replaced)]
        left += [f"upload {u.upload_id[:8]}" for u in services.uploads.list_uploads(tenant, document_id) if u.upload_id in replaced]
        if left:
            self.violation("replaced-left", f"{key}: a revision it served before and replaced is still stored: {left[:3]}")
        if any((f.upload.tenant, f.upload.document_id) == key for f in self.in_flight):
            return
        # Settled: only the served upload's things may exist (and a dead process's, left to the audit).
        served = document.active_upload if document is not None else None
        keep = {served} | self.abandoned | replaced  # a replaced upload's leftovers are reported above
        objects = [k for stage in STAGES for k in services.objects.list(document_prefix(stage, tenant, document_id))]
        stray = [k for k in objects if not any(u and u in k for u in keep)]
        stray += [f"upload {u.upload_id}" for u in services.uploads.list_uploads(tenant, document_id) if u.upload_id not in keep]
        allowed = serving | self.abandoned_revisions
        stray += [f"chunk records of {r[:8]}" for r in set(services.chunks.chunk_revisions(tenant, document_id)) - allowed]
        stray += [f"index rows of {r[:8]}" for r in set(services.index.revisions(tenant, document_id)) - allowed]
        if stray:
            state = "is deleted" if document is None else "has no upload in flight"
            self.violation("stray", f"{key} {state}, yet something not served is left: {stray[:3]}")

    # -- the run -------------------------------------------------------------------------

    def run(self, steps: int, on_probe: Callable[[int], None] | None = None) -> int:
        try:
            for _ in range(steps):
                self.one_step()
                self.check()
                if on_probe:
                    on_probe(self.probes)
            self.finish()
        finally:
            self.process.kill()
        return self.probes

    def one_step(self) -> None:
        roll = self.rng.random()
        if roll < 0.18 or not self.in_flight:
            name, action = "upload (register)", self.upload
        elif roll < 0.26:
            name, action = "delete", self.delete
        elif roll < 0.32:
            name, action = "replace (whole upload)", self.replace
        elif roll < 0.38:
            name, action = "ask", self.ask
        elif roll < 0.41:
            name, action = "ask again (cache)", lambda: self.ask(again=True)
        elif roll < 0.44 or (roll < 0.46 and not self.said):
            name, action = "ask in a conversation", self.converse
        elif roll < 0.46:
            name, action = "feedback", self.feedback
        elif roll < 0.48:
            name, action = "audit --repair", lambda: self.run_audit(True)
        elif roll < 0.49:
            name, action = "audit", lambda: self.run_audit(False)
        elif roll < 0.56 and self.vectorless:
            name, action = "stage vectors (after publish by words)", self.vectors
        else:
            flight = self.rng.choice(self.in_flight)
            stages = ("parse", "chunk", "publish by words", "") if flight.staged else ("parse", "chunk", "embed", "publish")
            name, action = f"stage {stages[flight.next_stage]}", lambda: self.step(flight)
        with self.operation(name):
            action()

    def finish(self) -> None:
        self.crashes = False
        while self.in_flight or self.vectorless:
            if self.vectorless and (not self.in_flight or self.rng.random() < 0.5):
                self.vectors()
            else:
                self.step(self.rng.choice(self.in_flight))
            self.check()
        if self.real.index.vectorless():
            self.violation("vectors-lost", f"every upload ran to its end, yet rows still wait for vectors: {self.real.index.vectorless()[:3]}")
        for tenant in TENANTS:
            for document_id in DOCUMENTS:
                self.delete((tenant, document_id))
        self.model.active.clear()
        self.model.latest.clear()
        audit(self.real, repair=True, stuck=timedelta(0))
        self.abandoned.clear()
        self.abandoned_revisions.clear()
        report = audit(self.real, repair=False, stuck=timedelta(0))
        if report.findings:
            self.violation("end-audit", f"after every upload finished, every document was deleted and audit --repair ran, the audit finds: {report.findings}")
        self.check()
        for conversation in self.real.conversations.conversation_inventory():
            for turn in conversation.turns:
                record = None if turn.withdrawn else self.real.answers.get_answer(conversation.tenant, turn.answer_id)
                if not turn.withdrawn and (record is None or record.source_deleted or record.rests_on()):
                    self.violation("end-turn", f"after every document was deleted and audit --repair ran, turn {turn.seq} of "
                                   f"{conversation.conversation_id[:8]} keeps its words {turn.asked!r} (answer {turn.answer_id[:8]})")
        for asked in self.asked:
            record = self.real.answers.get_answer(asked.tenant, asked.answer_id)
            if record is not None and (record.rests_on() or record.answer and self._markers_in(record.answer)):
                self.violation("end-answer", f"after every document was deleted and audit --repair ran, answer {asked.answer_id[:8]} "
                               f"still rests on {sorted(record.rests_on())[:2]}: {record.answer!r}")
        self.ops["turns kept at the end (rested on nothing)"] += sum(
            not t.withdrawn for c in self.real.conversations.conversation_inventory() for t in c.turns)
        if self.home is not None:
            words = self.markers - self._asker_words()
            left = file_residue(self.home, words)
            left += [f"tantivy segment {s}: {t}" for s, t in tantivy_residue(self.home, words).items()]
            if left:
                rows = sqlite_rows(self.home, words)  # a live row, or only freed pages?
                # Deleted text in a database's pages that no row holds is its own kind: a known open defect
                # (issue 25, seed 1020) that the make-test sample counts instead of raising; make fuzz raises it.
                freed = not rows and all(entry.startswith("metadata.db:") for entry in left)
                self.violation("end-residue-freed" if freed else "end-residue",
                               f"after every document was deleted and audit --repair ran, text is left: {left[:3]}"
                               f"; rows holding it: {rows[:3] or 'none (freed pages only)'}")


@contextmanager
def model_service() -> Iterator[str]:
    """The scripted OpenAI-compatible stand-in, answering from the prompt it is sent."""
    from tests.fake_model_service import start

    service, server = start()
    service.respond = scripted_reply
    try:
        yield service.url
    finally:
        server.shutdown()


def fuzz_block(probes: int, runs: int, seconds: float, failures: list[str], command: str,
               ops: Counter[str] | None = None, steps: int = 300) -> str:
    lines = [FUZZ_START, "## Interleavings (`make fuzz`)", "",
             f"`{command}` on {time.strftime('%Y-%m-%d', time.gmtime())}: {probes:,} probes in {runs} seeded runs "
             f"({seconds / 60:.1f} minutes), each run {steps} random steps on the embedded stores (every fourth run on "
             "DynamoDB and S3 on moto): uploads and their single stages, whole replacements, deletes, asks (extractive, "
             "and a scripted model citing one source and repeating a word of another), repeated asks (the cache), "
             "asks in conversations (first questions and follow-ups quoting a document's word) and feedback on their "
             "answers, citation look-ups under every identity, audits with and without --repair; any store call of one "
             "operation may run another whole inside it, and any write may be a kill -9 followed by a restart "
             "(adopt_orphans, then a read-only audit). A probe is one step followed by every check in "
             "`tests/interleavings.py`; each run ends with every document deleted, audit --repair, a read-only audit "
             "that must find nothing, every turn whose answer rested on a source withdrawn without its feedback and, on "
             "the embedded stores, no byte of any text in any file or tantivy segment but the words of questions that "
             "read nothing.", ""]
    if ops:
        lines += ["Operations run: " + ", ".join(f"{name} {count:,}" for name, count in sorted(ops.items())) + ".", ""]
    lines += [f"Failures: {len(failures)}.", ""]
    lines += [f"- {f}" for f in failures] + ([""] if failures else [])
    return "\n".join(lines + [FUZZ_END])


def write_block(path: Path, block: str) -> None:
    """The fuzz's block in BENCHMARKS.md, between its markers."""
    replace_block(path, block, FUZZ_START, FUZZ_END)


STEPS = 300


def seeded_runs(target: int, first_seed: int, stride: int, steps: int, no_cloud: bool) -> tuple[int, int, list[str], Counter[str]]:
    """Seeded runs ``first_seed``, ``first_seed + stride``, ... until ``target`` probes: one job of ``make fuzz``."""
    import tempfile
    import traceback

    from citewell.embedders.minilm import MiniLMEmbedder
    from tests.conftest import make_services

    embedder = MiniLMEmbedder()
    probes, runs, failures, ops = 0, 0, [], Counter[str]()
    seed = first_seed
    with model_service() as url:
        while probes < target:
            with tempfile.TemporaryDirectory() as folder:
                home = Path(folder)
                cloud = (seed // stride) % 4 == 3 and not no_cloud  # every fourth run of each job
                with cloud_stores(make_services(home, embedder)) if cloud else nullcontext(make_services(home, embedder)) as services:
                    # on the cloud stores the index stays local and the rest lives in moto: no home to search
                    interleaver = Interleaver(services, seed, home=None if cloud else home, model_url=url)
                    try:
                        interleaver.run(steps)
                    except Exception as error:  # a violation, or a crash: both are failures to report
                        failures.append(f"seed {seed}, probe {interleaver.probes}: {type(error).__name__}: {error}")
                        traceback.print_exc()
                probes += interleaver.probes
                ops += interleaver.ops
            runs += 1
            seed += stride
            print(f"seed {seed - stride}: {probes} probes, {runs} runs, {len(failures)} failures", flush=True)
    return probes, runs, failures, ops


def _job(job: int, jobs: int, target: int, first_seed: int, steps: int, no_cloud: bool) -> tuple[int, int, list[str], Counter[str]]:
    import os

    os.environ["CITEWELL_EMBED_THREADS"] = "1"  # one core a job
    return seeded_runs(target, first_seed + job, jobs, steps, no_cloud)


def main() -> int:
    """``make fuzz``: seeded runs until at least ``--probes`` probes; the result goes into BENCHMARKS.md."""
    import argparse
    import traceback
    from concurrent.futures import ProcessPoolExecutor

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--probes", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"))
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--jobs", type=int, default=1, help="seeded runs in this many processes at once (one core each)")
    parser.add_argument("--no-cloud", action="store_true", help="only the embedded stores")
    parser.add_argument("--processes", type=int, default=0, help="also this many runs of real concurrent processes")
    args = parser.parse_args()
    started, probes, runs, failures, ops = time.monotonic(), 0, 0, [], Counter[str]()
    share = -(-args.probes // args.jobs)
    if args.jobs == 1:
        results = [seeded_runs(share, args.first_seed, 1, args.steps, args.no_cloud)]
    else:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(_job, range(args.jobs), [args.jobs] * args.jobs, [share] * args.jobs,
                                    [args.first_seed] * args.jobs, [args.steps] * args.jobs, [args.no_cloud] * args.jobs))
    for job_probes, job_runs, job_failures, job_ops in results:
        probes, runs, failures, ops = probes + job_probes, runs + job_runs, failures + job_failures, ops + job_ops
    if args.processes:
        from tests.processes import run_processes

        for i in range(args.processes):
            ops["real-process runs"] += 1
            try:
                ops += run_processes(args.first_seed + i)
            except Exception as error:
                failures.append(f"processes seed {args.first_seed + i}: {type(error).__name__}: {error}")
                traceback.print_exc()
    command = (f"python -m tests.interleavings --probes {args.probes}" + (f" --jobs {args.jobs}" if args.jobs > 1 else "")
               + (f" --processes {args.processes}" if args.processes else ""))
    write_block(args.out, fuzz_block(probes, runs, time.monotonic() - started, failures, command, ops, args.steps))
    return 1 if failures else 0


@contextmanager
def cloud_stores(services: Services) -> Iterator[Services]:
    """``services`` with DynamoDB and S3 (moto) as metadata and object stores, built as the stack builds them."""
    import os

    import boto3
    from moto import mock_aws

    from citewell.metadata.dynamodb import TABLE_DEFINITION, DynamoMetadataStore
    from citewell.objects.s3 import S3ObjectStore

    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        credentials = {"region_name": "eu-west-1", "aws_access_key_id": "x", "aws_secret_access_key": "y"}
        dynamodb = boto3.resource("dynamodb", **credentials)
        dynamodb.create_table(TableName="citewell-metadata", **TABLE_DEFINITION)
        s3 = boto3.client("s3", **credentials)
        s3.create_bucket(Bucket="citewell-interleavings", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_bucket_versioning(Bucket="citewell-interleavings", VersioningConfiguration={"Status": "Enabled"})
        yield replace(services, objects=S3ObjectStore("citewell-interleavings", s3),
                      **records(DynamoMetadataStore("citewell-metadata", dynamodb)))


if __name__ == "__main__":
    raise SystemExit(main())
