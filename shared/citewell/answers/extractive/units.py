"""What an extractive answer is made of: the units of an evidence passage, and what a question asks for.

Parsers separate blocks (paragraphs, list items, table rows, records, code) with a blank line.
A record or a table row (``field: value; field: value``) is one unit and is quoted whole; a
paragraph is cut into sentences, a line break inside it being a wrap, not a sentence end; a
run of short blocks under one heading (the steps of a procedure, the items of a list) can be
quoted as the run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any

import numpy as np

from citewell.chunking import sentence_spans
from citewell.models import EvidenceItem
from citewell.terms import FUNCTION_WORDS, content_terms

_BLOCK_GAP = re.compile(r"\n[ \t]*\n")
_FIELD = r"[^:;\n]{1,60}: [^;\n]*"
RECORD = re.compile(rf"{_FIELD}(?:; {_FIELD})+")
# A figure: "16,384", "3.5", or thousands grouped by spaces ("830 000", as French and SI write them).
_FIGURE = r"(?:\d{1,3}(?:[ \u00a0\u202f]\d{3}(?!\d))+(?:[.,]\d+)?|\d[\d,.]*)"
# A figure with its unit ("30 days", "3700 kbytes"), never a function word after it: "at least Rust
# 1.60 and the maturin build tool" holds 1.60, not "1.60 and".
_NOT_UNITS = "|".join(sorted(FUNCTION_WORDS - {"s", "t"}, key=len, reverse=True))
NUMBER = re.compile(rf"\b{_FIGURE}(?:\s?%|\s?(?!(?i:{_NOT_UNITS})\b)(?:[a-zA-Z€$£]+\b))?")
DATE = re.compile(
    r"\b(?:\d{1,2}(?:st|nd|rd|th)? (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{1,2}|\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|"
    # a time of day written out: "9 am", "9.30 p.m.", "nine o'clock", "noon"
    r"\d{1,2}(?:[:.]\d{2})?\s?[ap]\.?m|(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve) o['’]clock|"
    r"noon|midnight|"
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|(?:19|20)\d{2})\b",
    re.IGNORECASE,
)
# An amount of money: "89 euros", "€89", "500 pounds", "$1.2 million".
_SCALE = r"(?:\s?(?:million|billion|bn|k|m)\b)?"
MONEY = re.compile(rf"[€$£]\s?{_FIGURE}{_SCALE}|\b{_FIGURE}{_SCALE}\s?(?:euros?|eur|pounds?|gbp|dollars?|usd|pence|cents?|"
                   r"francs?|chf|yen|[€$£])(?!\w)", re.I)
# A record's field whose name gives the currency: "maximum (EUR): 54000".
_CURRENCY_FIELD = re.compile(r"(?:\b(?:euros?|eur|pounds?|gbp|dollars?|usd|chf|yen)\b|[€$£])[^:;]*:\s*[€$£]?\d", re.I)
PERSON = re.compile(r"\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)+\b")
CODE = re.compile(r"\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*\b|`[^`]+`|--?[a-z][\w-]+")
# What a manual, a config file or a README names as code, digits or not: a flag ("-m",
# "--cached", not the "-party" of "third-party"), a constant or variable (GLIBCXX_FORCE_NEW,
# $GIT_DIR), a snake_case or dotted name (force_list, path.win32, net.ipv4.ip_forward), a call
# (png_sig_cmp()), a setting with its sign (AccuracySec=, override=True), a CamelCase name
# (ConnectionError), an absolute path (/etc/fstab), capitals with digits (SHA512, SM3, E1028).
WRITTEN_CODE = re.compile(
    r"(?<![\w-])--?[A-Za-z][\w-]*(?:=\S+)?|`[^`]+`|\$[A-Za-z_{][\w}]*(?:/[\w.-]+)*|\b[A-Z]+\d[A-Z\d]*\b|"
    r"(?<![\w.])_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_*(?![\w])|(?<![\w.])_+[A-Za-z]+_+(?![\w])|"
    r"\b[A-Za-z_]\w{1,}(?:\.[A-Za-z_]\w*)+(?:\(\))?|\b\w+\(\)|\b[A-Za-z][\w.]*=(?:[\w\"'/.-]+)?|"
    r"\b[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[a-z]+(?:[A-Z][a-z0-9]+)+\b|(?<![\w.])/(?:[\w.*-]+/)*[\w.*-]+")


class Wants(StrEnum):
    """The kind of answer a question asks for."""

    NUMBER = "number"
    MONEY = "money"  # a number in a currency: what something costs or pays
    DATE = "date"
    PERSON = "person"
    CODE = "code"
    STEPS = "steps"
    LIST = "list"
    DEFAULT = "default"  # the value something takes when nobody sets it


_WANTS = {
    # "What should I do if chlorine is above 1.0 mg/l?" wants one instruction, not a procedure.
    Wants.STEPS: re.compile(r"\bhow (?:do|can|should|to)\b|\bsteps?\b|\bprocedure\b|\bprocess\b", re.I),
    Wants.LIST: re.compile(
        r"\b(?:which|what) (?:are|were)\b|\blist\b|\b(?:types|kinds|options)\b|"
        # a plural, not a singular that ends in -s ("status", "analysis"): "What progress status does ninja print?"
        r"\b(?:which|what) (?:\w+ )?\w+[^siu\W]s (?:are|were|can|do|does|did|have|must|should)\b", re.I),
    Wants.NUMBER: re.compile(
        r"\bhow (?:many|much|long|often|far|big|large|fast)\b|"
        # a product's name may hold a dot or a plus: "In which Node.js version ...?", "what C++ release"
        r"\b(?:which|what) (?:\w[\w.+#-]* )?(?:release|version)\b|"
        r"\b(?:limit|maximum|minimum|number|amount|price|cost|rate|"
        r"percentage|percent|size|budget|allowance|fee|salary|capacity|timeout|duration|period)\b|"
        # an exit status is a number: "What exit code does apt-get return on error?" ("decimal 100")
        r"\b(?:exit|return|error|status) (?:codes?|status|values?)\b|\berrno\b", re.I),
    Wants.MONEY: re.compile(r"\b(?:costs?|price[sd]?|fees?|salar(?:y|ies)|(?<!\bin )charges?|charged)\b|"
                            r"\bhow much (?:\w+ ){0,6}?(?:cost|pay|paid|charge|spend|spent|earn|earned)\b", re.I),
    # "when" asks for a time where it opens an ask, not in "the code used when the endpoint fails".
    # "In which months are reviews done?" asks for a time as much as "when" does.
    # A "when" that sets up the ask ("When writing a custom function, what prefix ...?", "When gzip
    # is found, what command ...?") asks for no time.
    Wants.DATE: re.compile(r"^\W*when\b(?!\s+\w+ing\b)(?![^,?]*,\s*(?:what|which|who|whom|how|where|why)\b)|,?\s+and\s+when\b|"
                           r"\b(?:date|deadline|expire|expires|due|until|what time)\b|"
                           r"\b(?:which|what) (?:days?|weeks?|months?|years?)\b", re.I),
    # "contact" asks for a person as a noun ("the contact for", "whom to contact"), not as a
    # modifier: "contact centre call recordings" asks how long they are kept.
    Wants.PERSON: re.compile(r"\bwho(?:m|se)?\b|\b(?:owner|owns|responsible|in charge)\b|"
                             r"\bcontact\b(?!\s+(?:centre|center|details|form|number|information|list)s?\b)", re.I),
    # Manuals answer "which option", "which environment variable", "how do I stop tracking it?"
    # with a flag, a variable or a command: the sentence that names one.
    Wants.CODE: re.compile(r"\b(?:code|command|error|flags?|settings?|parameters?|key|options?|variables?|functions?|"
                           r"tool|prefix|exception|target|api|method|directive|how (?:do|can|should) (?:i|we|you)|how to|"
                           # "Which libffi call allocates ...?", not "what they call it"
                           r"(?:which|what) (?:\w+ )?call)\b", re.I),
    # "What is the default X?", "unless configured otherwise", "when NINJA_STATUS is not set":
    # the sentence that states a default, not one that shows an example's value.
    Wants.DEFAULT: re.compile(r"\bdefault(?:s|ed)?\b|\bunless (?:configured|set|specified|told)|"
                              r"\b(?:is|are) not set\b|\bdon'?t set\b|\bleft at\b|\bfalls? back\b", re.I),
}
# A list written inside one sentence: "invoices, customers and payments", "CSV, JSON or XML".
SERIES = re.compile(r"\w[\w/-]*(?: [\w/-]+){0,3}, [\w/-]+(?: [\w/-]+){0,3},? (?:and|or) \w")
# A unit that states a default: "Defaults to 1min.", "(the default is 32)", "If not specified, ...".
# "the default interval" or "Memcheck is the default tool" names a default without stating one.
DEFAULT = re.compile(r"\bdefaults? (?:to|is|was|are|value|setting|being)\b|\bdefaults?:|\(default\b|\bthe default\)|"
                     r"\bby default\b|\bif (?:not|un)(?: |-)?(?:specified|set|given)\b|\bfalls? back to\b", re.I)
_PATTERNS = {Wants.NUMBER: NUMBER, Wants.MONEY: MONEY, Wants.DATE: DATE, Wants.PERSON: PERSON, Wants.CODE: WRITTEN_CODE,
             Wants.DEFAULT: DEFAULT}
# an answer of these is new to the question
_ECHOED = frozenset({Wants.NUMBER, Wants.MONEY, Wants.DATE, Wants.PERSON, Wants.CODE})



@lru_cache(maxsize=1)
def _stemmer() -> Any:  # snowballstemmer's English stemmer (the package ships no types)
    import snowballstemmer

    return snowballstemmer.stemmer("english")


_DECIMAL = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?![\w]|\.\d)")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:  # the same words come back in every passage and question
    return str(_stemmer().stemWord(word))


def stems(text: str) -> set[str]:
    """Content words reduced to their stems: "meaning" answers "mean", "restarting" "restart";
    and each decimal whole, so "5.5" is a term that "5.2" does not hold."""
    return {_stem(w) for w in content_terms(text)} | set(_DECIMAL.findall(text))


def wants(question: str) -> set[Wants]:
    """What the question asks for. A price asks for money, not any number: "How much does the
    Growth plan cost?" is not answered by "The free trial lasts 30 days"."""
    kinds = {kind for kind, pattern in _WANTS.items() if pattern.search(question)}
    if _MEANING.search(question):  # "xsltproc returned 4. What does that code mean?" asks for its meaning
        kinds -= {Wants.CODE, Wants.NUMBER}
    return kinds - {Wants.NUMBER} if Wants.MONEY in kinds else kinds


