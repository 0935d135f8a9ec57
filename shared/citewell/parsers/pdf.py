"""PDF through pypdf: text per page with its page number; bookmarks become sections; contents
and index pages (dot leaders to page numbers) are left out, since they would outrank the
entries they point to.

A PDF's text layer has no blank lines and no heading marks, only positions and font sizes.
So a line that starts further below the last than the body's line spacing starts a
paragraph, and in a PDF without bookmarks a short line set larger than the body text is a
heading (the larger, the higher its level): without them a page is one paragraph, and a
heading ends up inside the first sentence under it.

The title is the metadata's /Title when it is one (not "Untitled" or a file name), else the
first page's largest line; never a bookmark, which names a chapter.

A page without a text layer (a scan) is read by OCR, page by page: a mixed PDF keeps the text
layer where there is one (:mod:`citewell.parsers.scan` says how a scanned page is judged). The
scanned pages, and the pixels of the images they draw, are held to the engine's limits before
the first is read: a PDF of thousands of scanned pages is refused, not read for hours. An engine
that reads the stored file in one job (:class:`~citewell.ports.DocumentOcr`, Textract's asynchronous
route on AWS) is handed no page: it reads every page of the file, so the file's pages are held to
its limit, and the parse waits for the job (:class:`~citewell.errors.OcrPending`) before a block is built.
"""

from __future__ import annotations

import io
import logging
import math
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pypdf import PageObject, PdfReader, PdfWriter
from pypdf.errors import FileNotDecryptedError, PdfReadError

from citewell.errors import CorruptFile, EmptyText, EncryptedPdf
from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.ocr import OcrPage
from citewell.parsers.builder import TextBuilder, split_paragraphs
from citewell.parsers.scan import NOT_INSTALLED, emit_page
from citewell.parsers.sniff import MIME, Kind
from citewell.parsers.titles import choose
from citewell.ports import DocumentOcr, OcrEngine

log = logging.getLogger(__name__)


class _DemoteToDebug(logging.Handler):
    """pypdf reports what it repaired ("EOF marker not found") as warnings on its own logger;
    with no logging configured Python prints them to stderr, into a CLI's --json output.
    They describe the file, not a problem to act on: re-log them here at debug."""

    def emit(self, record: logging.LogRecord) -> None:
        log.debug("pypdf: %s", record.getMessage())


_pypdf_log = logging.getLogger("pypdf")
if not any(isinstance(h, _DemoteToDebug) for h in _pypdf_log.handlers):
    _pypdf_log.addHandler(_DemoteToDebug())
    _pypdf_log.propagate = False

# "1 Introduction . . . . . 2", "asn1_read_value .......... 15", ". . . . 15 asn1_read_value"
_LEADER = re.compile(r"(?:\.\s?){4,}\s*(?:\d+|[ivxlcdm]+)\b", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


def is_contents_page(lines: list[str]) -> bool:
    """A table of contents or index page: most of its lines lead dots to a page number."""
    lines = [line for line in lines if line.strip()]
    leaders = sum(1 for line in lines if _LEADER.search(line))
    return leaders >= 3 and leaders * 2 >= len(lines)


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def _bookmarks(reader: PdfReader) -> dict[int, list[tuple[int, str]]]:
    """``page index -> [(depth, title)]`` in outline order; a broken outline is no outline."""
    by_page: dict[int, list[tuple[int, str]]] = defaultdict(list)

    def walk(items: list[Any], depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            title = _SPACES.sub(" ", str(getattr(item, "title", "") or "")).strip()
            page = reader.get_destination_page_number(item)
            if title and page is not None and page >= 0:
                by_page[page].append((depth, title))

    try:
        walk(reader.outline, 0)
    except Exception as exc:  # noqa: BLE001 - an outline is a convenience; the text is what matters
        log.debug("PDF outline ignored: %s", exc)
        return {}
    return by_page


HEADING_SIZE = 1.15  # a heading is set at least this much larger than the body text
HEADING_CHARS = 150  # and is short
PARAGRAPH_GAP = 1.3  # a line this many body line spacings below the last starts a paragraph


@dataclass
class _Line:
    text: str
    size: float = 0.0  # the smallest font size of its characters, as drawn (0: unknown)
    y: float | None = None  # where it stands on the page (PDF units, upwards)


# Typographic ligatures as PDF text layers keep them ("conﬁguration"): spelled out, a word is the
# word a reader types, for the lexical lane and the answers alike.
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                            "\ufb05": "st", "\ufb06": "st"})


