"""The one rule for a document's title, which leads every citation of it.

A title is what the document says it is called: its own declared title (PDF or DOCX metadata,
HTML ``<title>``, a reStructuredText title or ``:title:`` field, a man page's NAME line), else
the heading the format sets apart as the title (a Markdown or HTML first-level heading, a
Title-styled paragraph, the largest line of a PDF's first page, a Setext heading that opens a
text file). Never a lower heading or a bookmark: "1 Introduction" names a chapter, not the
document. Without one the parser returns ``None`` and ingestion names the document after its
file (``citewell.ingest.stages``).
"""

from __future__ import annotations

import re

from citewell.parsers.builder import clean_inline

MAX_CHARS = 200  # longer is a sentence that happened to be styled large, not a title
# What authoring tools write when the author wrote nothing: "Untitled", "Document1",
# "Microsoft Word - report.doc", "Slide 1", a bare file name.
_PLACEHOLDER = re.compile(r"^(?:untitled(?:\s+document)?|document\s*\d*|title|slide\s*\d+|presentation\s*\d*|"
                          r"no title|none|null|unknown|default)$", re.IGNORECASE)
_PRODUCER_PREFIX = re.compile(r"^(?:microsoft\s+(?:word|powerpoint|excel)|word|powerpoint)\s+-\s+", re.IGNORECASE)
_FILE_NAME = re.compile(r"^[^\s/\\]*[\w-]\.(?:docx?|pdf|rtf|odt|pptx?|xlsx?|txt|md|html?|tex|dvi|ps|indd|pages|qxd)$",
                        re.IGNORECASE)
_PATH = re.compile(r"^(?:[a-z]:)?[\\/]|[\\/][^\s\\/]+\.\w{2,4}$", re.IGNORECASE)


def usable(title: str | None) -> str | None:
    """``title`` cleaned, or ``None`` when it is a placeholder, a file name or a path, or no words."""
    if not title:
        return None
    text = clean_inline(title).strip(" \t-–—:;,.")
    text = _PRODUCER_PREFIX.sub("", text)
    if not text or len(text) > MAX_CHARS or not any(ch.isalpha() for ch in text):
        return None
    if _PLACEHOLDER.match(text) or _FILE_NAME.match(text) or _PATH.search(text):
        return None
    return text


def choose(*candidates: str | None) -> str | None:
    """The first usable candidate, in the order the rule above ranks them."""
    for candidate in candidates:
        found = usable(candidate)
        if found:
            return found
    return None
