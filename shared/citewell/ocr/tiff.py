"""A multi-page TIFF as single-page TIFFs, without decoding an image.

Amazon Textract's synchronous DetectDocumentText reads single-page documents only, and the
Lambda layer has no image library. A TIFF's pages are a chain of image file directories (IFDs),
each naming where its own strips lie by absolute offset. So page ``k`` alone is the same bytes
with the header pointing at IFD ``k`` and that IFD's link to the next one cleared: a valid TIFF
whose other pages are bytes nothing refers to. Classic TIFF (4-byte offsets) and BigTIFF
(8-byte) in either byte order; a chain that loops or points outside the file is ``corrupt_file``.

The same walk is how both engines count a TIFF's pages and pixels before any is decoded
(:class:`~citewell.ocr.ScanLimits`): it stops one page past the limit, so a chain of millions of
directories costs no more to refuse than a short one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from citewell.errors import CorruptFile
from citewell.ocr import ScanLimits

_WIDTH, _LENGTH = 256, 257  # ImageWidth and ImageLength, the tags a page's size is declared in
_INLINE = {3: 2, 4: 4, 16: 8}  # SHORT, LONG, LONG8: the types a size is written in, and their bytes


@dataclass(frozen=True)
class _Layout:
    order: Literal["little", "big"]
    first_at: int  # where the header keeps the first IFD's offset
    offset_size: int  # 4, or 8 in a BigTIFF
    count_size: int  # an IFD's entry count: 2, or 8 in a BigTIFF
    entry_size: int  # 12, or 20 in a BigTIFF


def is_tiff(data: bytes) -> bool:
    return data[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")


def _layout(data: bytes) -> _Layout:
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return _Layout("little" if data[:2] == b"II" else "big", 4, 4, 2, 12)
    if data[:4] in (b"II+\x00", b"MM\x00+"):
        return _Layout("little" if data[:2] == b"II" else "big", 8, 8, 8, 20)
    raise CorruptFile("the file is not a TIFF")


def _number(data: bytes, at: int, size: int, order: Literal["little", "big"]) -> int:
    if at < 0 or at + size > len(data):
        raise CorruptFile(f"the TIFF points outside itself (offset {at:,} of {len(data):,} bytes)")
    return int.from_bytes(data[at:at + size], order)


@dataclass(frozen=True)
class _Directory:
    at: int  # where the page's IFD starts
    link: int  # where its link to the next IFD is kept
    pixels: int  # its declared width times height


def _pixels(data: bytes, at: int, entries: int, layout: _Layout, page: int) -> int:
    """A page's width times height, from its IFD's entries (no strip is read)."""
    start = at + layout.count_size
    _number(data, start + entries * layout.entry_size - 1, 1, layout.order)  # the entries lie inside the file
    form = ("<" if layout.order == "little" else ">") + ("HHI4s" if layout.offset_size == 4 else "HHQ8s")
    size: dict[int, int] = {}
    for tag, kind, count, value in struct.iter_unpack(form, memoryview(data)[start:start + entries * layout.entry_size]):
        if tag in (_WIDTH, _LENGTH) and kind in _INLINE and count == 1:
            size[tag] = int.from_bytes(value[:_INLINE[kind]], layout.order)
            if len(size) == 2:
                return size[_WIDTH] * size[_LENGTH]
    raise CorruptFile(f"page {page} of the TIFF declares no width and height")


def _directories(data: bytes, layout: _Layout, limits: ScanLimits) -> list[_Directory]:
    """Each page's IFD, where its link to the next IFD is kept, and its pixels; the walk stops
    one page past ``limits.pages``, and the pixels are held to ``limits.pixels``."""
    found: list[_Directory] = []
    seen: set[int] = set()
    at = _number(data, layout.first_at, layout.offset_size, layout.order)
    while at:
        if at in seen:
            raise CorruptFile("the TIFF's pages loop back on themselves")
        limits.check_pages(len(found) + 1, at_least=True)
        seen.add(at)
        entries = _number(data, at, layout.count_size, layout.order)
        link = at + layout.count_size + entries * layout.entry_size
        found.append(_Directory(at, link, _pixels(data, at, entries, layout, len(found) + 1)))
        at = _number(data, link, layout.offset_size, layout.order)
    if not found:
        raise CorruptFile("the TIFF holds no page")
    limits.check_pixels(sum(d.pixels for d in found), len(found))
    return found


class SinglePages:
    """One TIFF per page, in order, each made as it is iterated (a copy of the file a page: held
    all at once, a long scan would take its size times its pages); a one-page TIFF is itself.
    The chain is checked whole on construction, and held to ``limits``, before any page is sent
    anywhere or decoded."""

    def __init__(self, data: bytes, limits: ScanLimits) -> None:
        self.data = data
        self.layout = _layout(data)
        self.directories = _directories(data, self.layout, limits)

    def __len__(self) -> int:
        return len(self.directories)

    def __iter__(self) -> Iterator[bytes]:
        if len(self.directories) == 1:
            yield self.data
            return
        size, order = self.layout.offset_size, self.layout.order
        for directory in self.directories:
            at, link = directory.at, directory.link
            page = bytearray(self.data)
            page[self.layout.first_at:self.layout.first_at + size] = at.to_bytes(size, order)
            page[link:link + size] = bytes(size)
            yield bytes(page)


def single_pages(data: bytes, limits: ScanLimits) -> SinglePages:
    """``data``'s pages as single-page TIFFs; :class:`CorruptFile` for a broken chain,
    :class:`~citewell.errors.TooLarge` for one past ``limits``."""
    return SinglePages(data, limits)


__all__ = ["SinglePages", "is_tiff", "single_pages"]
