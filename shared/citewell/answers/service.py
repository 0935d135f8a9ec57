"""The question-answering path: search, read back, evidence, generate, verify, record, cache.

An answer is recorded with every source its generator was given, cited or not (a model's
words may come from any of them), and only while each still serves the revision read: a
delete or replacement that wins the race leaves nothing of the answer behind, and the
question is asked again on what is there now.

Three outcomes (``Outcome``): ``answered``; ``unconfirmed``, the passage that came nearest
quoted verbatim with its citation and labelled not confirmed (recorded like an answer, so
``citations`` shows it); ``not_found``, nothing the caller may read is about this. A refusal
never claims more than was found: a model that refuses gets the extractive quote of what came
nearest, and evidence that no generator could judge (one down, a draft rejected, sources that
kept changing) is ``unconfirmed`` without a quote, never ``not_found``. Only answers are
cached: a non-answer comes with the closest passages, read afresh each time.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from typing import Any

from citewell.answers.drafts import retract
from citewell.answers.evidence import DEFAULT_BUDGET_CHARS, gather_evidence
from citewell.answers.extractive.generator import ExtractiveGenerator
from citewell.answers.verify import Verdict, verify
from citewell.deadline import last_resort
from citewell.errors import GeneratorUnavailable, NotFound
from citewell.filters import SearchFilter
from citewell.models.answers import Answer, AnswerRecord, Outcome, Passage, SourceRef
from citewell.models.documents import Document
from citewell.models.evidence import EvidenceItem
from citewell.models.identity import Identity
from citewell.models.search import SearchHit
from citewell.ports import Generator
from citewell.reads import widened
from citewell.search import LANES, search
from citewell.services import Services

CANDIDATES = 8
# How ``degraded`` names what befell a generator; ``citewell eval-answers`` counts them.
GENERATOR_UNAVAILABLE = "generator unavailable"
DRAFT_REJECTED = "draft rejected"
CLOSEST = 3  # passages offered beside a refusal
ATTEMPTS = 3  # asks again when a source changed under the answer; then it says so
SOURCES_CHANGED = "sources changed while answering; ask again"
# Why a streamed draft is withdrawn when its attempt's record was refused and the question is asked again.
DRAFT_SUPERSEDED = "a source changed while the draft was written"
# In ``degraded`` when the request's deadline left no time to record the answer (see _kept).
NOT_KEPT = "answer not kept"


def normalise_question(question: str) -> str:
    return re.sub(r"\s+", " ", question).strip().rstrip("?!. ").lower()


def cache_key(identity: Identity, question: str, epoch: int, generator: str, filters: SearchFilter | None = None,
              mixed_locales: bool = False) -> str:
    """Everything that may change an answer is in the key; rights first of all, and a query filter
    (an unfiltered answer may rest on documents the filter leaves out)."""
    material: list[object] = [identity.tenant, sorted(identity.roles), normalise_question(question), epoch, generator]
    if filters is not None and not filters.is_empty:
        material.append(filters.key())
    if mixed_locales:
        material.append("mixed-locales")
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()


def _still_current(services: Services, identity: Identity, sources: set[tuple[str, str]]) -> bool:
    """Every ``(document_id, revision)`` is still served, and to this caller."""
    documents = services.documents.get_documents(identity.tenant, {d for d, _ in sources})
    return all((document := documents.get(d)) is not None and document.serves(r, identity) for d, r in sources)


def _readable(record: AnswerRecord, identity: Identity, documents: dict[str, Document]) -> bool:
    """The rule of :func:`recorded_citations` on documents already read: every source still served
    to this caller, or (resting on nothing any more) every role of whoever asked."""
    sources = record.rests_on()
    if not sources:
        return set(record.roles) <= identity.roles
    return all((document := documents.get(d)) is not None and document.serves(r, identity) for d, r in sources)


def _answer(record: AnswerRecord) -> Answer:
    return Answer(
        answer_id=record.answer_id, answer=record.answer, refused=record.refused, outcome=record.outcome,
        citations=record.citations, degraded=record.degraded, source_deleted=record.source_deleted,
        conditions=record.conditions,
    )


def ask(
    services: Services,
    identity: Identity,
    question: str,
    generator: Generator | None = None,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    lanes: Sequence[str] = LANES,
    filters: SearchFilter | None = None,
    mixed_locales: bool = False,
) -> Answer:
    """Answer from the caller's evidence only (within ``filters``), or refuse. Raises
    RetrievalUnavailable if the index is down. The evidence is in one language, the best hit's,
    unless a filter names the locale or ``mixed_locales`` asks for every language."""
    extractive = ExtractiveGenerator(services.embedder, services.embeddings)
    generator = generator or extractive
    if identity.is_empty or not question.strip():
        return Answer(answer_id=uuid.uuid4().hex, answer=None, refused=True, outcome=Outcome.NOT_FOUND)
    epoch = services.answer_cache.tenant_epoch(identity.tenant)
    answered_by = f"{generator.name}:{getattr(generator, 'fingerprint', '')}"
    key = cache_key(identity, question, epoch, answered_by, filters, mixed_locales)
    cached_id = services.answer_cache.get_cached_answer(key, identity.tenant, epoch)
    if cached_id is not None:
        record = services.answers.get_answer(identity.tenant, cached_id)
        if record is not None and not record.source_deleted and _still_current(services, identity, record.rests_on()):
            return _answer(record)
    for _ in range(ATTEMPTS):
        answer = _attempt(services, identity, question, generator, extractive, budget_chars, lanes, key, epoch, filters,
                          mixed_locales)
        if answer is not None:
            return answer
        retract(DRAFT_SUPERSEDED)  # a page showing this attempt's draft must not keep it
        epoch = services.answer_cache.tenant_epoch(identity.tenant)
        key = cache_key(identity, question, epoch, answered_by, filters, mixed_locales)
    return Answer(answer_id=uuid.uuid4().hex, answer=None, refused=True, outcome=Outcome.UNCONFIRMED, degraded=[SOURCES_CHANGED])


def _attempt(
    services: Services, identity: Identity, question: str, generator: Generator, extractive: ExtractiveGenerator,
    budget_chars: int, lanes: Sequence[str], key: str, epoch: int, filters: SearchFilter | None = None,
    mixed_locales: bool = False,
) -> Answer | None:
    """One pass from search to record; None when a source changed before the record was kept."""
    result = search(services, identity, question, k=CANDIDATES * 2, lanes=lanes, filters=filters)
    if result.hits and not mixed_locales and not (filters and filters.locale):
        language = _language(result.hits[0].locale)  # one language's evidence: the best hit's
        result.hits = [h for h in result.hits if _language(h.locale) == language]
    if result._query_vector is not None:
        extractive.embed.questions[question] = result._query_vector
    degraded = list(result.degraded)
    evidence = gather_evidence(services, identity, result.hits, budget_chars=budget_chars, max_items=CANDIDATES)
    read = None
    # a model reads a whole document best; the extractive answerer scores sentences
    if evidence and generator.name != extractive.name:
        evidence, read = widened(services, identity, evidence, budget_chars)
    verdict, used = _verdict(question, evidence, generator, extractive, degraded) if evidence else (Verdict(None), generator)
    text, citations = verdict.answer, verdict.citations
    # Everything it was given: an answer's words may come from any of it, a refusal's question may quote it.
    considered = sorted(
        {SourceRef(document_id=e.document_id, revision=e.revision) for e in evidence}, key=lambda s: (s.document_id, s.revision)
    )
    record = AnswerRecord(
        answer_id=uuid.uuid4().hex, tenant=identity.tenant, roles=sorted(identity.roles), question=question,
        answer=text, refused=verdict.outcome is not Outcome.ANSWERED, outcome=verdict.outcome, citations=citations,
        generator=used.name, degraded=degraded, considered=considered, conditions=verdict.conditions,
    )
    # A degraded answer is not worth keeping in the cache once the service is back.
    kept = _kept(services, record, (key, epoch) if not degraded and not record.refused else None)
    if kept is False:
        _forget(services, identity.tenant, evidence)
        return None
    answer = _answer(record)
    answer.expansion, answer.read = result.expansion, read
    if kept is None:
        answer.degraded = [*answer.degraded, f"{NOT_KEPT}: the request had no time left to record it, so its citations "
                                             "cannot be looked up later and no conversation keeps it"]
    if record.refused and record.outcome is not Outcome.CLARIFY:
        _closest(services, identity, result.hits[:CLOSEST], answer)
    return answer


def _kept(services: Services, record: AnswerRecord, cache: tuple[str, int] | None) -> bool | None:
    """Whether the answer was recorded (False: a source changed first, it is asked again), or None
    when the request's deadline left no time to (DynamoDB did not answer in it): the answer is
    still given, said so, from the sources read back moments ago, as any answer is on its way to
    the caller. The record, conditional on each source still serving, is never written without
    that check: one that landed is as sound as any, and one that did not leaves at most its
    revisions' index entries, as a function stopped at that point would (a delete reads them)."""
    try:
        return services.answers.record_answer(record, cache)
    except TimeoutError:
        return None