# A question that names a code or a status and asks what it means.
_MEANING = re.compile(r"\bwhat (?:does|do|did) (?:[\w'%$.-]+ ){1,6}?(?:mean|indicate|signify|stand for)\b|"
                      r"\bwhat went wrong\b|\bmeaning of\b", re.I)


_TOKEN = re.compile(r"\w(?:[\w.-]*\w)?")
_SECOND_ASK = re.compile(r",?\s+and\s+(?=(?:who|whom|what|when|where|which|why|how|is|are|do|does|can|should)\b)", re.I)


_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|this|that|these|those|one)\b", re.I)
_ASKING = frozenset("how what when where which who whom whose why".split())


def _subject(ask: str) -> str:
    """What an ask is about, for a later ask that points back to it: the words after its last
    function word ("How long do I have to submit an expense claim" is about "expense claim",
    not "long submit"), else all its content words."""
    tokens = _TOKEN.findall(ask)
    unasked = [t.lower() not in FUNCTION_WORDS | _ASKING for t in tokens]
    last = max((i for i, keep in enumerate(unasked) if not keep), default=-1)
    return " ".join(tokens[last + 1 :] or [t for t, keep in zip(tokens, unasked) if keep])


_NEXT_SENTENCE = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")


def final_ask(question: str) -> str | None:
    """The last sentence of a question that first sets out a situation ("Wildcard limits don't
    apply to root. How do I set one that does?"): what it asks, apart from what it tells. None
    for a question of one sentence."""
    sentences = [s for s in _NEXT_SENTENCE.split(question.strip()) if s.strip()]
    return sentences[-1] if len(sentences) > 1 else None


