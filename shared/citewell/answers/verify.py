"""Checks a draft against the evidence it was given, whatever wrote it, and binds its ``[Sn]`` to chunks.

A draft is rejected whole (never patched) when it cites a source it was not given, cites
nothing, quotes words that none of the sources it cites holds, states a number that
none of them (nor the question) holds, or uses a rare word that only a source it does not
cite holds (its facts came from there, and that source may be one other readers may not see):
each is how a model that is not reading its sources shows itself, and one such sentence makes
the rest untrustworthy. What verification cannot see is a real quote that does not answer the
question; that is the refusal decision's job, and ``citewell eval-answers`` counts it
(fabrications). A rejection's detail names refs and kinds only, never the draft's words: a draft
is not evidence and may hold anything.

An ``unconfirmed`` draft (the passage that came nearest, quoted and labelled not confirmed)
passes the same checks, and each of its quotes must also stand verbatim in the source it
cites: it is shown as that source's words, and it says nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from citewell.answers.conditions import compose
from citewell.answers.prompt import REFUSAL_SENTINEL
from citewell.models.answers import Citation, ConditionAnswer, Draft, Outcome
from citewell.models.evidence import EvidenceItem
from citewell.terms import FUNCTION_WORDS, words

_REF = re.compile(r"\[(S\d+)\]")
# A citation's marker set apart from the punctuation it closes ("... 30 days [S1] ."). Only there:
# a space before punctuation elsewhere is the source's ("git push yourgit :textual", "cp a/b .").
_SPACES_BEFORE_PUNCT = re.compile(r"(?<=\])[ \t]+(?=[.,;:!?])")
# A quoted span holds no citation: quote marks on either side of a [Sn] are not one quotation.
_QUOTED = re.compile(r'"((?:(?!\[S\d+\])[^"\n])+)"|“((?:(?!\[S\d+\])[^”\n])+)”')
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_ORDINAL = re.compile(r"^\s*\d+[.)]\s", re.MULTILINE)  # "1. " opening a list item
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…)\s*")
_SAME = {"'": "['’‘]", "’": "['’‘]", "‘": "['’‘]", '"': '["“”]', "“": '["“”]', "”": '["“”]',
         "-": "[-–—]", "–": "[-–—]", "—": "[-–—]"}


class Rejection(StrEnum):
    UNKNOWN_SOURCE = "unknown_source"  # cites a source number it was not given
    UNCITED = "uncited"  # says something and cites nothing
    QUOTE_NOT_IN_SOURCE = "quote_not_in_source"  # quotes words its cited sources do not hold
    NUMBER_NOT_IN_SOURCE = "number_not_in_source"  # states a number its cited sources do not hold
    UNCITED_EVIDENCE = "uncited_evidence"  # uses a rare word that only a source it does not cite holds
    CONDITION_NOT_IN_SOURCE = "condition_not_in_source"  # a condition or its answer that the source it cites does not hold


@dataclass(frozen=True)
class Verdict:
    """``answer`` None: the draft found nothing (``not_found``), or was ``rejected`` (then
    ``detail`` says why). An ``unconfirmed`` verdict's answer is its verified quote."""

    answer: str | None
    citations: list[Citation] = field(default_factory=list)
    rejected: Rejection | None = None
    detail: str = ""
    outcome: Outcome = Outcome.NOT_FOUND
    conditions: list[ConditionAnswer] = field(default_factory=list)


def _pattern(quote: str) -> re.Pattern[str]:
    """The quote as a pattern: any run of spaces, either kind of quote mark or dash, any case."""
    words = quote.split()
    return re.compile(r"\s+".join("".join(_SAME.get(c, re.escape(c)) for c in w) for w in words), re.IGNORECASE)


def locate_parts(text: str, quote: str) -> list[tuple[int, int]] | None:
    """Where each part of ``quote`` stands in ``text``, in order: one part, or for an elided quote
    ("A … B") each part between its ellipses; None when a part is not there. A part matches across
    any run of whitespace (a line wrap), either kind of quote mark or dash, and any case."""
    quote = quote.replace("&lt;", "<").replace("&gt;", ">")  # as the prompt escaped it
    if (exact := text.find(quote)) >= 0 and quote.strip():
        return [(exact, exact + len(quote))]
    end, found = 0, []
    for part in filter(None, (p.strip() for p in _ELLIPSIS.split(quote))):
        match = _pattern(part).search(text, end)
        if match is None:
            return None
        found.append((match.start(), match.end()))
        end = match.end()
    return found or None


