"""opensearch-py connections whose every request, retries included, ends by the request's deadline.

opensearch-py takes a per-request ``request_timeout`` (the transport's ``timeout``), but its
transport sends each retry (a refused connection, a 502/503/504) with that same timeout, and a
caller cannot see the retries. The connection is where each attempt is made, so it is bounded
there: an attempt, connect and read together (urllib3's ``total``), takes at most what the request
has left (:func:`citewell.deadline.store_time`: the search is what the answer is made from, so the
reserve is not kept from it), and one with too little left is not made (TimeoutError, which the
transport does not retry). Outside a request an attempt has the client's own timeout.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from opensearchpy import RequestsHttpConnection, Urllib3HttpConnection
from urllib3 import Timeout

from citewell.deadline import current, store_time


def _within(timeout: float | None, own: float) -> Any:
    """An attempt's timeout: what the request has left, at most the call's own (or the client's),
    for connect and read together; both connections hand a urllib3 Timeout on as it is."""
    if current() is None:
        return timeout
    return Timeout(total=store_time(float(timeout or own)))


class BoundedUrllib3Connection(Urllib3HttpConnection):
    """opensearch-py's default connection (a domain reached by URL), each attempt within the deadline."""

    def perform_request(self, method: str, url: str, params: Mapping[str, Any] | None = None, body: bytes | None = None,
                        timeout: float | None = None, ignore: Collection[int] = (),
                        headers: Mapping[str, str] | None = None) -> Any:
        return super().perform_request(method, url, params, body, _within(timeout, self.timeout), ignore, headers)


class BoundedRequestsConnection(RequestsHttpConnection):
    """The SigV4-signing connection to a domain, each attempt within the deadline."""

    def perform_request(  # type: ignore[override]  # as RequestsHttpConnection's own (allow_redirects)
        self, method: str, url: str, params: Mapping[str, Any] | None = None, body: bytes | None = None,
        timeout: float | None = None, allow_redirects: bool | None = True, ignore: Collection[int] = (),
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        return super().perform_request(method, url, params, body, _within(timeout, self.timeout), allow_redirects, ignore,
                                       headers)
