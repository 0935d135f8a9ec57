"""Decode text bytes and name the encoding used.

Order: a byte-order mark, then UTF-16 without one (known by the zero bytes its mostly
Latin-script characters leave at every other position: strict UTF-8 would take them as NULs),
then strict UTF-8, then Windows-1252 when its reading looks like
Latin-script prose, then a charset detector. Detectors are unsure on short or mostly-ASCII
Western files (they offered cp1250, cp437 or even UTF-16 for "crème" and "€5"); among
readings that are equally good, the encoding most text in that script uses wins.
"""

from __future__ import annotations

import codecs
import unicodedata

from charset_normalizer import from_bytes

from citewell.errors import UndecodableText

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

# Legacy encodings by how much text uses them, the most-used of each script first
# (Western, Chinese, Japanese, Korean, Cyrillic, Central European, Arabic, Greek, Turkish,
# Hebrew, Thai, Baltic, Vietnamese). UTF-16 without a byte-order mark is rare: last.
PREFERENCE = (
    "cp1252", "gb18030", "cp932", "shift_jis", "euc_jp", "cp949", "euc_kr", "big5", "cp1251", "koi8_r",
    "cp1250", "iso8859_2", "cp1256", "cp1253", "cp1254", "cp1255", "cp874", "cp1257", "cp1258", "koi8_u",
    "cp866", "iso8859_15", "mac_roman", "iso2022_jp",
)
_CHAOS_TIE = 0.02  # detector scores closer than this are the same guess
# Punctuation that sits between letters in Western text; any other symbol there (¹ ³ ¿ ‚)
# means the bytes were letters of another code page.
_INWORD = set("’‘'-–—·\u00ad")
_DROP_ASCII_LETTERS = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def decode(data: bytes) -> tuple[str, str]:
    """``(text, encoding)``; :class:`UndecodableText` when no encoding reads as text."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return data.decode(name), "utf-8" if name == "utf-8-sig" else name
    unmarked = unmarked_utf16(data)
    if unmarked is not None:
        return data.decode(unmarked), unmarked
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        western = data.decode("cp1252")
    except UnicodeDecodeError:
        western = None  # one of the five bytes cp1252 leaves undefined
    if western is not None and reads_as_latin(western):
        return western, "cp1252"
    return _detect(data)


_UTF16_SAMPLE = 8192
_UTF16_ZEROS = 0.3  # of the code units: the share whose high byte is zero (ASCII, Latin-1)


def unmarked_utf16(data: bytes) -> str | None:
    """``utf-16-le`` or ``utf-16-be`` when ``data`` reads as UTF-16 without a byte-order mark:
    zero bytes at one parity of the positions and (almost) none at the other, and the whole
    decodes strictly. Text in other scripts leaves no such zeros and goes to the detector."""
    if len(data) < 4 or len(data) % 2:
        return None
    sample = data[:_UTF16_SAMPLE]
    units = len(sample) // 2
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    for name, high, low in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        if high >= _UTF16_ZEROS * units and low * 20 <= high:
            try:
                text = data.decode(name)
            except UnicodeDecodeError:
                return None
            return name if "\x00" not in text else None
    return None


def reads_as_latin(text: str) -> bool:
    """Whether non-ASCII characters sit in the text as they do in Western prose: accented
    letters inside mostly-ASCII words, and symbols (€, curly quotes, dashes) between words.
    Cyrillic, Greek, Arabic or CJK bytes read as cp1252 give whole words of accented letters
    or symbols wedged between letters."""
    ascii_letters = len(text) - len(text.translate(_DROP_ASCII_LETTERS))  # C speed on large files
    foreign_letters = misplaced = foreign = foreign_words = accented_words = 0
    for word in text.split():
        if word.isascii():
            continue
        word_ascii = word_foreign = 0
        for i, ch in enumerate(word):
            if ch.isascii():
                word_ascii += ch.isalpha()
                continue
            foreign += 1
            if ch.isalpha():
                word_foreign += 1
            elif unicodedata.category(ch) != "Zs" and ch not in _INWORD:
                before, after = word[i - 1 : i], word[i + 1 : i + 2]
                misplaced += before.isalpha() and after.isalpha()
        foreign_letters += word_foreign
        if word_foreign:
            accented_words += 1
            foreign_words += word_ascii == 0 and word_foreign >= 3
    if not foreign:
        return True
    if foreign_letters > 0.3 * (ascii_letters + foreign_letters):
        return False
    if accented_words >= 2 and foreign_words * 3 > accented_words:
        return False
    return misplaced * 20 <= foreign


def _rank(names: list[str]) -> int:
    return min((PREFERENCE.index(n) for n in names if n in PREFERENCE), default=len(PREFERENCE))


def _detect(data: bytes) -> tuple[str, str]:
    matches = list(from_bytes(data))
    if not matches:
        raise UndecodableText("the text encoding could not be determined")
    best = min(m.chaos for m in matches)
    close = [m for m in matches if m.chaos <= best + _CHAOS_TIE]
    chosen = min(close, key=lambda m: (_rank(m.could_be_from_charset), matches.index(m)))
    names = [n for n in chosen.could_be_from_charset if n in PREFERENCE]
    if names:  # the same text under the name most files of this script carry
        name = min(names, key=PREFERENCE.index)
        try:
            return data.decode(name), name
        except UnicodeDecodeError:
            pass
    return str(chosen), chosen.encoding