def parts(question: str) -> list[str]:
    """The asks of a question that asks two things ("How long do I have, and who approves a late one?").
    A later ask that points back ("and how often can a customer get it?") takes the first ask's
    words, so it can be matched on its own."""
    asks = [p.strip(" ,?") for p in _SECOND_ASK.split(question) if p.strip(" ,?")]
    subject = _subject(asks[0]) if asks else ""
    if not asks:
        return []
    return [asks[0] + "?", *(f"{a} ({subject})?" if _PRONOUN.search(a) and subject else f"{a}?" for a in asks[1:])]


# A word-forming prefix before a code ("non-2xx", "pre-v2") is English, not part of the code.
_AFFIX = re.compile(r"^(?:non|pre|post|re|un|anti|sub|multi|semi)-(?=\S*\d)")


def _bare(code: str) -> str:
    return _AFFIX.sub("", code)


_HYPHENATED = re.compile(r"(?<![\w-])[A-Za-z]+(?:-[A-Za-z]+)+(?![\w-])")


def _inside_word(text: str, match: re.Match[str]) -> bool:
    """A flag-like match that is the tail of a hyphenated word ("-time" of "part-time")."""
    return match.group(0).startswith("-") and match.start() > 0 and text[match.start() - 1].isalnum()


def identifiers(text: str) -> set[str]:
    """Codes and numbers named in a question (E1027, WX-4012, 16384, release 5.5): an answer
    must hold them."""
    codes = {_bare(m.group(0).strip("`").lower()) for m in CODE.finditer(text) if not _inside_word(text, m)}
    # "part-time" is not "full-time": a hyphenated word the question names is one to find whole
    codes |= {_bare(w.lower()) for w in _HYPHENATED.findall(text)}
    return codes | set(re.findall(r"\b\d{2,}\b", text)) | set(_DECIMAL.findall(text))