def _lines(page: Any) -> list[_Line]:
    """The page's text lines with their size and height, from pypdf's text visitor; plain lines
    if the visitor's text is not the extracted text."""
    runs: list[tuple[str, float, float]] = []

    def visit(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        if text:
            _, _, c, d, e, f = tm
            # The text matrix then the page's: the height and the scale of the drawn text.
            scale = math.hypot(c * cm[0] + d * cm[2], c * cm[1] + d * cm[3])
            runs.append((text.translate(_LIGATURES), size * scale, e * cm[1] + f * cm[3] + cm[5]))

    text = (page.extract_text(visitor_text=visit) or "").translate(_LIGATURES)
    if "".join(t for t, _, _ in runs) != text:
        return [_Line(line) for line in text.splitlines()]
    lines: list[_Line] = []
    sizes: list[float] = []
    heights: list[float] = []
    current = ""
    for run, size, y in runs:
        for piece_number, piece in enumerate(run.split("\n")):
            if piece_number:
                lines.append(_Line(current, min(sizes, default=0.0), heights[0] if heights else None))
                current, sizes, heights = "", [], []
            current += piece
            if piece.strip():
                sizes.append(size)
                heights.append(y)
    lines.append(_Line(current, min(sizes, default=0.0), heights[0] if heights else None))
    return lines


@dataclass
class _Layout:
    """The document's body text: its size and its line spacing; the sizes its headings use."""

    body: float
    spacing: float
    headings: list[float]

    @classmethod
    def of(cls, pages: list[list[_Line]], outline: bool) -> _Layout:
        chars = Counter[float]()
        for line in (line for page in pages for line in page if line.size):
            chars[round(line.size, 1)] += len(line.text.strip())
        body = chars.most_common(1)[0][0] if chars else 0.0
        steps = [
            above.y - below.y for page in pages for above, below in zip(page, page[1:])
            if above.y is not None and below.y is not None and round(above.size, 1) == round(below.size, 1) == body
            and above.y > below.y
        ]
        # The most frequent step (the smaller of equals): wrapped lines outnumber paragraph gaps.
        counted = Counter(round(step, 1) for step in steps)
        spacing = min(counted, key=lambda step: (-counted[step], step)) if counted else 0.0
        larger = {round(line.size, 1) for page in pages for line in page
                  if body and line.size >= body * HEADING_SIZE and _heading_like(line.text)}
        return cls(body=body, spacing=spacing, headings=[] if outline else sorted(larger, reverse=True))

    def level(self, line: _Line) -> int | None:
        """The heading level of a line set in a heading size, else None."""
        size = round(line.size, 1)
        if size in self.headings and _heading_like(line.text):
            return min(self.headings.index(size) + 1, 3)
        return None

    def starts_paragraph(self, above: _Line, below: _Line) -> bool:
        return (self.spacing > 0 and above.y is not None and below.y is not None
                and above.y - below.y > self.spacing * PARAGRAPH_GAP)


def _heading_like(text: str) -> bool:
    text = text.strip()
    return 0 < len(text) <= HEADING_CHARS and any(c.isalpha() for c in text)


# A word broken at a line's end: the token's start, its last word characters, the hyphen (a
# soft hyphen, U+2010, or the ASCII one), the word characters that open the next line and the
# character after them.
_BROKEN = re.compile(r"(?P<before>\S*?)(?P<left>\w+)(?P<mark>[-\u00ad\u2010])[ \t]*\n[ \t]*(?P<right>\w+)(?P<after>\S?)")
_WORD = re.compile(r"[^\W\d_]+")
_COMPOUND = re.compile(r"[^\W\d_]+(?:[-\u2010][^\W\d_]+)+")
_CODE_MARKS = set("-\u2010_/\\.:=<>@$%~")  # in a token they make it a name (--dry-run, Fc-Config, a.b-c)
_CODE_AFTER = _CODE_MARKS - {".", ":"}  # after the token: "publish-" "dns-servers" (a sentence's full stop is not)
COMPOUND_PART = 5  # a second part this long that the document writes as a word of its own makes a compound


# Two runs of letters a single space apart: a word the extraction may have cut where the
# typesetter kerned it ("serv er", "v ersion", "ef fectively" in groff's PDFs).
SPACED_PIECE = 3  # letters a kerned word's smaller piece has at most, unless both pieces are no words
_SPACED = re.compile(r"(?<![\w-])([^\W\d_]+) (?=([^\W\d_]+)(?![\w-]))")


@dataclass
class _Words:
    """The document's own spelling, lower-cased: how often it writes each word and each
    hyphenated compound within a line, the words broken at a line's end not counted; and the
    pieces that occur only where a space cuts one of its words in two (``fragments``)."""

    words: Counter[str]
    compounds: Counter[str]
    fragments: frozenset[str] = frozenset()

    @classmethod
    def of(cls, pages: list[list[_Line]]) -> _Words:
        words, compounds = Counter[str](), Counter[str]()
        texts = []
        for page in pages:
            text = "\n".join(line.text for line in page).lower()
            texts.append(text)
            words.update(_WORD.findall(text.replace("\u00ad", "")))
            compounds.update(compound.replace("\u2010", "-") for compound in _COMPOUND.findall(text))
            for broken in _BROKEN.finditer(text):  # "prob" and "lem" are no words of the document
                words.subtract(part for part in broken.group("left", "right") if _WORD.fullmatch(part))
        cut = Counter[str]()  # how often a piece stands where joining it to its neighbour spells a word
        for text in texts:
            for spaced in _SPACED.finditer(text):
                left, right = spaced.groups()
                if words[left + right] > 0:
                    cut.update({left, right})
        fragments = frozenset(piece for piece, seen in cut.items() if words[piece] <= seen)
        return cls(words, compounds, fragments)

    def unspaced(self, spaced: re.Match[str]) -> str:
        """Two pieces a space apart, joined when the document spells the joined word whole
        elsewhere and one piece is no word of its own there ("serv er" where "server" is
        written): a space kerning put inside a word. "any one", "in to" stay: both are words."""
        left, right = spaced.groups()
        cut = [piece.lower() in self.fragments for piece in (left, right)]
        # a kerned word loses a letter or two to one side ("f ile", "inte ger"), or both sides are
        # no words ("certif icate"); "fall back" and "vertical layout" are two words each
        short = any(mine and len(piece) <= SPACED_PIECE for mine, piece in zip(cut, (left, right)))
        if self.words[(left + right).lower()] > 0 and (short or all(cut)) \
                and (right.islower() or left.isupper() and right.isupper()):
            return left
        return spaced.group(0)

    def join(self, broken: re.Match[str]) -> str:
        """A break's text: the word joined ("prob-" "lem": "problem") unless the hyphen is the
        word's own ("well-" "known": "well-known"), kept then without the line's space. The
        hyphen is the word's own with digits or a capitalised second part ("x86-64", "Jean-Paul"),
        where the document writes the compound more than the word, and where it writes neither
        but the token is a name ("--dry-run") or its second part a word of its own ("non-"
        "interactive", "comma-" "separated")."""
        before, left, mark, right, after = broken.group("before", "left", "mark", "right", "after")
        joined, hyphenated = f"{before}{left}{right}{after}", f"{before}{left}-{right}{after}"
        if mark == "\u00ad":  # a soft hyphen is the typesetter's word break: never a hyphen
            return joined
        if not (_WORD.fullmatch(left) and _WORD.fullmatch(right)):
            return hyphenated  # "x86-64": digits
        capitals = left.isupper() and right.isupper()  # "DIS-" "CLAIMED": a word set in capitals
        if not capitals and (not right.islower() or not (left.islower() or left.istitle())):
            return hyphenated  # "Jean-Paul", "non-ASCII": the second part is capitalised
        as_word, as_compound = self.words[(left + right).lower()], self.compounds[f"{left}-{right}".lower()]
        if as_word or as_compound:  # "com-" "mand-line", "un-com-" "ment": the document says which
            return joined if as_word > as_compound else hyphenated
        if _CODE_MARKS & set(before) or after in _CODE_AFTER:
            return hyphenated  # "--dry-" "run", "publish-" "dns-servers": a name's own hyphens
        if len(right) >= COMPOUND_PART and self.words[right.lower()] > 0:
            return hyphenated
        return joined


def dehyphenate(text: str, words: _Words) -> str:
    """``text``'s line breaks inside words taken out, by the document's evidence (:class:`_Words`);
    a soft hyphen inside a line is invisible, and dropped; a space kerning put inside a word, too."""
    return _SPACED.sub(words.unspaced, _BROKEN.sub(words.join, text).replace("\u00ad", ""))


def _page(builder: TextBuilder, lines: list[_Line], number: int, marks: list[tuple[int, str]], path: list[str],
          layout: _Layout, words: _Words) -> None:
    """Emit one page, opening each bookmark's section at the line that carries its title
    (or at the top of the page when no line does)."""
    cursor = 0
    for depth, title in marks:
        del path[depth:]
        path.append(title)
        wanted = _norm(title)
        found = next((i for i in range(cursor, len(lines)) if _norm(lines[i].text) == wanted), None)
        if found is None:
            builder.section(list(path))
            continue
        _paragraphs(builder, lines[cursor:found], number, layout, words)
        builder.heading(depth + 1, lines[found].text, page=number)
        cursor = found + 1
    _paragraphs(builder, lines[cursor:], number, layout, words)


def _paragraphs(builder: TextBuilder, lines: list[_Line], number: int, layout: _Layout, words: _Words) -> None:
    """Paragraphs split where a blank line or a gap wider than the line spacing falls, and
    headings (lines set in a heading size; consecutive ones are one wrapped heading)."""
    run: list[_Line] = []
    heading: list[_Line] = []

    def flush() -> None:
        if heading:
            builder.heading(layout.level(heading[0]) or 1, " ".join(line.text.strip() for line in heading), page=number)
            heading.clear()
        if run:
            for paragraph in split_paragraphs(dehyphenate("\n".join(line.text for line in run), words)):
                builder.block(BlockKind.PARAGRAPH, paragraph, page=number)
            run.clear()

    for line in lines:
        level = layout.level(line)
        if level is not None:
            if run or (heading and round(heading[0].size, 1) != round(line.size, 1)):
                flush()
            heading.append(line)
            continue
        if heading or (run and layout.starts_paragraph(run[-1], line)):
            flush()
        run.append(line)
    flush()


def first_page_title(lines: list[_Line], body: float) -> str | None:
    """The first page's largest line, with the lines of that size right after it (a title
    wraps), when it is set larger than the body text; else None."""
    sized = [line for line in lines if line.size and _heading_like(line.text)]
    if not sized or not body:
        return None
    largest = max(round(line.size, 1) for line in sized)
    if largest < body * HEADING_SIZE:
        return None
    start = next(i for i, line in enumerate(lines) if line.size and round(line.size, 1) == largest and _heading_like(line.text))
    parts = []
    for line in lines[start:]:
        if round(line.size, 1) != largest or not line.text.strip():
            break
        parts.append(line.text.strip())
    return " ".join(parts)


def _one_page(reader: PdfReader, index: int) -> bytes:
    """Page ``index`` alone as a PDF: what an OCR engine is handed (Textract takes one page)."""
    writer = PdfWriter()
    writer.add_page(reader.pages[index])
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _is_scanned(lines: list[_Line]) -> bool:
    return not any(line.text.strip() for line in lines)


def _image_pixels(pages: list[PageObject]) -> int:
    """The pixels of the images ``pages`` draw (in forms too), as their dictionaries declare them:
    nothing is decoded. An image counts once, however many pages name it (pages may share one
    resource dictionary naming all the document's images)."""
    seen: set[int] = set()
    total = 0
    stack: list[Any] = [page.get("/Resources") for page in pages]
    while stack:
        resources = stack.pop()
        resources = resources.get_object() if resources is not None else None
        xobjects = resources.get("/XObject") if isinstance(resources, dict) else None
        xobjects = xobjects.get_object() if xobjects is not None else None
        for reference in (xobjects.values() if isinstance(xobjects, dict) else ()):
            number = getattr(reference, "idnum", None)
            if number in seen:
                continue
            if number is not None:
                seen.add(number)
            xobject = reference.get_object()
            if not isinstance(xobject, dict):
                continue
            if xobject.get("/Subtype") == "/Image":
                total += _whole(xobject.get("/Width")) * _whole(xobject.get("/Height"))
            elif xobject.get("/Subtype") == "/Form":
                stack.append(xobject.get("/Resources"))
    return total


def _whole(value: Any) -> int:
    value = value.get_object() if value is not None else 0
    return max(int(value), 0) if isinstance(value, int | float) else 0


def parse_pdf(data: bytes, ocr: OcrEngine | None = None,
              progress: Callable[[str, int, int], None] | None = None) -> ParsedDocument:
    """``ocr`` reads the pages without a text layer; without it they are left out. ``progress``
    hears ``("parse", pages read, pages)`` as the text layer is read, then ``("ocr", done, pages
    to read)`` as OCR reads the scanned ones: a long PDF shows its pages moving, not one stage."""
    scanned = 0
    tell = progress or (lambda stage, done, total: None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise EncryptedPdf("the PDF is encrypted with a password")
            marks = _bookmarks(reader)
            builder = TextBuilder()
            path: list[str] = []
            skipped = 0
            count = len(reader.pages)
            pages = []
            tell("parse", 0, count)
            for page in reader.pages:
                pages.append(_lines(page))
                tell("parse", len(pages), count)
            contents = [is_contents_page([line.text for line in lines]) for lines in pages]
            to_read = sum(1 for lines, skip in zip(pages, contents) if not skip and _is_scanned(lines)) if ocr else 0
            whole: list[OcrPage] | None = None
            if to_read and isinstance(ocr, DocumentOcr):  # one job reads the file where it is stored, every page
                ocr.limits.check_pages(count)  # before the job starts: it is paid by the page
                tell("ocr", 0, to_read)
                whole = ocr.read_document(count)
            elif to_read and ocr is not None:  # before the first page is rendered or sent
                ocr.limits.check_pages(to_read)
                ocr.limits.check_pixels(_image_pixels([reader.pages[index] for index, (lines, skip)
                                                       in enumerate(zip(pages, contents))
                                                       if not skip and _is_scanned(lines)]), to_read)
                tell("ocr", 0, to_read)
            layout = _Layout.of([lines for lines, skip in zip(pages, contents) if not skip], outline=bool(marks))
            words = _Words.of(pages)
            for index, lines in enumerate(pages):
                if contents[index]:
                    for depth, title in marks.get(index, []):
                        del path[depth:]
                        path.append(title)
                        builder.section(list(path))
                    skipped += 1
                    continue
                if _is_scanned(lines):
                    scanned += 1
                    for depth, title in marks.get(index, []):
                        del path[depth:]
                        path.append(title)
                        builder.section(list(path))
                    if ocr is not None:
                        for read in [whole[index]] if whole is not None else ocr.read(_one_page(reader, index)):
                            emit_page(builder, read, index + 1)
                        tell("ocr", scanned, to_read)
                    continue
                _page(builder, lines, index + 1, marks.get(index, []), path, layout, words)
            declared = reader.metadata.title if reader.metadata else None
            document_title = choose(declared, first_page_title(pages[0], layout.body) if pages else None)
        for warning in caught:
            log.debug("pypdf: %s", warning.message)
    except (FileNotDecryptedError, NotImplementedError) as exc:
        raise EncryptedPdf(f"the PDF cannot be decrypted: {exc}") from exc
    except PdfReadError as exc:
        raise CorruptFile(f"the PDF cannot be read: {exc}") from exc
    parsed = builder.build(MIME[Kind.PDF], title=document_title)
    if not parsed.text.strip() and skipped:
        raise EmptyText("the PDF holds only contents or index pages (dot leaders to page numbers)")
    if not parsed.text.strip() and scanned and ocr is None:
        raise EmptyText(f"the PDF has no text layer (a scan), and {NOT_INSTALLED}")
    if not parsed.text.strip() and scanned and ocr is not None:
        raise EmptyText(f"the PDF has no text layer, and OCR ({ocr.name}) found no text on "
                        + ("its page" if scanned == 1 else f"any of its {scanned} pages"))
    if not parsed.text.strip():
        raise EmptyText("no text could be extracted from the PDF")
    return parsed