def _closest(services: Services, identity: Identity, closest: Sequence[SearchHit], answer: Answer) -> None:
    """Beside a refusal, what came nearest: read back and visible to this caller, like every hit;
    without their pages and rows when the request has no time left to read those."""
    try:
        places = services.chunks.get_chunks_by_id(identity.tenant, [(h.document_id, h.revision, h.chunk_id) for h in closest])
    except TimeoutError:
        places = {}
    answer.closest = []
    for h in closest:
        chunk = places.get((h.document_id, h.revision, h.chunk_id))
        place: dict[str, Any] = {"pages": chunk.pages, "sheet": chunk.sheet, "rows": chunk.rows} if chunk else {}
        answer.closest.append(Passage(
            chunk_id=h.chunk_id, document_id=h.document_id, revision=h.revision, title=h.title,
            section_path=h.section_path, text=h.text, **place,
        ))


def _language(locale: str) -> str:
    """A locale's language: ``en-GB`` and ``en`` are one language, ``fr-CA`` another."""
    return locale.split("-")[0].lower()


def _verdict(
    question: str, evidence: Sequence[EvidenceItem], generator: Generator, extractive: ExtractiveGenerator, degraded: list[str],
) -> tuple[Verdict, Generator]:
    """The first verdict of the chain (the generator, then the extractive answer) that stands,
    and who gave it; notes in ``degraded`` what befell the others. A model's refusal is a claim
    about the evidence that only the evidence can make honest: what came nearest is quoted,
    not confirmed, or nothing was found."""
    chain = [generator] if generator.name == extractive.name else [generator, extractive]
    used = generator
    unjudged = Verdict(None, outcome=Outcome.UNCONFIRMED)  # evidence that nothing could judge
    for candidate in chain:
        fallback = "; answering extractively" if candidate is not chain[-1] else "; refusing"
        try:  # the extractive answer, replacing a model's, may spend the time the model's calls left it
            with last_resort() if candidate is extractive else nullcontext():
                draft, used = candidate.generate(question, evidence), candidate
        except GeneratorUnavailable as error:
            degraded.append(f"{GENERATOR_UNAVAILABLE}: {candidate.name} ({error.message}){fallback}")
            continue
        if draft.outcome is Outcome.NOT_FOUND and candidate is not extractive:
            try:
                with last_resort():
                    draft = extractive.nearest(question, evidence)
            except GeneratorUnavailable as error:
                degraded.append(f"{GENERATOR_UNAVAILABLE}: {extractive.name} ({error.message}); nothing quoted")
                return unjudged, used
        verdict = verify(draft, evidence, question)
        if verdict.rejected is None:
            return verdict, used
        degraded.append(f"{DRAFT_REJECTED}: {candidate.name} ({verdict.rejected}: {verdict.detail}){fallback}")
    return unjudged, used