def specific_terms(question: str) -> set[str]:
    """The names and numbers a question is about ("Fenwick Reservoir", "5.5", "2022"): a passage
    that lacks one answers a neighbouring question, not this one. The first word is capitalised
    by grammar, not by meaning, and is left out."""
    tokens = _TOKEN.findall(question)
    return {_bare(t.lower()) for t in tokens[1:] if (t[0].isupper() or any(c.isdigit() for c in t)) and t != "I"
            and t.lower() not in FUNCTION_WORDS}


_NEGATION = re.compile(r"\b(?:not|never|no|none|nor|neither|nothing|nobody|cannot)\b|n't\b", re.I)


def negates(text: str) -> bool:
    """Whether the text says that something is not so ("What did the treaty not cover?"): a
    sentence that only says what is so does not answer it."""
    return _NEGATION.search(text) is not None


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
_CONDITION = re.compile(r"\s(?:if|when|whenever|unless|because|since|although|though|once|so that)\b", re.I)


def asks_what_is_not(question: str) -> bool:
    """Whether the question asks what is not so, in its ask and not in what sets it up: "What
    does ninja print when NINJA_STATUS is not set?" and "I can't tell where it came from.
    Which option tells me?" ask what is, under a condition the answer need not repeat."""
    sentences = [s for s in _SENTENCE_END.split(question.strip()) if s.strip()]
    if not sentences:
        return False
    ask = next((s for s in reversed(sentences) if s.rstrip().endswith("?")), sentences[-1])
    return negates(_CONDITION.split(ask)[0])


