"""Records: one row, option or field list written as ``field: value; field: value``.

The answerer reads a block of that form as one unit, quoted whole, and reads the field the
question names off it (``citewell.answers.extractive.units.RECORD``). That form holds only when no name
carries ``:`` or ``;`` and no value carries ``;`` or a line break, so both are made to fit
here: a value's ``;`` becomes ``,`` (the nearest separator that does not split the record), a
name's ``:`` or ``;`` a space.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from citewell.parsers.builder import clean_inline

_NAME_BREAKS = re.compile(r"\s*[:;]+\s*")
_VALUE_BREAKS = re.compile(r"\s*;+(?:\s*;)*")
NAME_CHARS = 60  # the longest field name the answerer reads as one


def field_name(name: str) -> str:
    """A field name that fits the record form (a long header is no name: it is dropped)."""
    name = _NAME_BREAKS.sub(" ", clean_inline(name)).strip()
    return name if len(name) <= NAME_CHARS else ""


def field_value(value: str) -> str:
    return _VALUE_BREAKS.sub(",", clean_inline(value)).strip(" ,")


def record(pairs: Iterable[tuple[str, str]]) -> str:
    """``name: value; name: value`` for the pairs with a value; a pair without a name is its
    value alone (a cell under no header)."""
    out = []
    for name, value in pairs:
        value = field_value(value)
        if not value:
            continue
        name = field_name(name)
        out.append(f"{name}: {value}" if name else value)
    return "; ".join(out)


def record_text(header: list[str], values: list[str]) -> str:
    """One table row: each non-empty cell under its column's header."""
    return record((header[i] if i < len(header) else "", value) for i, value in enumerate(values))
