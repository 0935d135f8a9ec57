"""A follow-up question made standalone by rules, for the extractive default.

"and for part-time staff?" after "How many days of annual leave do full-time staff get?" asks
the same thing of other people: the previous question's subject and conditions are carried and
the one the follow-up names takes the place of its like ("part-time staff" for "full-time
staff", "Leeds" for "Manchester"), or is added when the previous question named none. A
follow-up that points back with a pronoun ("who approves it?") takes the previous question's
subject, as :func:`citewell.answers.units.parts` does for the second ask of one question.
Anything else is a question of its own and is left as it was asked.
"""

from __future__ import annotations

import re

from citewell.answers.units import _PRONOUN, _subject
from citewell.terms import FUNCTION_WORDS

_PREPOSITIONS = "for|in|at|on|during|under|with|without|after|before|from|to|by|of"
_LEAD = re.compile(r"^\s*(?:and|also)\b", re.I)
_ABOUT = re.compile(r"^\s*(?:(?:and|but|also|so)\b[\s,]*)?(?:what|how)\s+about\s+", re.I)
_PREPOSITION = re.compile(rf"^(?P<prep>{_PREPOSITIONS})\s+(?P<object>.+)$", re.I)
_WORD = re.compile(r"[\w'’-]+")
_ASKING = re.compile(r"^\s*(?:who|whom|whose|what|when|where|which|why|how|is|are|do|does|did|can|could|should|must|may|will)\b", re.I)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)
_MAX_CONDITION_WORDS = 6  # longer than this, "and ..." is a question of its own


def standalone(previous: str, asked: str) -> str:
    """``asked`` as a question that can be answered without ``previous`` (the last standalone
    question of the conversation); ``asked`` itself when it already is one."""
    previous, asked = previous.strip(), asked.strip()
    if not previous or not asked:
        return asked
    condition = _condition(asked)
    if condition is not None:
        return _with_condition(previous, *condition)
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


def _with_condition(previous: str, preposition: str | None, words: str) -> str:
    ending = re.search(r"[?!.]*$", previous)
    end = ending.start() if ending else len(previous)
    body, tail = previous[:end], previous[end:] or "?"
    words = words.strip()
    # 1. the like it replaces: the same head noun ("part-time staff" for "full-time staff")
    tokens = _WORD.findall(_ARTICLE.sub("", words))
    if tokens:
        head = tokens[-1]
        modifiers = len(tokens) - 1
        like = re.compile(rf"((?:[\w'’-]+\s+){{0,{modifiers}}}){re.escape(head)}\b", re.I)
        for match in reversed(list(like.finditer(body))):
            before = match.group(1).split()
            kept = [w for w in before if w.lower() in FUNCTION_WORDS]  # "do full-time staff": keep "do"
            if len(kept) == len(before) and before:  # nothing of its own to replace
                continue
            start = match.start() + sum(len(w) + 1 for w in before[: _leading(before)])
            return body[:start] + _ARTICLE.sub("", words) + body[match.end():] + tail
    # 2. the condition of its kind: the same preposition, or a place for a place
    phrases = list(re.finditer(rf"\b({_PREPOSITIONS})\s+((?:the\s+)?[\w'’-]+(?:\s+[A-Z][\w'’-]*)*)", body))
    proper = words[:1].isupper()
    for match in reversed(phrases):
        prep, thing = match.group(1).lower(), _ARTICLE.sub("", match.group(2))
        like_kind = proper and thing[:1].isupper() or not proper and prep == "for"
        if (preposition and prep == preposition) or (not preposition and like_kind):
            return body[: match.start()] + f"{prep} {words}" + body[match.end():] + tail
    # 3. none to replace: added
    return f"{body} {preposition or ('in' if proper else 'for')} {words}{tail}"


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