def missing_share(terms: set[str], text: str) -> float:
    """The share of ``terms`` that ``text`` (lower case) does not hold as whole words."""
    if not terms:
        return 0.0
    return sum(re.search(rf"(?<![\w.-]){re.escape(t)}(?![\w-]|\.\w)", text) is None for t in terms) / len(terms)


_TOKENS = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")


def _shape(token: str) -> tuple[str, ...] | None:
    """What a sibling of ``token`` shares with it: a hyphenated word's parts but one ("part-time"
    and "full-time"), a code's letters with other digits ("ipv4" and "ipv6", "e1027" and "e1028").
    A bare number has no siblings here: that another number is not the one asked is
    ``identifiers_found``'s to say."""
    if "-" in token:
        return ("-", str(token.count("-")))
    if any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
        return ("#", re.sub(r"\d+", "#", token))
    return None


def names_a_sibling(terms: set[str], text: str) -> bool:
    """Whether ``text`` (lower case) lacks a term the question names and holds a sibling of it
    instead: a passage about full-time staff answers nothing about part-time staff."""
    missing = [t for t in terms if missing_share({t}, text)]
    if not missing:
        return False
    tokens = set(_TOKENS.findall(text))
    for term in missing:
        shape = _shape(term)
        if shape is None:
            continue
        for token in tokens - {term}:
            if _shape(token) != shape:
                continue
            if shape[0] == "#" or sum(a != b for a, b in zip(term.split("-"), token.split("-"))) == 1:
                return True
    return False


@dataclass(frozen=True)
class Unit:
    """A quotable piece of one evidence item: a record, a sentence, or a one-sentence block."""

    item: EvidenceItem
    start: int
    end: int
    block: int  # which block of the item it is in
    record: bool = False
    whole_block: bool = False  # the block is this one unit: a run of them may be a list
    heading: bool = False  # names a section; it answers "when was 5.4 released?" at most
    asked: str = ""  # the question the source asks just before it (a FAQ): context, not an answer

    @property
    def text(self) -> str:
        return " ".join(self.item.text[self.start : self.end].split())

    def holds(self, kind: Wants, asked: str = "") -> bool:
        """Whether the unit holds the kind; with ``asked`` (the question), one the question does not
        already name: "Fix cookie injection (CVE-2018-0494)" holds no number for "Which release
        fixed CVE-2018-0494?", "Enforce 53-bit limit" none for "the option enforcing the 53-bit limit"."""
        if kind is Wants.MONEY and self.record and _CURRENCY_FIELD.search(self.text):
            return True  # a spreadsheet's amounts carry their currency in the column's name
        pattern = _PATTERNS.get(kind)
        if pattern is None:
            return False
        text = _NUMBERING.sub("", self.text) if self.heading else self.text  # "2.3.1 Primitive Types" holds no number
        if not asked or kind not in _ECHOED:
            return pattern.search(text) is not None
        return any(not echoes(m.group(0), asked) for m in pattern.finditer(text))


def echoes(found: str, asked: str) -> bool:
    """Whether ``asked`` already names ``found`` as a whole word (case aside)."""
    bare = found.strip().strip("`'\"").lower()
    return bool(bare) and re.search(rf"(?<![\w]){re.escape(bare)}(?![\w])", asked.lower()) is not None


_NUMBERING = re.compile(r"^\s*(?:\d+\.)*\d+\.?\s+(?=\D)")
_ITEM = re.compile(r"[ \t]*(?:\d{1,2}[.)]|[-*•])[ \t]+\S", re.MULTILINE)


