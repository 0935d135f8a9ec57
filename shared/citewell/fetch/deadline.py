"""A fetch's time limit on every socket operation, not only between reads.

httpx's timeouts are per operation: a server that sends its reply's headers one byte at a time,
each inside the read timeout, holds a fetch for as long as it likes (h11 reads up to 64 KiB of
headers). Here each connect, TLS handshake, read and write is given at most the time left before
the fetch's deadline, which :func:`until` sets for the calling thread, and none once it passed.
"""

from __future__ import annotations

import ssl
import time
import typing
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import httpcore
import httpx

_DEADLINE: ContextVar[float | None] = ContextVar("citewell_fetch_deadline", default=None)


@contextmanager
def until(deadline: float) -> Iterator[None]:
    """Socket operations of this thread's fetch end by ``deadline`` (time.monotonic)."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _left(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the fetch's time limit passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout), local_address,
                                               socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("a fetch connects over TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class Transport(httpx.HTTPTransport):
    """httpx's transport over :class:`_Backend`: the same pool, each socket operation bounded."""

    def __init__(self, verify: ssl.SSLContext, limits: httpx.Limits) -> None:
        super().__init__(verify=verify, trust_env=False, limits=limits)
        self._pool = httpcore.ConnectionPool(
            ssl_context=verify, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(),
        )


__all__ = ["Transport", "until"]
