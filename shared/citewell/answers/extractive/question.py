"""What a question asks: the kinds of answer it wants, its asks, its stems, and the names and codes an answer must hold.

The unit features (``features``) compare each unit of the evidence with what is read here: a
question's content words as stems, the codes and numbers it names (``identifiers``), the names
that single out what it is about (``specific_terms``), whether it asks what is not so, and the
asks of a question that asks two things (``parts``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from citewell.answers.extractive.kinds import Wants
from citewell.terms import FUNCTION_WORDS, content_terms

CODE = re.compile(r"\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*\b|`[^`]+`|--?[a-z][\w-]+")


_WANTS = {
    # "What should I do if chlorine is above 1.0 mg/l?" wants one instruction, not a procedure.
    Wants.STEPS: re.compile(r"\bhow (?:do|can|should|to)\b|\bsteps?\b|\bprocedure\b|\bprocess\b", re.I),
    Wants.LIST: re.compile(
        r"\b(?:which|what) (?:are|were)\b|\blist\b|\b(?:types|kinds|options)\b|"
        # an order is a sequence: "In what order does pip read its configuration files?"
        r"\b(?:what|which) order\b|\border of (?:precedence|evaluation|preference)\b|"
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
    codes |= {flag.lower() for flag in _SHORT_OPTION.findall(text)}  # "-I", "-t": the option's own entry holds it
    return codes | set(re.findall(r"\b\d{2,}\b", text)) | set(_DECIMAL.findall(text))


_SHORT_OPTION = re.compile(r"(?<![\w-])-[A-Za-z0-9](?![\w-])")


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
