"""Reading an upload form as it arrives: its fields, their check, and only then its file.

As on S3, the file is the form's last field. The fields before it carry the policy and its
signature, checked the moment the file's part begins: a body no form was signed for is
refused after its first few hundred bytes, instead of being read (and spooled to disk) whole
first. The file is kept in memory up to the size its policy grants, plus one byte to tell
that it is over (the rest of an oversized file is read, within the body's limit, and dropped);
whatever follows the file is ignored, as S3 ignores it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from citewell.errors import CitewellError

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

FILE_FIELD = "file"
MAX_FIELDS = 16  # before the file
MAX_FIELD_BYTES = 4096  # a field's value, or one part header


class MalformedForm(CitewellError):
    """The body is not a form this endpoint takes: 400."""

    code = "MalformedPOSTRequest"


class TooSlow(CitewellError):
    """The fields, or the whole form, did not arrive in time: 408."""

    code = "RequestTimeout"


class NoFile(CitewellError):
    """The form ended without its file: 400."""

    code = "InvalidArgument"


@dataclass(frozen=True)
class ReceivedFile:
    key: str
    max_bytes: int  # what the form's policy grants
    data: bytes  # at most max_bytes + 1: one byte more says the file is over its limit

    @property
    def too_large(self) -> bool:
        return len(self.data) > self.max_bytes


class _Form:
    """python-multipart's callbacks: fields collected until the file, checked when it begins."""

    def __init__(self, check: Callable[[dict[str, str]], tuple[str, int]]) -> None:
        self.check = check
        self.fields: dict[str, str] = {}
        self.granted: tuple[str, int] | None = None
        self.data = bytearray()
        self.done = False  # the file's part has ended: the rest is ignored
        self._header, self._header_value = bytearray(), bytearray()
        self._headers: dict[bytes, bytes] = {}
        self._name: str | None = None
        self._value = bytearray()
        self._in_file = False

    def callbacks(self) -> MultipartCallbacks:
        return {"on_part_begin": self.part_begin, "on_header_field": self.header_field, "on_header_value": self.header_value,
                "on_header_end": self.header_end, "on_headers_finished": self.headers_finished,
                "on_part_data": self.part_data, "on_part_end": self.part_end}

    def part_begin(self) -> None:
        self._headers, self._name, self._value = {}, None, bytearray()

    def header_field(self, data: bytes, start: int, end: int) -> None:
        if not self.done:
            self._grow(self._header, data[start:end])

    def header_value(self, data: bytes, start: int, end: int) -> None:
        if not self.done:
            self._grow(self._header_value, data[start:end])

    def header_end(self) -> None:
        self._headers[bytes(self._header).strip().lower()] = bytes(self._header_value).strip()
        self._header, self._header_value = bytearray(), bytearray()

    def headers_finished(self) -> None:
        if self.done:
            return
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        if b"name" not in options:
            raise MalformedForm("each part of the form needs a Content-Disposition with a name")
        self._name = options[b"name"].decode("utf-8", "replace")
        if self._name == FILE_FIELD:
            self.granted = self.check(self.fields)  # FormRefused: not one byte of the file is kept
            self._in_file = True
        elif b"filename" in options:
            raise MalformedForm(f"the form takes one file, as the field {FILE_FIELD!r}, after the others")
        elif len(self.fields) >= MAX_FIELDS:
            raise MalformedForm(f"the form has more than {MAX_FIELDS} fields before its file")

    def part_data(self, data: bytes, start: int, end: int) -> None:
        if self.done:
            return
        if self._in_file:
            assert self.granted is not None
            room = self.granted[1] + 1 - len(self.data)  # the rest is read (within the body's limit) but not kept
            if room > 0:
                self.data += data[start:min(end, start + room)]
        else:
            self._grow(self._value, data[start:end])

    def part_end(self) -> None:
        if self.done:
            return
        if self._in_file:
            self.done = True
        elif self._name is not None:
            self.fields[self._name] = self._value.decode("utf-8", "replace")

    @staticmethod
    def _grow(buffer: bytearray, data: bytes) -> None:
        if len(buffer) + len(data) > MAX_FIELD_BYTES:
            raise MalformedForm(f"a field or part header of the form is over {MAX_FIELD_BYTES:,} bytes")
        buffer += data


async def read_form(content_type: str, chunks: AsyncIterator[bytes], check: Callable[[dict[str, str]], tuple[str, int]],
                    *, fields_seconds: float, upload_seconds: float) -> ReceivedFile:
    """The file of a ``multipart/form-data`` body whose fields ``check`` accepts (it returns the
    key and size limit their policy grants, or raises); the body is read no further than needed.
    The fields must arrive within ``fields_seconds``: only a signed form has ``upload_seconds``
    (from the start) for its file, so a sender of no form holds its connection no longer than
    one that trickles its headers."""
    kind, options = parse_options_header(content_type)
    if kind != b"multipart/form-data":
        raise NoFile("the form has no file: send the fields and then the file as multipart/form-data, "
                     f"the file as {FILE_FIELD!r}")
    if not options.get(b"boundary"):
        raise MalformedForm("the body is not a multipart form: its Content-Type has no boundary")
    form = _Form(check)
    parser = MultipartParser(options[b"boundary"], form.callbacks())
    started = anyio.current_time()
    try:
        with anyio.fail_after(fields_seconds) as deadline:
            async for chunk in chunks:
                parser.write(chunk)
                if form.granted is not None:
                    deadline.deadline = started + upload_seconds
                if form.done:
                    break
            else:
                parser.finalize()
    except FormParserError as bad:
        raise MalformedForm(f"the body is not a multipart form: {bad}") from None
    except TimeoutError:
        if form.granted is None:
            raise TooSlow(f"the form's fields did not arrive within {fields_seconds:.0f} seconds") from None
        raise TooSlow(f"the upload did not arrive within {upload_seconds:.0f} seconds") from None
    if form.granted is None:
        raise NoFile(f"the form has no file: send it as the field {FILE_FIELD!r}, after the others")
    if not form.done:
        raise MalformedForm("the body is not a multipart form: it ended inside the file")
    return ReceivedFile(key=form.granted[0], max_bytes=form.granted[1], data=bytes(form.data))
