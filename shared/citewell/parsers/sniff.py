"""Decide a file's type from its bytes; the file name is only a hint among text types."""

from __future__ import annotations

import codecs
import re
from enum import StrEnum
from pathlib import PurePosixPath

import filetype

from citewell.errors import CorruptFile, LegacyDoc, TypeMismatch, UnsupportedType
from citewell.parsers.encoding import decode, unmarked_utf16
from citewell.parsers.man_events import looks_like_manpage


class Kind(StrEnum):
    PDF = "pdf"
    DOCX = "docx"
    XLSX = "xlsx"
    MARKDOWN = "markdown"
    RST = "rst"
    HTML = "html"
    CSV = "csv"
    TEXT = "text"
    MANPAGE = "manpage"  # a manual page, rendered to text or as roff source
    PNG = "png"  # images: scans, read by OCR
    JPEG = "jpeg"
    TIFF = "tiff"


MIME = {
    Kind.PDF: "application/pdf",
    Kind.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    Kind.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    Kind.MARKDOWN: "text/markdown",
    Kind.RST: "text/x-rst",
    Kind.HTML: "text/html",
    Kind.CSV: "text/csv",
    Kind.TEXT: "text/plain",
    Kind.MANPAGE: "text/x-manpage",
    Kind.PNG: "image/png",
    Kind.JPEG: "image/jpeg",
    Kind.TIFF: "image/tiff",
}
IMAGE_KINDS = {Kind.PNG, Kind.JPEG, Kind.TIFF}

_BINARY_BY_MAGIC = {"pdf": Kind.PDF, "docx": Kind.DOCX, "xlsx": Kind.XLSX, "png": Kind.PNG, "jpg": Kind.JPEG,
                    "tif": Kind.TIFF}
_LEGACY_OFFICE = {"doc", "xls", "ppt"}
# A name that promises an Office Open XML file whose bytes are a zip without its parts: a broken
# or renamed file, said as what it fails to be, not as "zip files are not supported".
_NOT_VALID = {Kind.DOCX: "not a valid Word document", Kind.XLSX: "not a valid Excel workbook"}
_EXTENSION_HINT = {
    ".pdf": Kind.PDF,
    ".docx": Kind.DOCX,
    ".xlsx": Kind.XLSX,
    ".png": Kind.PNG,
    ".jpg": Kind.JPEG,
    ".jpeg": Kind.JPEG,
    ".tif": Kind.TIFF,
    ".tiff": Kind.TIFF,
    ".md": Kind.MARKDOWN,
    ".markdown": Kind.MARKDOWN,
    ".rst": Kind.RST,
    ".rest": Kind.RST,
    ".html": Kind.HTML,
    ".htm": Kind.HTML,
    ".xhtml": Kind.HTML,  # XHTML is read by the HTML parser (citewell.parsers.html says how)
    ".xht": Kind.HTML,
    ".csv": Kind.CSV,
    ".tsv": Kind.CSV,
    ".txt": Kind.TEXT,
    ".text": Kind.TEXT,
}
_TEXT_KINDS = {Kind.MARKDOWN, Kind.RST, Kind.HTML, Kind.CSV, Kind.TEXT, Kind.MANPAGE}
_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


_BIGTIFF = (b"II+\x00", b"MM\x00+")  # BigTIFF's signatures, either byte order
_PRIVATE_KEY = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")  # PEM: RSA, EC, OPENSSH, ENCRYPTED ...


def _suffix(filename: str | None) -> str:
    return PurePosixPath(filename or "").suffix.lower()


def named_kind(filename: str | None) -> Kind | None:
    """The type a file's name promises (``.md``, ``.pdf``), if it names one."""
    return _EXTENSION_HINT.get(_suffix(filename))