def _items(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A block whose lines are list items ("1. Check ...", "- Check ...", as a plain text file
    writes a list without blank lines): the lines before the first item, then each item with
    the lines that wrap it."""
    starts = [m.start() for m in _ITEM.finditer(text, start, end) if m.start() == start or text[m.start() - 1] == "\n"]
    if len(starts) < 2:
        return [(start, end)]
    bounds = [start, *starts, end] if starts[0] > start else [*starts, end]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if text[a:b].strip()]


def _blocks(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for gap in _BLOCK_GAP.finditer(text):
        spans.append((start, gap.start()))
        start = gap.end()
    spans.append((start, len(text)))
    return [piece for s, e in spans if text[s:e].strip() for piece in _items(text, s, e)]


@lru_cache(maxsize=8192)
def _sentences(block: str) -> tuple[tuple[int, int], ...]:
    """A paragraph's sentence spans. Segmenting is most of what cutting evidence into units
    costs, and the same paragraphs come back for many questions (and for each ask of one)."""
    spans = list(sentence_spans(block))
    # No sentence ends at a period with a word right after it: "loading .env files", "a .o file"
    # were cut in two at the dot of a file name.
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and block[merged[-1][1] - 1 : merged[-1][1]] == "." and block[start : start + 1].isalnum():
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return tuple(merged)


def units_of(item: EvidenceItem) -> list[Unit]:
    """The item's headings, records and sentences, in order. A heading is a unit of its own (it
    may hold a release's date) but never part of a list. A question the source asks (a FAQ's
    "What is the leak allowance?") is no answer: it is kept as the context of what follows, up to
    the next heading or question."""
    headings = {" ".join(h.split()) for span in item.spans for h in span.section_path} | {" ".join(item.title.split())}
    found: list[Unit] = []
    asked = ""
    for number, (start, end) in enumerate(_blocks(item.text)):
        block = item.text[start:end]
        if " ".join(block.split()) in headings:
            found.append(Unit(item, start, end, number, whole_block=True, heading=True))
            asked = ""
            continue
        if RECORD.fullmatch(block.strip()):
            found.append(Unit(item, start, end, number, record=True, whole_block=True, asked=asked))
            continue
        unwrapped = block.replace("\n", " ")  # same length: offsets still hold
        sentences = [(s, e, " ".join(unwrapped[s:e].split())) for s, e in _sentences(unwrapped) if unwrapped[s:e].strip()]
        if sentences and sentences[-1][2].endswith("?"):  # a FAQ's question, with the lines that set it up
            asked = " ".join(sentence for _, _, sentence in sentences)
            continue
        answers = sum(not sentence.endswith("?") for _, _, sentence in sentences)
        for s, e, sentence in sentences:
            if sentence.endswith("?"):
                asked = sentence
                continue
            found.append(Unit(item, start + s, start + e, number, whole_block=answers == 1, asked=asked))
    return found


FILLABLE = frozenset({Wants.PERSON, Wants.NUMBER, Wants.MONEY, Wants.DATE, Wants.CODE, Wants.DEFAULT})


AHEAD = 3  # sentences after a unit that may complete it


def companions(units: list[Unit], wanted: set[Wants], question: str = "") -> list[Unit | None]:
    """For each unit (in evidence order), the unit that holds what the question wants when it
    does not (and, with ``question``, one the question does not already name): the nearest
    earlier sentence of its block that holds it ("Rafael Moutinho, Head of Support." before
    "Approves refunds."), else one of the next ``AHEAD`` sentences of its section that does and holds a word of the
    question it lacks (a manual states the case, then the flag: "... depends on uninitialised
    value(s)." then "Try using the --track-origins=yes to get extra information."; or, for a default,
    the very next sentence of its block that states one), else the heading of its section when that holds it
    ("Tallyforge 5.3, released 20 January 2026", the option a description is under). One pass
    each way, so every unit can be scored with what its answer would quote."""
    kinds = wanted & FILLABLE
    found: list[Unit | None] = [None] * len(units)
    if not kinds:
        return found
    holding = [any(unit.holds(k, question) for k in kinds) for unit in units]
    asked = stems(question)
    headed: list[Unit | None] = [None] * len(units)
    item, block, holder, heading = None, -1, None, None
    for position, unit in enumerate(units):
        if unit.item is not item:
            item, block, holder, heading = unit.item, -1, None, None
        if unit.block != block:
            block, holder = unit.block, None
        if not holding[position] and not unit.heading:
            found[position], headed[position] = holder, heading
        if unit.heading:
            heading = unit if holding[position] else None
        elif holding[position]:
            holder = unit
    for position, unit in enumerate(units):
        if found[position] is not None or holding[position] or unit.heading:
            continue
        section = unit.item.span_at(unit.start).section_path
        lacking = asked - stems(" ".join([unit.text, unit.item.title, *section, unit.asked]))
        for at in range(position + 1, min(position + 1 + AHEAD, len(units))):
            after = units[at]
            if after.item is not unit.item or after.heading or after.item.span_at(after.start).section_path != section:
                break
            # a description's stated default follows it ("The permissions mode for home directories."
            # then "Default: DIR_MODE=0700"), sharing no word of the question
            states_default = Wants.DEFAULT in kinds and at == position + 1 and after.block == unit.block \
                and after.holds(Wants.DEFAULT)
            if holding[at] and not after.record and (states_default or stems(after.text) & lacking):
                found[position] = after
                break
        found[position] = found[position] or headed[position]
    return found


def completion(units: list[Unit], best: Unit, wanted: set[Wants], question: str = "") -> Unit | None:
    """The companion (see ``companions``) of ``best``, which is one of ``units``."""
    position = next(i for i, u in enumerate(units) if u is best)
    return companions(units, wanted, question)[position]


def field_names(unit: Unit) -> tuple[str, ...]:
    return tuple(field.partition(": ")[0] for field in unit.text.split("; "))


def run_around(units: list[Unit], best: Unit) -> list[Unit]:
    """The run of one-unit blocks ``best`` belongs to, in order: the items of a list, the steps
    of a procedure, or the rows of a table (records with the same fields)."""
    if not best.whole_block or best.heading:
        return [best]

    def kin(unit: Unit) -> bool:
        return (unit.whole_block and not unit.heading and unit.record == best.record
                and (not best.record or field_names(unit) == field_names(best)))

    same = [u for u in units if u.item is best.item]
    position = same.index(best)
    first = position
    while first > 0 and kin(same[first - 1]) and same[first - 1].block == same[first].block - 1:
        first -= 1
    last = position
    while last + 1 < len(same) and kin(same[last + 1]) and same[last + 1].block == same[last].block + 1:
        last += 1
    return same[first : last + 1]


@dataclass(frozen=True)
class Support:
    """Units ranked by the unit model, their features, and the features the answer model reads."""

    in_order: list[Unit]  # every unit of the evidence, in evidence order (lists are read off it)
    units: list[Unit]
    probabilities: np.ndarray
    unit_features: list[dict[str, float]]
    features: dict[str, float]
    wanted: frozenset[Wants]
    quoted: list[frozenset[int]]  # for each unit (ranked), the ranks of the units an answer built on it quotes
    complete: bool = True  # every unit was scored; else ``units`` holds those that could rank first or rival it


def _stripped(text: str, unit: Unit) -> tuple[int, int]:
    """The unit's bounds without the whitespace at its edges (a sentence's span runs on to the next one)."""
    start, end = unit.start, unit.end
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def quotes_of(units: Sequence[Unit]) -> dict[str, str]:
    """Each source's quote: its units in source order as the source has them, with the whitespace
    between two that follow each other (it used to be dropped, "configuration.Each", a quote the
    source does not hold), and an ellipsis where text between them is left out."""
    quotes: dict[str, str] = {}
    for ref in dict.fromkeys(u.item.ref for u in units):
        mine = sorted((u for u in units if u.item.ref == ref), key=lambda u: u.start)
        text = mine[0].item.text
        bounds = [_stripped(text, u) for u in mine]
        quote = text[bounds[0][0] : bounds[0][1]]
        for (_, before), (start, end) in zip(bounds, bounds[1:]):
            gap = text[before:start]
            quote += (gap if not gap.strip() else " … ") + text[start:end]
        quotes[ref] = " ".join(quote.split()) if "…" in quote else quote
    return quotes
