"""Gzip-wrapped files: how a system installs its manual pages (``ls.1.gz``) and most package
documentation (``README.gz``, ``NEWS.gz``, ``changelog.Debian.gz``).

A gzip is known by its magic bytes like every binary type; the wrapper is taken off and what
it holds is sniffed and read as any file is, under the name without ``.gz``. What it holds is
held to the limit a file has (``CITEWELL_MAX_BYTES``), counted as it inflates: a few kilobytes
that inflate to gigabytes (a bomb) fail ``too_large`` before they fill memory. A gzip inside a
gzip and a tarball are refused, not unpacked.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import PurePosixPath

from citewell.errors import CorruptFile, TooLarge, TypeMismatch, UnsupportedType

MAGIC = b"\x1f\x8b"  # RFC 1952's ID1 and ID2, what filetype knows a gzip by
_TAR_MAGIC = b"ustar"  # at offset 257 in a POSIX or GNU tar header


def is_gzip(data: bytes) -> bool:
    return data[:2] == MAGIC


def inner_name(filename: str | None) -> str | None:
    """The name of what a gzip holds: ``ls.1.gz`` holds ``ls.1``; a name without ``.gz``
    (a ``README`` that is gzipped) is its content's name as it is."""
    if filename is None or PurePosixPath(filename).suffix.lower() != ".gz":
        return filename
    return filename[: -len(".gz")] or None


def gunzip(data: bytes, filename: str | None, max_bytes: int) -> tuple[bytes, str | None]:
    """What the gzip ``data`` holds, and its name. A name that promises another type
    (``notes.md``) is ``type_mismatch``, as for any binary content under a text type's name."""
    from citewell.parsers.sniff import named_kind

    if named_kind(filename) is not None:
        raise TypeMismatch(f"the name says {PurePosixPath(filename or '').suffix} but the content is application/gzip")
    inner = _inflate(data, max_bytes)
    if is_gzip(inner):
        raise UnsupportedType("the gzip file holds another gzip file; decompress it and ingest what it holds")
    if inner[257:262] == _TAR_MAGIC:
        raise UnsupportedType("the gzip file holds a tar archive; archives are not supported: unpack it and "
                              "ingest the folder")
    return inner, inner_name(filename)


def _inflate(data: bytes, max_bytes: int) -> bytes:
    """At most ``max_bytes`` inflated: one byte more says the content is over the limit."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            inner = stream.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError; a cut-off stream is EOFError
        raise CorruptFile(f"the gzip file could not be decompressed: {exc}") from exc
    if len(inner) > max_bytes:
        raise TooLarge(f"decompressed, the gzip file's content is over the limit of {max_bytes:,} bytes")
    return inner
