"""A multi-page TIFF as single-page TIFFs, without decoding an image.

Amazon Textract's synchronous DetectDocumentText reads single-page documents only, and the
Lambda layer has no image library. A TIFF's pages are a chain of image file directories (IFDs),
each naming where its own strips lie by absolute offset. So page ``k`` alone is the same bytes
with the header pointing at IFD ``k`` and that IFD's link to the next one cleared: a valid TIFF
whose other pages are bytes nothing refers to. Classic TIFF (4-byte offsets) and BigTIFF
(8-byte) in either byte order; a chain that loops or points outside the file is ``corrupt_file``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from citewell.errors import CorruptFile

MAX_PAGES = 10_000  # a chain longer than this is taken for a broken file, not a scan


@dataclass(frozen=True)
class _Layout:
    order: str  # "little" or "big"
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


def _number(data: bytes, at: int, size: int, order: str) -> int:
    if at < 0 or at + size > len(data):
        raise CorruptFile(f"the TIFF points outside itself (offset {at:,} of {len(data):,} bytes)")
    return int.from_bytes(data[at:at + size], order)  # type: ignore[arg-type]


def _directories(data: bytes, layout: _Layout) -> list[tuple[int, int]]:
    """Each page's IFD offset and where its link to the next IFD is kept."""
    found: list[tuple[int, int]] = []
    seen: set[int] = set()
    at = _number(data, layout.first_at, layout.offset_size, layout.order)
    while at:
        if at in seen or len(found) >= MAX_PAGES:
            raise CorruptFile("the TIFF's pages loop back on themselves" if at in seen
                              else f"the TIFF holds more than {MAX_PAGES:,} pages")
        seen.add(at)
        entries = _number(data, at, layout.count_size, layout.order)
        link = at + layout.count_size + entries * layout.entry_size
        found.append((at, link))
        at = _number(data, link, layout.offset_size, layout.order)
    if not found:
        raise CorruptFile("the TIFF holds no page")
    return found


class SinglePages:
    """One TIFF per page, in order, each made as it is iterated (a copy of the file a page: held
    all at once, a long scan would take its size times its pages); a one-page TIFF is itself.
    The chain is checked whole on construction, before any page is sent anywhere."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.layout = _layout(data)
        self.directories = _directories(data, self.layout)

    def __len__(self) -> int:
        return len(self.directories)

    def __iter__(self) -> Iterator[bytes]:
        if len(self.directories) == 1:
            yield self.data
            return
        size, order = self.layout.offset_size, self.layout.order
        for at, link in self.directories:
            page = bytearray(self.data)
            page[self.layout.first_at:self.layout.first_at + size] = at.to_bytes(size, order)  # type: ignore[arg-type]
            page[link:link + size] = bytes(size)
            yield bytes(page)


def single_pages(data: bytes) -> SinglePages:
    """``data``'s pages as single-page TIFFs; :class:`CorruptFile` for a broken chain."""
    return SinglePages(data)


__all__ = ["MAX_PAGES", "SinglePages", "is_tiff", "single_pages"]