def detect(data: bytes, filename: str | None) -> Kind:
    """Magic bytes decide binary formats; a mismatch with the extension is an error."""
    suffix = _suffix(filename)
    hint = named_kind(filename)
    if data[:4] in _BIGTIFF:  # filetype knows classic TIFF only; Pillow and Textract read BigTIFF too
        if hint is not None and hint is not Kind.TIFF:
            raise TypeMismatch(f"the name says {suffix} but the content is image/tiff")
        return Kind.TIFF
    guess = filetype.guess(data)
    if guess is not None and guess.extension not in {*_BINARY_BY_MAGIC, *_LEGACY_OFFICE} and _is_text(data):
        guess = None  # some signatures are two letters ("BM" is a bitmap): prose can match them
    if guess is not None:
        if guess.extension in _LEGACY_OFFICE:
            raise LegacyDoc(f"legacy Office format ({guess.mime}); save it as .docx or .xlsx and upload again")
        kind = _BINARY_BY_MAGIC.get(guess.extension)
        if kind is None and guess.extension == "zip" and hint in _NOT_VALID:
            raise CorruptFile(f"{_NOT_VALID[hint]}: the file is a zip archive without the parts of a {suffix} file")
        if kind is None:
            raise UnsupportedType(f"{guess.mime} files are not supported")
        if hint is not None and hint is not kind:
            raise TypeMismatch(f"the name says {suffix} but the content is {guess.mime}")
        return kind
    if suffix in {".doc", ".xls", ".ppt"}:
        raise LegacyDoc(f"{suffix} is a legacy Office format; save it as .docx or .xlsx and upload again")
    if hint is not None and hint not in _TEXT_KINDS:
        raise TypeMismatch(f"the name says {suffix} but the content is not a {hint.value.upper()} file")
    if b"\x00" in data[:8192] and not data.startswith(_BOMS) and unmarked_utf16(data) is None:
        raise UnsupportedType("binary content of an unknown type")
    if data[:1024].lstrip().startswith(b"%!PS"):  # drawing commands, not prose: read as text they were noise
        raise UnsupportedType("PostScript files are not supported; convert it to PDF (ps2pdf) and ingest that")
    if _PRIVATE_KEY.search(data[:1 << 20]):
        raise UnsupportedType("the file holds a private key (-----BEGIN ... PRIVATE KEY-----): key material is "
                              "never ingested, so no search or answer can show it")
    return _text_kind(data, hint)


def _text_kind(data: bytes, hint: Kind | None) -> Kind:
    """Text kinds by name, except that a manual page is known by its content: it arrives as
    ``.txt``, as ``ls.1`` or with no name at all."""
    if hint in (None, Kind.TEXT):
        if looks_like_manpage(data[:16384].decode("utf-8", "replace")):
            return Kind.MANPAGE
    if hint is not None:
        return hint
    if markup_root(data) == "html":
        return Kind.HTML
    return Kind.TEXT


_MARKUP_HEAD = 65536  # the prolog a page may open with: an XML declaration, a licence in a comment
_DOCTYPE = re.compile(r"<!doctype\s+([^\s>\[]+)", re.IGNORECASE)
_ROOT = re.compile(r"<([A-Za-z_][\w.:-]*)")
XHTML_NAMESPACE = "http://www.w3.org/1999/xhtml"


def markup_head(data: bytes | str) -> str:
    """The start of ``data`` as text, enough to read its prolog: bytes in UTF-16 decoded as
    such, others as Latin-1 (every ASCII-compatible encoding spells markup in ASCII)."""
    if isinstance(data, str):
        return data[:_MARKUP_HEAD].lstrip("\ufeff")
    head = data[:_MARKUP_HEAD]
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if head.startswith(bom):
            return head[len(bom):].decode(name, "replace")
    unmarked = unmarked_utf16(data)
    return head.decode(unmarked or "latin-1", "replace")


def markup_root(data: bytes | str) -> str | None:
    """What a markup file says it is, lower-cased: its DOCTYPE's name (``html``, ``svg``, ``rss``),
    else its root element's local name (``html``, ``rss``, ``feed``); ``None`` when the file does
    not open with markup. An XML declaration, processing instructions, comments and whitespace
    before them are skipped: XHTML opens with ``<?xml ...?>`` and then ``<!DOCTYPE html ...>`` or
    ``<html xmlns="http://www.w3.org/1999/xhtml">``, an RSS feed or a configuration file with its
    own root, which is not HTML."""
    head = markup_head(data)
    at = 0
    while True:
        while at < len(head) and head[at] in " \t\r\n\f":
            at += 1
        if head.startswith("<?", at):  # the XML declaration, a stylesheet's processing instruction
            end = head.find("?>", at)
            if end < 0:
                return None
            at = end + 2
        elif head.startswith("<!--", at):
            end = head.find("-->", at + 4)
            if end < 0:
                return None
            at = end + 3
        elif doctype := _DOCTYPE.match(head, at):
            return doctype.group(1).lower()
        else:
            break
    root = _ROOT.match(head, at)
    return root.group(1).rsplit(":", 1)[-1].lower() if root else None


def _is_text(data: bytes) -> bool:
    """Valid UTF-8 without NULs or stray control characters, judged on the first 64 KiB."""
    sample = data[:65536]
    for trim in range(4):  # the cut may split a multi-byte character
        try:
            text = sample[: len(sample) - trim].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        return False
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f")
    return "\x00" not in text and controls <= len(text) // 100


def decode_text(data: bytes) -> str:
    """The text of ``data``; :func:`citewell.parsers.encoding.decode` also names the encoding."""
    return decode(data)[0]