def locate(text: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` stands in ``text`` (an elided quote: from its first part to its last), or None."""
    parts = locate_parts(text, quote)
    return None if parts is None else (parts[0][0], parts[-1][1])


def _numbers(text: str) -> set[str]:
    """The figures a text states: "16,384" is 16384 and "07" is 7, so a figure in another layout is the same figure."""
    figures = (n.replace(",", "") for n in _NUMBER.findall(text))
    return {f if "." in f else f.lstrip("0") or "0" for f in figures}


def _terms(text: str) -> set[str]:
    """Content words, each also without a plural's "s", so "ledgers" meets "ledger"."""
    found = {w for w in words(text) if len(w) >= 4 and w.isalpha() and w not in FUNCTION_WORDS}
    return found | {w[:-1] for w in found if w.endswith("s")}


def _borrowed(text: str, question: str, cited: Sequence[EvidenceItem], evidence: Sequence[EvidenceItem]) -> bool:
    """Whether the answer uses a word that uncited sources hold, absent from its cited sources and
    from the question."""
    uncited = [i for i in evidence if all(i.ref != c.ref for c in cited)]
    if not uncited:
        return False
    held = _terms(question).union(*(_terms(" ".join([i.text, i.title, *i.section_path])) for i in cited))
    used = {w for w in words(_REF.sub(" ", text)) if len(w) >= 4 and w.isalpha() and w not in FUNCTION_WORDS}
    used = {w for w in used if w not in held and w.removesuffix("s") not in held}
    if not used:
        return False
    holders = [_terms(" ".join([i.text, i.title, *i.section_path])) for i in uncited]
    # Rare: held by some uncited source, yet not by most of what it was given (the corpus's own vocabulary)
    return any(0 < sum(w in h or w.removesuffix("s") in h for h in holders) <= len(evidence) / 2 for w in used)


def _bound(item: EvidenceItem, quote: str | None) -> tuple[str, list[tuple[int, int]] | None, int]:
    """The words a citation shows, where they stand in the source, and where they start. A
    generator's quote is shown as the source has it when it stands there (an elided quote: each
    part as the source has it, an ellipsis for what is left out, so the place of the quote is the
    place of the words quoted, not of the text between them); otherwise as given, placed where its
    first words stand, with no parts (its place is its chunk's)."""
    if not quote:
        return item.text.strip(), None, 0
    parts = locate_parts(item.text, quote)
    if parts is not None:
        return " … ".join(item.text[s:e] for s, e in parts), parts, parts[0][0]
    first = locate(item.text, " ".join(quote.split()[:12]))
    return quote, None, first[0] if first else 0


def verify(draft: Draft, evidence: Sequence[EvidenceItem], question: str = "") -> Verdict:
    text = (draft.text or "").strip()
    if draft.outcome is Outcome.NOT_FOUND or not text or REFUSAL_SENTINEL in text:
        return Verdict(answer=None)
    by_ref = {item.ref: item for item in evidence}
    refs = list(dict.fromkeys(_REF.findall(text)))
    unknown = [r for r in refs if r not in by_ref]
    if unknown:
        return Verdict(None, rejected=Rejection.UNKNOWN_SOURCE, detail=f"cites {', '.join(unknown)}, which it was not given")
    if not refs:
        return Verdict(None, rejected=Rejection.UNCITED, detail="its answer cites no source")
    cited = [by_ref[r] for r in refs]
    names = ", ".join(refs)
    quotes = [q for pair in _QUOTED.findall(text) for q in pair if q.strip()]
    misquoted = draft.outcome is Outcome.UNCONFIRMED and (
        set(draft.quotes) != set(refs) or any(locate(by_ref[r].text, q) is None for r, q in draft.quotes.items()))
    if misquoted or any(all(locate(item.text, q) is None for item in cited) for q in quotes):
        return Verdict(None, rejected=Rejection.QUOTE_NOT_IN_SOURCE,
                       detail=f"it quotes words that none of its cited sources ({names}) holds")
    stated = _numbers(_ORDINAL.sub(" ", _REF.sub(" ", text)))
    held = _numbers(question).union(*(_numbers(" ".join([i.text, i.title, *i.section_path])) for i in cited))
    if stated - held:
        return Verdict(None, rejected=Rejection.NUMBER_NOT_IN_SOURCE,
                       detail=f"it states a number that none of its cited sources ({names}) holds")
    if _borrowed(text, question, cited, evidence):
        return Verdict(None, rejected=Rejection.UNCITED_EVIDENCE,
                       detail=f"it uses words that only a source it does not cite holds (it cites {names})")
    if any(not _condition_holds(c, by_ref, refs) for c in draft.conditions):
        return Verdict(None, rejected=Rejection.CONDITION_NOT_IN_SOURCE,
                       detail=f"it names a condition or an answer for it that the source it cites ({names}) does not hold")
    text = re.sub(r"[ \t]{2,}", " ", _SPACES_BEFORE_PUNCT.sub("", text)).strip()
    # Numbered as the reader meets them: the evidence's numbers are the prompt's, and an answer
    # citing only its third source shows [S1], in its text and its citations alike.
    shown = {ref: f"S{number}" for number, ref in enumerate(refs, 1)}
    text = _REF.sub(lambda m: f"[{shown[m.group(1)]}]", text)
    citations = []
    for item in cited:
        quote, parts, start = _bound(item, draft.quotes.get(item.ref))
        span = item.span_at(start)
        place = item.place_of(parts) if parts else span
        citations.append(
            Citation(
                ref=shown[item.ref], chunk_id=span.chunk_id, document_id=item.document_id, revision=item.revision,
                title=item.title, section_path=span.section_path, quote=quote,
                pages=place.pages, sheet=place.sheet, rows=place.rows,
            )
        )
    if draft.conditions:  # the answer is each condition's, said as verified, cited as shown
        conditions = [c.model_copy(update={"refs": [shown[r] for r in c.refs]}) for c in draft.conditions]
        return Verdict(compose(conditions, draft.dimension, draft.outcome), citations, outcome=draft.outcome,
                       conditions=conditions)
    return Verdict(text, citations, outcome=draft.outcome)


def _condition_holds(condition: ConditionAnswer, by_ref: dict[str, EvidenceItem], refs: Sequence[str]) -> bool:
    """A condition cites sources the draft cites, and its words and its answer stand verbatim in one of them."""
    if not condition.refs or any(r not in refs for r in condition.refs):
        return False
    sources = [by_ref[r] for r in condition.refs]
    return all(any(locate(" ".join([i.text, i.title, *i.section_path]), words) is not None for i in sources)
               for words in (condition.condition, condition.answer) if words)
