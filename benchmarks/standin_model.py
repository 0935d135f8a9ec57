"""A stand-in for a language model, for measuring citewell's model generators without one.

It is not a language model and knows nothing: it reads the prompt citewell sends (the
numbered ``<source>`` blocks, the question, and the refusal word the system prompt names)
and answers in the format that prompt asks for, the way a faithful model would: the source
sentence that shares the most of the question's rarer words, quoted exactly, with its
``[Sn]``; or the refusal word when no sentence holds at least half the weight of the
question's words. Then, at a seeded rate, it makes the mistakes real models make:

- ``invented_source``: cites a source number it was not given;
- ``unsupported_number``: restates the sentence with a number the sources do not hold;
- ``false_quote``: quotes words the source does not say (a word dropped, a "not" put in
  or taken out);
- ``unwarranted_answer``: answers, quoting its nearest sentence, where it would refuse;
- ``malformed``: a reply cut off mid-JSON, or prose with no quote and no citation.

The first three and the prose kind of ``malformed`` are what verification must reject; a cut
reply is what the adapters must report as unusable; an unwarranted answer quotes a real
sentence, so only the evaluation's labels can count it. Whether and how a reply goes wrong
is drawn from the seed and the prompt, so the same prompt always gets the same reply.
"""

from __future__ import annotations

import html
import math
import random
import re
from dataclasses import dataclass
from enum import StrEnum

from citewell.answers.prompt import REWRITE_PROMPT
from citewell.expansion import SYSTEM as EXPANSION_PROMPT


class Fault(StrEnum):
    INVENTED_SOURCE = "invented_source"
    UNSUPPORTED_NUMBER = "unsupported_number"
    FALSE_QUOTE = "false_quote"
    UNWARRANTED_ANSWER = "unwarranted_answer"
    MALFORMED = "malformed"


WHEN_ANSWERING = (Fault.INVENTED_SOURCE, Fault.UNSUPPORTED_NUMBER, Fault.FALSE_QUOTE, Fault.MALFORMED)
WHEN_REFUSING = (Fault.UNWARRANTED_ANSWER, Fault.MALFORMED)

_SOURCE = re.compile(r'<source id="(S\d+)" title="([^"]*)" section="([^"]*)">\n(.*?)\n</source>', re.DOTALL)
_QUESTION = re.compile(r"\nQuestion:(.*)\Z", re.DOTALL)
_SENTINEL = re.compile(r"reply with exactly (\S+) and nothing else")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(A-Z0-9])")
_WORD = re.compile(r"[a-z0-9]+(?:[-.'][a-z0-9]+)*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_STOP = frozenset(
    "a an and are as at be by can could did do does for from get gets had has have how i in is it its many may "
    "me much must my of on or our should so than that the their them there these they this those to was we "
    "were what when where which who whom whose why will with would you your".split()
)
_NEGATABLE = re.compile(r"\b(is|are|must|can|will|should|may|does|do)\b")
ANSWER_SHARE = 0.5  # of the question's word weight one sentence must hold; set once, never tuned


@dataclass(frozen=True)
class Source:
    ref: str
    context: str  # title and section: what the model is told the text is
    text: str


@dataclass(frozen=True)
class Prompt:
    sentinel: str | None
    sources: list[Source]
    question: str


@dataclass(frozen=True)
class Reply:
    """``content`` None: the reply is cut off before its JSON ends."""

    content: str | None
    decision: str  # "answer" or "refuse": what the faithful reading was
    fault: Fault | None = None


def parse_prompt(system: str, user: str) -> Prompt:
    sentinel = _SENTINEL.search(system)
    question = _QUESTION.search(user)
    sources = [
        Source(ref=ref, context=html.unescape(f"{title} {section}"), text=html.unescape(text))
        for ref, title, section, text in _SOURCE.findall(user)
    ]
    return Prompt(sentinel.group(1) if sentinel else None, sources, question.group(1).strip() if question else "")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def sentences(source: Source) -> list[str]:
    """Each line's sentences, exactly as the source has them."""
    return [s.strip() for line in source.text.splitlines() for s in _SENTENCE_END.split(line) if s.strip()]


def best_sentence(prompt: Prompt) -> tuple[float, str, Source] | None:
    """The sentence holding the largest share of the question's word weight (words rarer in
    the sources weigh more; a word only in the source's title or section counts half)."""
    candidates = [(s, source) for source in prompt.sources for s in sentences(source)]
    asked = _terms(prompt.question)
    if not candidates or not asked:
        return None
    held = [_terms(s) for s, _ in candidates]
    weight = {t: math.log(1 + len(held) / (1 + sum(t in h for h in held))) for t in asked}
    total = sum(weight.values())
    best: tuple[float, str, Source] | None = None
    for (sentence, source), terms in zip(candidates, held):
        context = _terms(source.context)
        share = sum(w if t in terms else w / 2 if t in context else 0.0 for t, w in weight.items()) / total
        if best is None or share > best[0]:
            best = (share, sentence, source)
    return best


