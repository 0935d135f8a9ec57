"""A follow-up question made standalone by rules, for the extractive default.

"and for part-time staff?" after "How many days of annual leave do full-time staff get?" asks
the same thing of other people: the previous question's subject and conditions are carried and
the one the follow-up names takes the place of its like ("part-time staff" for "full-time
staff", "Leeds" for "Manchester"), or is added when the previous question named none. A
follow-up that points back with a pronoun ("who approves it?") takes the previous question's
subject, as :func:`citewell.answers.extractive.question.parts` does for the second ask of one question.
Anything else is a question of its own and is left as it was asked.
"""

from __future__ import annotations

import re

from citewell.answers.extractive.question import _PRONOUN, _subject
from citewell.terms import FUNCTION_WORDS

_PREPOSITIONS = "for|in|at|on|during|under|with|without|after|before|from|to|by|of|outside|inside|within"
# A code or a version ("KV-1210", "TF-4290", "5.3"): another of its shape takes its place.
_CODE = re.compile(r"\b(?:[A-Za-z]{1,6}-\d{2,6}|\d+\.\d+)\b")
_LEAD = re.compile(r"^\s*(?:and|also)\b", re.I)
_ABOUT = re.compile(r"^\s*(?:(?:and|but|also|so)\b[\s,]*)?(?:what|how)\s+about\s+", re.I)
_PREPOSITION = re.compile(rf"^(?P<prep>{_PREPOSITIONS})\s+(?P<object>.+)$", re.I)
_WORD = re.compile(r"[\w'’-]+")
_ASKING = re.compile(r"^\s*(?:who|whom|whose|what|when|where|which|why|how|"
                     r"is|are|do|does|did|can|could|should|must|may|will)\b", re.I)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)
_MAX_CONDITION_WORDS = 6  # longer than this, "and ..." is a question of its own


def standalone(previous: str, asked: str) -> str:
    """``asked`` as a question that can be answered without ``previous`` (the last standalone
    question of the conversation); ``asked`` itself when it already is one."""
    previous, asked = previous.strip(), asked.strip()
    if not previous or not asked:
        return asked
    condition = _condition(asked)
    if condition is not None and (rewritten := _with_condition(previous, *condition)) is not None:
        return rewritten
    plain = _LEAD.sub("", asked, count=1).lstrip(" ,") if _LEAD.match(asked) else asked
    if _PRONOUN.search(plain) and len(_WORD.findall(plain)) <= 8 and (subject := _subject(previous.rstrip("?!. "))):
        return _PRONOUN.sub(lambda m: _pointed(m.group(0), subject), plain, count=1)
    return plain


def _condition(asked: str) -> tuple[str | None, str] | None:
    """``(preposition, words)`` of a follow-up that only names a condition, else None."""
    about = _ABOUT.match(asked)
    if about:
        phrase = asked[about.end():]
    elif _LEAD.match(asked):
        phrase = _LEAD.sub("", asked, count=1).lstrip(" ,")
        if _ASKING.match(phrase):  # "and how long does it take?": a question, not a condition
            return None
    else:
        bare = _PREPOSITION.match(asked.rstrip(" ?.!"))
        if not bare or len(_WORD.findall(asked)) > _MAX_CONDITION_WORDS:
            return None
        phrase = asked
    phrase = phrase.strip(" ?.!,")
    if not phrase or len(_WORD.findall(phrase)) > _MAX_CONDITION_WORDS or _ASKING.match(phrase):
        return None
    found = _PREPOSITION.match(phrase)
    return (found.group("prep").lower(), found.group("object")) if found else (None, phrase)


def _with_condition(previous: str, preposition: str | None, words: str) -> str | None:
    """``previous`` with the condition in place of its like, or added; None when the words are
    not a condition the previous question could take ("what about the hotel allowance?" after a
    question on annual leave asks about another thing, not leave "for the hotel allowance")."""
    ending = re.search(r"[?!.]*$", previous)
    end = ending.start() if ending else len(previous)
    body, tail = previous[:end], previous[end:] or "?"
    words = words.strip()
    # 1. a code for a code of its shape ("and KV-1210?" after "What does alarm KV-1104 mean?")
    if _CODE.fullmatch(words) and (codes := [m for m in _CODE.finditer(body) if _shape(m.group()) == _shape(words)]):
        last = codes[-1]
        return body[: last.start()] + words + body[last.end():] + tail
    # 2. the like it replaces: the same head noun ("part-time staff" for "full-time staff")
    tokens = _WORD.findall(_ARTICLE.sub("", words))
    if len(tokens) > 1:  # a bare word is a condition of its own (3)
        head, modifiers = tokens[-1], tokens[:-1]
        like = re.compile(rf"((?:[\w'’,.-]+\s+){{0,{len(modifiers)}}}){re.escape(head)}\b", re.I)
        for match in reversed(list(like.finditer(body))):
            before = match.group(1).split()
            lead = _leading(before)
            if lead == len(before) and before:  # only function words before it: nothing of its own to replace
                continue
            if [w.lower() for w in modifiers[:lead]] == [w.lower() for w in before[:lead]]:
                lead = 0  # "more than 5 hours" for "more than 10 hours": the whole of it
            start = match.start() + sum(len(w) + 1 for w in before[:lead])
            return body[:start] + _ARTICLE.sub("", words) + body[match.end():] + tail
    # 3. the condition of its kind: the same preposition, the same thing, or a place for a place
    obj = _ARTICLE.sub("", words)
    phrases = list(re.finditer(rf"\b({_PREPOSITIONS})\s+((?:(?!\b(?:{_PREPOSITIONS})\b)[\w'’,.-]+\s*)+)", body, re.I))
    proper = words[:1].isupper()
    for match in reversed(phrases):
        prep, thing = match.group(1).lower(), _ARTICLE.sub("", match.group(2).strip())
        same_thing = thing.lower() == obj.lower()
        like_kind = proper and thing[:1].isupper() or not proper and prep == "for"
        if same_thing or (preposition and prep == preposition) or (not preposition and like_kind):
            end = match.start(2) + len(match.group(2).rstrip())
            if end < len(body.rstrip()) and len(match.group(2).split()) > 1:  # not at the end: its last word is the verb
                end = match.start(2) + match.group(2).rstrip().rfind(" ")
            return body[: match.start()] + f"{preposition or prep} {words}" + body[end:] + tail
    # 4. none to replace: added, if it reads as a condition (a place or name, a preposition, or
    # a group without an article: "what about contractors?"); "the hotel allowance" is a thing
    if not preposition and not proper and _ARTICLE.match(words):
        return None
    return f"{body} {preposition or ('in' if proper else 'for')} {words}{tail}"


def _shape(code: str) -> str:
    return re.sub(r"\d", "9", re.sub(r"[A-Za-z]", "A", code))


def _leading(words: list[str]) -> int:
    """How many of ``words`` (the ones before a head noun) are function words at their start."""
    count = 0
    for word in words:
        if word.lower() not in FUNCTION_WORDS:
            break
        count += 1
    return count


def _pointed(pronoun: str, subject: str) -> str:
    lower = pronoun.lower()
    if lower in {"its", "their"}:
        return f"the {subject}'s"
    return f"the {subject}"
