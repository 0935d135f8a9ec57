"""The kinds of answer a question may ask for, and how each is found in a text.

A question that asks "how much" is answered by a number in a currency, "when" by a date, "who" by
a name, "which option" by a flag or a setting: ``Wants`` names the kind (what a question asks for
is read in ``question``), and the patterns here find one in a unit, so a unit can be scored and
quoted for holding the kind asked and a direct answer read off it.
"""

from __future__ import annotations

import re
from enum import StrEnum

from citewell.terms import FUNCTION_WORDS

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
CURRENCY_FIELD = re.compile(r"(?:\b(?:euros?|eur|pounds?|gbp|dollars?|usd|chf|yen)\b|[€$£])[^:;]*:\s*[€$£]?\d", re.I)
PERSON = re.compile(r"\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)+\b")


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


# A list written inside one sentence: "invoices, customers and payments", "CSV, JSON or XML".
SERIES = re.compile(r"\w[\w/-]*(?: [\w/-]+){0,3}, [\w/-]+(?: [\w/-]+){0,3},? (?:and|or) \w")
# A unit that states a default: "Defaults to 1min.", "(the default is 32)", "If not specified, ...".
# "the default interval" or "Memcheck is the default tool" names a default without stating one.
DEFAULT = re.compile(r"\bdefaults? (?:to|is|was|are|value|setting|being)\b|\bdefaults?:|\(default\b|\bthe default\)|"
                     r"\bby default\b|\bif (?:not|un)(?: |-)?(?:specified|set|given)\b|\bfalls? back to\b", re.I)
PATTERNS = {Wants.NUMBER: NUMBER, Wants.MONEY: MONEY, Wants.DATE: DATE, Wants.PERSON: PERSON, Wants.CODE: WRITTEN_CODE,
            Wants.DEFAULT: DEFAULT}
# an answer of these is new to the question
ECHOED = frozenset({Wants.NUMBER, Wants.MONEY, Wants.DATE, Wants.PERSON, Wants.CODE})


FILLABLE = frozenset({Wants.PERSON, Wants.NUMBER, Wants.MONEY, Wants.DATE, Wants.CODE, Wants.DEFAULT})


def echoes(found: str, asked: str) -> bool:
    """Whether ``asked`` already names ``found`` as a whole word (case aside)."""
    bare = found.strip().strip("`'\"").lower()
    return bool(bare) and re.search(rf"(?<![\w]){re.escape(bare)}(?![\w])", asked.lower()) is not None
