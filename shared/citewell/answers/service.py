"""The question-answering path: search, read back, evidence, generate, verify, record, cache."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Sequence

from citewell.answers.evidence import DEFAULT_BUDGET_CHARS, gather_evidence
from citewell.answers.generators.extractive import ExtractiveGenerator
from citewell.answers.verify import Verdict, verify
from citewell.errors import GeneratorUnavailable, NotFound
from citewell.models import Answer, AnswerRecord, Citation, Identity, Passage, SourceRef
from citewell.ports import Generator
from citewell.search import LANES, search
from citewell.services import Services

CANDIDATES = 8
# How ``degraded`` names what befell a generator; ``citewell eval-answers`` counts them.
GENERATOR_UNAVAILABLE = "generator unavailable"
DRAFT_REJECTED = "draft rejected"
CLOSEST = 3  # passages offered beside a refusal


def normalise_question(question: str) -> str:
    return re.sub(r"\s+", " ", question).strip().rstrip("?!. ").lower()


def cache_key(identity: Identity, question: str, epoch: int, generator: str) -> str:
    """Everything that may change an answer is in the key; rights first of all."""
    material = [identity.tenant, sorted(identity.roles), normalise_question(question), epoch, generator]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()


def _still_current(services: Services, identity: Identity, citations: Sequence[Citation]) -> bool:
    documents = services.metadata.get_documents(identity.tenant, {c.document_id for c in citations})
    return all(
        (document := documents.get(c.document_id)) is not None and document.serves(c.revision, identity)
        for c in citations
    )


def _answer(record: AnswerRecord) -> Answer:
    return Answer(
        answer_id=record.answer_id, answer=record.answer, refused=record.refused,
        citations=record.citations, degraded=record.degraded, source_deleted=record.source_deleted,
    )


def ask(
    services: Services,
    identity: Identity,
    question: str,
    generator: Generator | None = None,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    lanes: Sequence[str] = LANES,
) -> Answer:
    """Answer from the caller's evidence only, or refuse. Raises RetrievalUnavailable if the index is down."""
    extractive = ExtractiveGenerator(services.embedder, services.metadata)
    generator = generator or extractive
    if identity.is_empty or not question.strip():
        return Answer(answer_id=uuid.uuid4().hex, answer=None, refused=True)
    epoch = services.metadata.tenant_epoch(identity.tenant)
    key = cache_key(identity, question, epoch, f"{generator.name}:{getattr(generator, 'fingerprint', '')}")
    cached_id = services.metadata.get_cached_answer(key, identity.tenant, epoch)
    if cached_id is not None:
        record = services.metadata.get_answer(identity.tenant, cached_id)
        if record is not None and _still_current(services, identity, record.citations):
            return _answer(record)

    result = search(services, identity, question, k=CANDIDATES * 2, lanes=lanes)
    if result._query_vector is not None:
        extractive.embed.questions[question] = result._query_vector
    degraded = list(result.degraded)
    evidence = gather_evidence(services, identity, result.hits, budget_chars=budget_chars, max_items=CANDIDATES)
    used: Generator = generator
    verdict = Verdict(answer=None)
    if evidence:
        chain = [generator] if generator.name == extractive.name else [generator, extractive]
        for candidate in chain:
            fallback = "; answering extractively" if candidate is not chain[-1] else "; refusing"
            try:
                draft, used = candidate.generate(question, evidence), candidate
            except GeneratorUnavailable as error:
                degraded.append(f"{GENERATOR_UNAVAILABLE}: {candidate.name} ({error.message}){fallback}")
                continue
            verdict = verify(draft, evidence, question)
            if verdict.rejected is None:
                break
            degraded.append(f"{DRAFT_REJECTED}: {candidate.name} ({verdict.rejected}: {verdict.detail}){fallback}")
    text, citations = verdict.answer, verdict.citations
    # A refusal cites nothing, yet its question may quote what it read: it rests on its evidence.
    considered = [] if text is not None else sorted(
        {SourceRef(document_id=e.document_id, revision=e.revision) for e in evidence}, key=lambda s: (s.document_id, s.revision)
    )
    record = AnswerRecord(
        answer_id=uuid.uuid4().hex, tenant=identity.tenant, roles=sorted(identity.roles), question=question,
        answer=text, refused=text is None, citations=citations, generator=used.name, degraded=degraded,
        considered=considered,
    )
    services.metadata.put_answer(record)
    if not degraded and not record.refused:  # a degraded answer is not worth keeping once the service is back
        services.metadata.put_cached_answer(key, identity.tenant, epoch, record.answer_id)
    answer = _answer(record)
    if record.refused:  # read back and visible to this caller, like every hit
        closest = result.hits[:CLOSEST]
        places = services.metadata.get_chunks_by_id(identity.tenant, [(h.document_id, h.revision, h.chunk_id) for h in closest])
        answer.closest = []
        for h in closest:
            chunk = places.get((h.document_id, h.revision, h.chunk_id))
            answer.closest.append(Passage(
                chunk_id=h.chunk_id, document_id=h.document_id, revision=h.revision, title=h.title,
                section_path=h.section_path, text=h.text,
                **({"pages": chunk.pages, "sheet": chunk.sheet, "rows": chunk.rows} if chunk else {}),
            ))
    return answer


def recorded_citations(services: Services, identity: Identity, answer_id: str) -> AnswerRecord:
    """A recorded answer, only for a caller who may read every document it cites, as those
    documents are now (an answer citing nothing, a refusal or a withdrawn one: a caller holding
    every role of whoever asked). Anyone else gets the same NotFound as for a missing answer."""
    record = services.metadata.get_answer(identity.tenant, answer_id) if not identity.is_empty else None
    live = [c for c in (record.citations if record else []) if not c.deleted]
    visible = record is not None and (
        _still_current(services, identity, live) if live else set(record.roles) <= identity.roles
    )
    if not visible:
        raise NotFound(f"no answer {answer_id!r} for this caller")
    assert record is not None
    return record
