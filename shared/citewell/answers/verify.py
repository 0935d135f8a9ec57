"""Binds ``[Sn]`` refs to real evidence; an answer with no valid citation becomes a refusal."""

from __future__ import annotations

import re
from collections.abc import Sequence

from citewell.answers.prompt import REFUSAL_SENTINEL
from citewell.models import Citation, Draft, EvidenceItem

_REF = re.compile(r"\[(S\d+)\]")
_SPACES_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?])")


def verify(draft: Draft, evidence: Sequence[EvidenceItem]) -> tuple[str | None, list[Citation]]:
    """Returns ``(answer, citations)``; ``(None, [])`` is a refusal."""
    text = (draft.text or "").strip()
    if draft.refused or not text or REFUSAL_SENTINEL in text:
        return None, []
    by_ref = {item.ref: item for item in evidence}
    cited: list[str] = []

    def keep(match: re.Match[str]) -> str:
        ref = match.group(1)
        if ref not in by_ref:
            return ""  # an invented source: removed
        if ref not in cited:
            cited.append(ref)
        return match.group(0)

    text = _SPACES_BEFORE_PUNCT.sub(r"\1", _REF.sub(keep, text))
    text = re.sub(r"[ \t]{2,}", " ", text).strip()
    if not cited:
        return None, []
    citations = []
    for ref in cited:
        item = by_ref[ref]
        quote = draft.quotes.get(ref, item.text.strip())
        span = item.span_at(max(item.text.find(quote), 0))
        citations.append(
            Citation(
                ref=ref, chunk_id=span.chunk_id, document_id=item.document_id, revision=item.revision,
                title=item.title, section_path=span.section_path, quote=quote,
            )
        )
    return text, citations