def _forget(services: Services, tenant: str, evidence: Sequence[EvidenceItem]) -> None:
    """The answerer cached unit vectors of the revisions it read; those a delete or replacement
    has purged since go too, bytes and all (the purge may have run before they were written)."""
    from citewell.deletion import compact, removing
    from citewell.keys import units_identity

    documents = services.documents.get_documents(tenant, {e.document_id for e in evidence})
    gone = {e.revision for e in evidence if getattr(documents.get(e.document_id), "active_revision", None) != e.revision}
    if not gone:
        return
    with removing(services):
        for revision in sorted(gone):
            services.embeddings.delete_identity(units_identity(services.embedder.identity, revision))
    compact(services)


def recorded_citations(services: Services, identity: Identity, answer_id: str) -> AnswerRecord:
    """A recorded answer, only for a caller who may read every document it was given, as those
    documents are now (an answer resting on nothing any more, a withdrawn one: a caller holding
    every role of whoever asked). Anyone else gets the same NotFound as for a missing answer."""
    record = services.answers.get_answer(identity.tenant, answer_id) if not identity.is_empty else None
    sources = record.rests_on() if record else set()
    visible = record is not None and (
        _still_current(services, identity, sources) if sources else set(record.roles) <= identity.roles
    )
    if not visible:
        raise NotFound(f"no answer {answer_id!r} for this caller")
    assert record is not None
    return record


def readable_answers(services: Services, identity: Identity, answer_ids: Iterable[str]) -> dict[str, AnswerRecord]:
    """The recorded answers among ``answer_ids`` this caller may see, by :func:`recorded_citations`'
    rule, in two batched reads (the records, then every document they rest on) rather than two
    per answer: a page of a conversation costs the same reads whatever its turns got."""
    wanted = set(answer_ids)
    if identity.is_empty or not wanted:
        return {}
    records = services.answers.get_answers(identity.tenant, wanted)
    documents = services.documents.get_documents(identity.tenant, {d for r in records.values() for d, _ in r.rests_on()})
    return {i: r for i, r in records.items() if _readable(r, identity, documents)}
