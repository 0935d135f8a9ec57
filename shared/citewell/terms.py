"""Words of a question that carry meaning, for the lexical lane and for support scoring."""

from __future__ import annotations

import re

WORD = re.compile(r"\w+", re.UNICODE)
# English function words: they match most passages, add little to BM25 and slow FTS5 down
# (every matching row is scored before the access filter and top-k). The pieces an apostrophe
# leaves ("Manager's", "don't", "we'll", "I've") are among them: "s" is no term of a question.
FUNCTION_WORDS = frozenset(
    "a about an and are as at be been being but by can could did do does for from had has have how i if in into "
    "is it its many may me might much must my no not of on or our should so than that the their them then there "
    "these they this those to too us was we were what when where which who whom whose why will with would you your per "
    "s t ll ve".split()
)


def words(text: str) -> list[str]:
    return [t.lower() for t in WORD.findall(text)]


def content_terms(text: str) -> set[str]:
    return {w for w in words(text) if w not in FUNCTION_WORDS}
