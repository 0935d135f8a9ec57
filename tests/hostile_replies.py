"""A loopback server that answers with whatever bytes a test scripts, as a hostile site would:
encodings stacked on encodings, bombs, bodies that never end or trickle, headers without end,
lengths that lie. Each path's reply is a function writing to the raw socket."""

from __future__ import annotations

import gzip
import socket
import socketserver
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Reply = Callable[[socket.socket], None]


def head(status: str = "200 OK", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in (headers or {}).items()), "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


def encode(data: bytes, coding: str) -> bytes:
    """``data`` in one coding; ``deflate-raw`` is a raw deflate stream sent as ``deflate``."""
    if coding in ("gzip", "x-gzip"):
        return gzip.compress(data, 9)
    if coding == "deflate":
        return zlib.compress(data, 9)
    if coding == "deflate-raw":
        packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()
    return data  # a coding nobody decodes here (br, zstd, compress): the bytes go as they are


def zeros_gzip(size: int) -> bytes:
    """``size`` zero bytes, gzipped, without holding them: a bomb's inner layer."""
    packer, block = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16), b"\0" * (1 << 20)
    out = bytearray()
    for _ in range(size >> 20):
        out += packer.compress(block)
    return bytes(out + packer.compress(b"\0" * (size & ((1 << 20) - 1))) + packer.flush())


def fixed(body: bytes, headers: dict[str, str] | None = None, status: str = "200 OK") -> Reply:
    def send(conn: socket.socket) -> None:
        conn.sendall(head(status, {"Content-Length": str(len(body)), **(headers or {})}) + body)
    return send


def endless(piece: bytes, headers: dict[str, str] | None = None, most: float = 20.0, first: bytes = b"") -> Reply:
    """A chunked body that never ends (until the client hangs up, or ``most`` seconds): ``first``,
    then ``piece`` again and again."""
    def send(conn: socket.socket) -> None:
        conn.sendall(head("200 OK", {"Transfer-Encoding": "chunked", **(headers or {})}))
        if first:
            conn.sendall(f"{len(first):x}\r\n".encode() + first + b"\r\n")
        chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        ends = time.monotonic() + most
        while time.monotonic() < ends:
            conn.sendall(chunk)
    return send


def trickle(body: bytes, every: float) -> Reply:
    """A declared length, then a byte every ``every`` seconds."""
    def send(conn: socket.socket) -> None:
        conn.sendall(head("200 OK", {"Content-Length": str(len(body))}))
        for byte in body:
            conn.sendall(bytes([byte]))
            time.sleep(every)
    return send


def endless_gzip() -> Reply:
    """A gzip stream that never ends: its header, then the same flushed block of a MiB of zeros
    again and again (a full flush makes each block stand alone)."""
    packer, block = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16), b"\0" * (1 << 20)
    first = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    piece = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    return endless(piece, {"Content-Encoding": "gzip"}, first=first)


def many_headers(count: int) -> Reply:
    def send(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        for n in range(count):
            conn.sendall(f"X-Filler-{n}: {'v' * 200}\r\n".encode())
        conn.sendall(b"Content-Length: 2\r\n\r\nok")
    return send


def short(body: bytes, declared: int) -> Reply:
    """Declares more than it sends, then hangs up."""
    def send(conn: socket.socket) -> None:
        conn.sendall(head("200 OK", {"Content-Length": str(declared)}) + body)
    return send


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        self.request.settimeout(30)
        seen = b""
        while b"\r\n\r\n" not in seen and len(seen) < 65536:
            got = self.request.recv(4096)
            if not got:
                return
            seen += got
        path = seen.split(b" ", 2)[1].decode("latin-1") if seen.count(b" ") >= 2 else "/"
        reply = self.server.replies.get(path, fixed(b"", status="404 Not Found"))
        try:
            reply(self.request)
        except OSError:  # the client hung up: as it should on a reply it will not read
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    replies: dict[str, Reply]


@contextmanager
def hostile(replies: dict[str, Reply]) -> Iterator[str]:
    """The server on 127.0.0.1 until the block ends; yields its base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.replies = replies
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
