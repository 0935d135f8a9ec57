"""A web page's URL as its document id, and what a crawl's scope holds.

One page, one id: the fragment is dropped (it names a place in the page, not another page),
the query is kept (it may name another page), the scheme and host are lower-cased (the host
in its IDNA form), percent-encoded unreserved characters are decoded (``%2e`` is ``.``, RFC 3986
6.2.2.2) and the other escapes upper-cased, then dot segments go, and an empty path is ``/``.
Only ``http`` and ``https`` are URLs here, and none with credentials in it: they would be sent.

A scope is decided on the path as a server may read it, not as it is spelled: servers decode
escapes (some twice), take ``\\`` for ``/`` and drop ``;parameters`` from segments before they
resolve ``..``, so ``/docs/..%2fprivate/``, ``/docs/%252e%252e/private/`` and ``/docs/..;/private/``
all leave ``/docs/``.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

import httpx

from citewell.errors import UrlRefused

SCHEMES = {"http": 80, "https": 443}
# A host name's characters once in IDNA form (an underscore is seen in the wild), or an IPv6 literal.
_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?|[0-9a-f:.]*:[0-9a-f:.]*", re.I)


def looks_like_url(value: str) -> bool:
    """What the CLI takes as a URL rather than a path: anything with a scheme, so
    ``file://`` and ``ftp://`` are refused as URLs instead of read as missing files."""
    scheme, sep, _ = value.partition("://")
    return bool(sep) and scheme.isascii() and scheme.replace("+", "").replace("-", "").replace(".", "").isalnum()


def parse_url(raw: str) -> httpx.URL:
    """The URL, checked: http(s), a host, no userinfo. :class:`UrlRefused` otherwise."""
    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as error:
        raise UrlRefused(f"{raw!r} is not a URL: {error}") from None
    if url.scheme not in SCHEMES:
        raise UrlRefused(f"only http and https URLs are fetched, not {url.scheme or 'a URL without a scheme'}: {raw!r}")
    if not url.host:
        raise UrlRefused(f"{raw!r} names no host")
    if not _HOST.fullmatch(url.raw_host.decode("ascii", "replace")):
        raise UrlRefused(f"{raw!r} is not a URL: its host {url.host!r} is not a host name")
    if url.port is not None and not 0 < url.port < 65536:
        raise UrlRefused(f"{raw!r} is not a URL: port {url.port} is not between 1 and 65535")
    if url.userinfo:
        raise UrlRefused(f"{url.copy_with(username=None, password=None)}: a URL with a user name or password in it "
                         "is not fetched (credentials are never sent)")
    return url


def normalise(raw: str | httpx.URL) -> str:
    """The page's document id (see the module's rules)."""
    url = raw if isinstance(raw, httpx.URL) else parse_url(raw)
    host = url.raw_host.decode("ascii").lower()
    if ":" in host:
        host = f"[{host}]"
    port = "" if url.port in (None, SCHEMES[url.scheme]) else f":{url.port}"
    path, mark, query = url.raw_path.decode("ascii").partition("?")
    path = _without_dots(_ESCAPE.sub(_unescape_unreserved, path.replace("\\", "%5C"))) or "/"
    return f"{url.scheme}://{host}{port}{path}{mark}{query}"


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _unescape_unreserved(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else f"%{match.group(1).upper()}"


def _without_dots(path: str) -> str:
    """RFC 3986 5.2.4's remove_dot_segments, for a path beginning with ``/`` (or empty)."""
    kept: list[str] = []
    segments = path.split("/")[1:]
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if segment == "..":
            if kept:
                kept.pop()
            if last:
                kept.append("")
        elif segment == ".":
            if last:
                kept.append("")
        else:
            kept.append(segment)
    return "/" + "/".join(kept) if path else ""


def served_path(path: str) -> str:
    """The path as a lenient server resolves it: escapes decoded until none is left (a double
    encoding included), ``\\`` taken for ``/``, ``;parameters`` dropped from each segment, dot
    segments removed."""
    for _ in range(4):
        decoded = urllib.parse.unquote(path, errors="replace")
        if decoded == path:
            break
        path = decoded
    segments = [segment.split(";", 1)[0] for segment in path.replace("\\", "/").split("/")]
    return _without_dots("/".join(segments) if path.startswith("/") else "/" + "/".join(segments))


@dataclass(frozen=True)
class Scope:
    """A crawl's site: the root's scheme, host and port, and its path up to the last '/'
    (``https://h/docs/index.html`` covers ``https://h/docs/...``)."""

    prefix: str

    @classmethod
    def of(cls, root: str) -> Scope:
        page = normalise(root)
        origin_end = page.index("/", len("https://") if page.startswith("https") else len("http://"))
        path = page[origin_end:].split("?", 1)[0]
        return cls(page[:origin_end] + path[: path.rindex("/") + 1])

    def holds(self, page_id: str) -> bool:
        """Whether the page is the scope's as spelled and as a server would resolve its path."""
        if not page_id.startswith(self.prefix):
            return False
        origin = self.prefix.index("/", self.prefix.index("//") + 2)
        path = page_id[origin:].split("?", 1)[0]
        return served_path(path).startswith(served_path(self.prefix[origin:]))


def filename_of(page_id: str) -> str | None:
    """The last path segment, a hint among text types (``notes.md``), as a file's name is."""
    name = page_id.split("?", 1)[0].rsplit("/", 1)[-1]
    return name or None
