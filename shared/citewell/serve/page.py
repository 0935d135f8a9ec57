"""The web page as served: ``web/index.html`` made ready to paint at once, and the files it names.

- The stylesheet is inlined into the page, so no request holds back its first paint; the page's
  Content-Security-Policy names it, and any inline script, by its SHA-256 (nothing else inline runs).
- With ``--demo`` the demo's identities are buttons in the page itself (their tokens come from
  ``/demo/identities`` when the script runs), and with an OpenID Connect issuer its sign-in panel
  is shown with the issuer's host, so nothing is inserted above the sign-in form later.
- Each file the page names is named with its content's hash (``/static/app.js?v=…``): fetched
  under that name it is cached for a year, since a changed file gets a new name.
- Every file is kept in memory with its gzip form and an ETag (a conditional request gets 304),
  and read again when a file in the folder changes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from citewell.serve.compression import accepts_gzip, compressible, gzipped

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8", ".json": "application/json", ".svg": "image/svg+xml",
    ".png": "image/png", ".jpg": "image/jpeg", ".ico": "image/x-icon", ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}
STYLESHEET = '<link rel="stylesheet" href="/static/app.css">'
DEMO_PANEL = '<div id="demo" class="panel" hidden>'
DEMO_ITEMS = "<!--demo-identities-->"
OIDC_PANEL = '<div id="oidc" class="panel" hidden>'
OIDC_ISSUER = '<span id="oidc-issuer"></span>'
REFUSAL_WORD = 'data-refusal-word=""'
FOREVER = "public, max-age=31536000, immutable"
_NAMED = re.compile(r'(?P<lead>(?:src|href)=")/static/(?P<name>[A-Za-z0-9][A-Za-z0-9._/-]*)(?=")')
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)
_INLINE_STYLE = re.compile(r"<style>(.*?)</style>", re.S)


class PageError(RuntimeError):
    """``web/index.html`` lacks a piece the server fills in: the page and this module disagree."""


@dataclass(frozen=True)
class Asset:
    """One file as served: its bytes, their gzip form (None where gzip does not pay), its type,
    a weak ETag (both forms are the same content) and the short hash its name carries."""

    body: bytes
    zipped: bytes | None
    content_type: str
    etag: str
    version: str

    @classmethod
    def of(cls, body: bytes, content_type: str) -> Asset:
        digest = hashlib.sha256(body).hexdigest()
        zipped = gzipped(body) if compressible(content_type.encode()) else None
        return cls(body, zipped if zipped is not None and len(zipped) < len(body) else None, content_type,
                   f'W/"{digest[:32]}"', digest[:12])

    def reply(self, accept_encoding: str, if_none_match: str, cache: str) -> tuple[int, bytes, dict[str, str]]:
        """Status, body and headers for a request with these headers."""
        headers = {"Content-Type": self.content_type, "ETag": self.etag, "Cache-Control": cache}
        if self.zipped is not None:
            headers["Vary"] = "Accept-Encoding"
        if self.etag in {tag.strip() for tag in if_none_match.split(",")} or if_none_match.strip() == "*":
            return 304, b"", headers
        if self.zipped is not None and accepts_gzip(accept_encoding):
            return 200, self.zipped, {**headers, "Content-Encoding": "gzip"}
        return 200, self.body, headers


@dataclass(frozen=True)
class Built:
    stamp: tuple[tuple[str, int, int], ...]
    index: Asset
    csp: str  # the page's own policy: CSP with its inline style and scripts named by hash
    files: dict[str, Asset] = field(default_factory=dict)  # by name under the folder


def _hash_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def demo_items(identities: list[tuple[str, str, list[str]]]) -> str:
    """The demo's identities as the page's buttons, in the order ``/demo/identities`` lists them."""
    items = []
    for index, (label, tenant, roles) in enumerate(identities):
        detail = f"{tenant} · {', '.join(roles) or 'no roles'}"
        items.append(f'<li><button type="button" class="identity" data-tenant="{html.escape(tenant)}" data-index="{index}">'
                     f'<span class="identity-label">{html.escape(label or tenant)}</span>'
                     f'<span class="identity-detail">{html.escape(detail)}</span></button></li>')
    return "".join(items)


class WebPage:
    """The page and its files from ``folder``, built once and again when a file there changes."""

    def __init__(self, folder: Path, *, identities: list[tuple[str, str, list[str]]] | None = None,
                 refusal_word: str = "", policy: str = CSP, sign_in_at: str | None = None) -> None:
        """``policy``: the Content-Security-Policy the page's inline pieces are added to;
        ``sign_in_at``: the host of the OpenID Connect issuer the page signs in at, if any."""
        self.folder = folder.resolve()
        self.identities = identities
        self.sign_in_at = sign_in_at
        self.refusal_word = refusal_word
        self.policy = policy
        self._built: Built | None = None
        self._lock = threading.Lock()

    def _stamp(self) -> tuple[tuple[str, int, int], ...]:
        found = []
        for path in sorted(self.folder.rglob("*")):
            if path.is_file():
                stat = path.stat()
                found.append((path.relative_to(self.folder).as_posix(), stat.st_mtime_ns, stat.st_size))
        return tuple(found)

    def built(self) -> Built:
        stamp = self._stamp()
        built = self._built
        if built is None or built.stamp != stamp:
            with self._lock:
                built = self._built = self._build(stamp)
        return built

    def _build(self, stamp: tuple[tuple[str, int, int], ...]) -> Built:
        files: dict[str, Asset] = {}
        for name, _, _ in stamp:
            suffix = Path(name).suffix
            if suffix in CONTENT_TYPES and not any(part.startswith(".") for part in name.split("/")):
                files[name] = Asset.of((self.folder / name).read_bytes(), CONTENT_TYPES[suffix])
        if "index.html" not in files or "app.css" not in files:
            raise PageError(f"{self.folder} lacks index.html or app.css")
        page = files["index.html"].body.decode("utf-8")
        css = files["app.css"].body.decode("utf-8")
        page = self._fill(page, STYLESHEET, f"<style>\n{css}</style>")
        if self.identities:
            page = self._fill(page, DEMO_PANEL, DEMO_PANEL.replace(" hidden", ""))
            page = self._fill(page, DEMO_ITEMS, demo_items(self.identities))
        if self.sign_in_at:
            page = self._fill(page, OIDC_PANEL, OIDC_PANEL.replace(" hidden", ""))
            page = self._fill(page, OIDC_ISSUER, OIDC_ISSUER.replace("></", f">{html.escape(self.sign_in_at)}</"))
        page = self._fill(page, REFUSAL_WORD, f'data-refusal-word="{html.escape(self.refusal_word)}"')

        def versioned(match: re.Match[str]) -> str:
            name = match["name"]
            asset = files.get(name)
            return f"{match['lead']}/static/{name}?v={asset.version}" if asset else match[0]

        page = _NAMED.sub(versioned, page)
        scripts = [_hash_source(s) for s in _INLINE_SCRIPT.findall(page)]
        styles = [_hash_source(s) for s in _INLINE_STYLE.findall(page)]
        csp = self.policy.replace("script-src 'self'", " ".join(["script-src 'self'", *scripts]))
        csp = csp.replace("style-src 'self'", " ".join(["style-src 'self'", *styles]))
        return Built(stamp, Asset.of(page.encode("utf-8"), CONTENT_TYPES[".html"]), csp, files)

    @staticmethod
    def _fill(page: str, marker: str, text: str) -> str:
        if page.count(marker) != 1:
            raise PageError(f"web/index.html must hold {marker!r} once, to be filled in as it is served")
        return page.replace(marker, text)

    def index(self, accept_encoding: str, if_none_match: str) -> tuple[int, bytes, dict[str, str]]:
        built = self.built()
        status, body, headers = built.index.reply(accept_encoding, if_none_match, "no-cache")
        return status, body, {**headers, "Content-Security-Policy": built.csp}

    def file(self, name: str, version: str | None, accept_encoding: str,
             if_none_match: str) -> tuple[int, bytes, dict[str, str]] | None:
        """A file of the folder (None: no such file); kept for a year when named by its current hash."""
        asset = self.built().files.get(name)
        if asset is None:
            return None
        return asset.reply(accept_encoding, if_none_match, FOREVER if version == asset.version else "no-cache")


__all__ = ["CONTENT_TYPES", "CSP", "Asset", "PageError", "WebPage", "demo_items"]