class StandInModel:
    def __init__(self, fault_rate: float = 0.0, faults: tuple[Fault, ...] = tuple(Fault), seed: int = 0) -> None:
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError("fault_rate is a share, from 0 to 1")
        self.fault_rate = fault_rate
        self.faults = faults
        self.seed = seed

    def reply(self, system: str, user: str) -> Reply:
        if system == REWRITE_PROMPT:  # a follow-up to make standalone: what a model would write
            return Reply(_rewritten(user), "rewrite")
        if system == EXPANSION_PROMPT:  # query expansion: a known signal, not a paraphrase
            return Reply(_expanded(user), "expand")
        prompt = parse_prompt(system, user)
        rng = random.Random(f"{self.seed}\x00{system}\x00{user}")
        found = best_sentence(prompt)
        refusal = prompt.sentinel or "I cannot answer that from these sources."
        answering = found is not None and found[0] >= ANSWER_SHARE
        decision = "answer" if answering else "refuse"
        kinds = [k for k in (WHEN_ANSWERING if answering else WHEN_REFUSING) if k in self.faults]
        fault = rng.choice(kinds) if kinds and rng.random() < self.fault_rate else None
        if found is None and fault is not Fault.MALFORMED:
            fault = None  # nothing to quote: nothing to quote wrongly either
        if fault is None:
            return Reply(f'"{found[1]}" [{found[2].ref}]' if answering and found else refusal, decision)
        if fault is Fault.MALFORMED:
            if rng.random() < 0.5:
                return Reply(None, decision, fault)
            said = found[1] if answering and found else "I could not find that in the documents you shared."
            return Reply(f"Sure! {said}", decision, fault)
        assert found is not None
        _, sentence, source = found
        if fault is Fault.INVENTED_SOURCE:
            return Reply(f'"{sentence}" [S{len(prompt.sources) + 1 + rng.randrange(3)}]', decision, fault)
        if fault is Fault.UNSUPPORTED_NUMBER:
            return Reply(f"{_misstate(sentence, prompt, rng)} [{source.ref}]", decision, fault)
        if fault is Fault.FALSE_QUOTE:
            return Reply(f'"{_misquote(sentence, rng)}" [{source.ref}]', decision, fault)
        return Reply(f'"{sentence}" [{source.ref}]', decision, fault)  # an unwarranted answer


def _rewritten(user: str) -> str:
    """The last question made standalone on the latest earlier one, by the same rules the
    extractive default uses: the stand-in is a model that rewrites well, as one would."""
    from citewell.answers.followups import standalone

    earlier = [html.unescape(q) for q in re.findall(r"<question>(.*?)</question>", user, re.S)]
    last = re.search(r"Last question: (.*)\Z", user, re.S)
    asked = last.group(1).strip() if last else ""
    return standalone(earlier[-1], asked) if earlier else asked


def _expanded(user: str) -> str:
    """Probes a model could not do worse than: the question's content words (its stop words
    dropped), and each half of them when there are four or more; the passage, those words as one
    sentence. No synonyms and no knowledge: what the plumbing costs, not what a model adds."""
    import json

    try:
        question = str(json.loads(user.removeprefix("Question: ")))
    except ValueError:
        question = user
    content = [w for w in _WORD.findall(question.lower()) if w not in _STOP]
    probes = [" ".join(content)]
    if len(content) >= 4:
        probes += [" ".join(content[: len(content) // 2]), " ".join(content[len(content) // 2 :])]
    return json.dumps({"probes": probes, "passage": f"{' '.join(content).capitalize()}." if content else ""})


def _unheld(prompt: Prompt, start: int) -> int:
    held = {n.replace(",", "") for s in prompt.sources for n in _NUMBER.findall(f"{s.context} {s.text}")}
    held |= set(_NUMBER.findall(prompt.question))
    value = start
    while str(value) in held:
        value += 1
    return value


def _misstate(sentence: str, prompt: Prompt, rng: random.Random) -> str:
    """The sentence in the model's words, with one figure wrong (or one added)."""
    numbers = list(_NUMBER.finditer(sentence))
    if not numbers:
        return f"{sentence} This has applied since {_unheld(prompt, rng.randrange(1990, 2015))}."
    number = rng.choice(numbers)
    whole = int(number.group(0).replace(",", "").split(".")[0])
    return f"{sentence[: number.start()]}{_unheld(prompt, whole + 1)}{sentence[number.end():]}"


def _misquote(sentence: str, rng: random.Random) -> str:
    """What a model that paraphrases inside quote marks writes: "not" taken out or put in, or a word gone."""
    if " not " in sentence:
        return sentence.replace(" not ", " ", 1)
    if (verb := _NEGATABLE.search(sentence)) is not None:
        return f"{sentence[: verb.end()]} not{sentence[verb.end():]}"
    words = sentence.split()
    if len(words) < 3:
        return f"{sentence} only"
    del words[rng.randrange(1, len(words) - 1)]
    return " ".join(words)
