"""Commented configuration files (``adduser.conf``, ``login.defs``, ``sysctl.conf``, ``wgetrc``):
their documentation is the comments, written as prose behind ``#`` marks, between the settings.

Read as plain text, every sentence carried the marks of the lines it spans ("# Specify inclusive
ranges of UIDs # for system users ... # can be dynamically allocated.") and ran on into the
commented-out setting under it. Here the comment marks are taken off the prose, which keeps its
line breaks and indentation; each setting, active or commented out, stays the line the file has
("#DIR_MODE=0700", "UID_MIN 1000"), in one paragraph with the comment above it, which documents
it, and prose after a setting starts a paragraph of its own.
"""

from __future__ import annotations

import re

_ASSIGNMENT = re.compile(r"^[A-Za-z_][\w.\-]*\s*[:=]?=\s*\S")  # KEY=value, key = value, KEY:=value
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]{2,}\s+\S+$")  # ENCRYPT_METHOD SHA512
_COLUMNS = re.compile(r"\S(?: {2,}|\t)\s*\S")  # column-aligned: "#label ::1/128       0"
_RULE = re.compile(r"^[#=\-*_~\s]*$")  # "####...", "#", "# ----": layout
COMMENTED = 0.5  # the share of a file's lines that are comments for it to be read as a configuration file
MIN_COMMENTS = 3


def is_commented_config(text: str) -> bool:
    """Most of its non-blank lines are ``#`` comments (at least ``MIN_COMMENTS`` of them)."""
    lines = [line.lstrip() for line in text.splitlines() if line.strip()]
    comments = sum(line.startswith("#") for line in lines)
    return comments >= MIN_COMMENTS and comments >= COMMENTED * len(lines)


def _is_setting(body: str, tight: bool) -> bool:
    """A setting, not prose: an assignment or a constant and its value; or, written right after
    the mark (``tight``, as a commented-out line is), columns of a table row."""
    stripped = body.strip()
    if _ASSIGNMENT.match(stripped) or _CONSTANT.match(stripped):
        return True
    return tight and len(stripped.split()) <= 6 and bool(_COLUMNS.search(stripped)) and not stripped.endswith((".", ":"))


def uncommented(text: str) -> str:
    """The file's text with its comment marks taken off the prose. A paragraph is a comment's
    prose and the settings right under it (what the comment documents), even across a bare
    ``#`` line between them; prose after a setting opens a new one."""
    out: list[str] = []
    last = ""
    soft = False  # a bare "#" since the last line: a break, unless settings follow prose
    for line in text.splitlines():
        stripped = line.lstrip()
        if not stripped:
            kind, kept = "", ""
        elif not stripped.startswith("#"):
            kind, kept = "setting", line.rstrip()  # an active setting
        else:
            body = stripped.lstrip("#")
            if _RULE.match(body):
                if len(stripped.strip()) <= 2:  # a bare "#": a break within a comment
                    soft = True
                    continue
                kind, kept = "", ""  # a rule ("#####", "# ----"): a break
            elif _is_setting(body, tight=not body[:1].isspace()):
                kind, kept = "setting", stripped.rstrip()
            else:
                kind, kept = "prose", body[1:].rstrip() if body.startswith(" ") else body.rstrip()
        if soft and not (kind == "setting" and last in ("prose", "setting")):
            out.append("")
        if kind == "prose" and last == "setting" and out[-1:] != [""]:
            out.append("")
        out.append(kept)
        last, soft = kind, False
    return "\n".join(out)
