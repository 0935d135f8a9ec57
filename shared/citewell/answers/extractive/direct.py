"""The direct answer an answer states before its quote, when a unit says it plainly: the record
field the question names, or the one number, date or name of the kind asked for; and whether a
question names a record's row."""

from __future__ import annotations

import re

from citewell.answers.extractive.kinds import DATE, MONEY, NUMBER, PERSON, Wants
from citewell.answers.extractive.question import stems
from citewell.answers.extractive.units import Unit
from citewell.terms import FUNCTION_WORDS

_NAME_FIELDS = frozenset({"name", "contact", "owner", "person"})  # stems of the fields that name someone


_DIGITS = re.compile(r"\d[\d,.]*\d|\d")


def direct_answer(question: str, unit: Unit, wanted: frozenset[Wants]) -> str | None:
    """What the answer is, in a few words, when the unit says it plainly: the record field the
    question names, or the only number, date or name of the kind asked for."""
    if unit.record:
        # a column's name read as words: "lcid_hex" is "lcid hex", "iso_639_2B_code" names a code
        fields = [(stems(name.replace("_", " ")), value.strip())
                  for name, _, value in (f.partition(": ") for f in unit.text.split("; "))]
        # A row asked by one of its values: the words naming that value's column are what is given,
        # not what is asked ("Which locale does LCID 0x0411 map to?" names ``lcid_hex: 0x0411``; the
        # ``lcid`` column is the value's, the answer the ``locale``).
        given = {word for named, value in fields if value and _named_in(value, question) for word in named}
        asked = (stems(question) - given) or stems(question)
        # the field the question names most of ("night shift supplement", not "field allowance per shift")
        for named, value in sorted(fields, key=lambda f: -len(f[0] & asked)):
            if named & asked and value and not _named_in(value, question):
                return value
        for kind, pattern in ((Wants.DATE, DATE), (Wants.MONEY, MONEY), (Wants.NUMBER, NUMBER)):
            valued = [value for _, value in fields if kind in wanted and value and pattern.search(value)
                      and not _named_in(value, question)]
            if len(valued) == 1:  # "how long ...?" is answered by the row's one period, whatever its column says
                return valued[0]
        if Wants.PERSON in wanted:  # "who ...?" is answered by the row's name
            return next((value for named, value in fields if named & _NAME_FIELDS and value), None)
        return None
    named = set(_DIGITS.findall(question))  # "53" in "the 53-bit limit" is no answer to it
    for kind, pattern in ((Wants.DATE, DATE), (Wants.MONEY, MONEY), (Wants.NUMBER, NUMBER), (Wants.PERSON, PERSON)):
        if kind in wanted:
            found = {m.group(0).strip() for m in pattern.finditer(unit.text)} - {"", *re.findall(r"\S+", question)}
            found = {f for f in found if not set(_DIGITS.findall(f)) & named}
            if len(found) == 1:
                return found.pop()
    return None


# "status 9", "returned 4", "exit code 2": the words that make a lone digit a value the question names.
_STATUS_BEFORE = r"(?:(?<=[%$-])|\b(?:status|code|value|returned|returns|return|exited|exits|errno|number) )"


def names_a_field(question: str, record: str) -> bool:
    """Whether the question names one of the record's values whole: the row it asks about
    ("What does the fstab keyword 'defaults' stand for?" names the row ``term: defaults``; "%x"
    names ``term: x``; "error number 111" names ``Number: 111``; "exited with status 9" names
    ``exit value: 9``). A value that is a function word, or a single character the question does
    not write with a sign before it (or, for a digit, after a word for a status), names nothing."""
    asked = question.lower()
    for field in record.split("; "):
        value = field.partition(": ")[2].strip().lower()
        for form in {value, *(part.strip() for part in value.split(","))}:
            form = form.strip("'\"`=")
            if not form or form in FUNCTION_WORDS or len(form) > 60:
                continue
            before = (_STATUS_BEFORE if form.isdigit() else r"(?<=[%$-])") if len(form) == 1 else r"(?<![\w-])"
            if re.search(rf"{before}{re.escape(form)}(?![\w-])", asked):
                return True
    return False


def _named_in(value: str, question: str) -> bool:
    """Whether the question already names the value, or one of its comma-separated forms: that
    field is the record's key ("What does --dry-run do?" is not answered by "-n, --dry-run")."""
    asked = question.lower()
    return value.lower() in asked or any(
        len(part) > 1 and re.search(rf"(?<![\w-]){re.escape(part)}(?![\w-])", asked)
        for part in (p.strip().lower() for p in value.split(",")))
