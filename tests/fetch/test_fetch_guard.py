"""The fetcher as an attacker meets it: every URL that would reach this machine or its network
is refused before a byte is sent, unless the operator's allow-list names it; limits hold."""

from __future__ import annotations

import time

import pytest

from benchmarks.loopback_site import Site, page, serving
from citewell.errors import FetchFailed, HttpStatus, TooLarge, UrlRefused
from citewell.fetch.client import Fetcher
from citewell.fetch.guard import Guard
from citewell.fetch.urls import Scope, looks_like_url, normalise
from citewell.settings import allow_entry

LOOPBACK = ["127.0.0.1/32"]


def redirect(to: str, status: int = 302):
    def answer(handler) -> None:
        handler.send_response(status)
        handler.send_header("Location", to)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    return answer


@pytest.fixture
def site():
    with serving(Site(pages={"/": page("Home", "Welcome to the site.")})) as running:
        yield running


def test_loopback_is_refused_without_the_allow_list_and_nothing_is_sent(site):
    with Fetcher(Guard.of([])) as fetcher, pytest.raises(UrlRefused, match="loopback"):
        fetcher.fetch(site.url + "/")
    assert site.requests == []
    with Fetcher(Guard.of(LOOPBACK)) as fetcher:
        assert b"Welcome" in fetcher.fetch(site.url + "/").data


@pytest.mark.parametrize("url, why", [
    ("http://10.1.2.3/", "private"),
    ("http://192.168.0.10:8080/x", "private"),
    ("http://172.16.5.5/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://100.64.0.1/", "not public"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://[::1]/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:169.254.169.254]/", "link-local"),
    ("http://[2002:a00:1::]/", "private"),  # 6to4 around 10.0.0.1
    ("http://[64:ff9b::a00:1]/", "private"),  # NAT64 around 10.0.0.1
    ("http://[fd00::1]/", "private"),
    ("http://2130706433/", "loopback"),  # 127.0.0.1 as one number
    ("http://0x7f.1/", "loopback"),
])
def test_addresses_of_this_machine_and_its_networks_are_refused(url, why):
    def resolver(host: str, port: int) -> list[str]:
        raise AssertionError(f"{host} was resolved: an address literal needs no resolver")

    guard = Guard.of([], resolver=resolver) if "0x7f" not in url and "2130706433" not in url else Guard.of([])
    with Fetcher(guard, seconds=2) as fetcher, pytest.raises(UrlRefused, match=why):
        fetcher.fetch(url)


def test_a_name_that_resolves_to_a_private_address_is_refused_even_beside_a_public_one():
    answers = {"intranet.example.com": ["10.0.0.7"], "mixed.example.com": ["93.184.215.14", "192.168.1.1"]}
    guard = Guard.of([], resolver=lambda host, port: answers[host])
    with Fetcher(guard) as fetcher:
        with pytest.raises(UrlRefused, match="intranet.example.com resolves to 10.0.0.7"):
            fetcher.fetch("http://intranet.example.com/")
        with pytest.raises(UrlRefused, match="192.168.1.1"):
            fetcher.fetch("https://mixed.example.com/")


@pytest.mark.parametrize("url, why", [
    ("file:///etc/passwd", "only http and https"),
    ("ftp://example.com/file.txt", "only http and https"),
    ("gopher://example.com/", "only http and https"),
    ("http://user:secret@example.com/", "user name or password"),
    ("http://user@example.com/", "user name or password"),
    ("http:///nohost", "host"),
    ("http://example.com:99999/", "port 99999"),
    ("http://example.com:0/", "port 0"),
    ("http://%00/", "not a host name"),
    ("http://a b/", "not a host name"),
])
def test_other_schemes_and_credentials_in_the_url_are_refused(url, why):
    with Fetcher(Guard.of([])) as fetcher, pytest.raises(UrlRefused, match=why):
        fetcher.fetch(url)


def test_credentials_are_refused_on_an_allowed_host_too_and_nothing_is_sent(site):
    with Fetcher(Guard.of(LOOPBACK)) as fetcher, pytest.raises(UrlRefused):
        fetcher.fetch(f"http://admin:pw@127.0.0.1:{site.port}/")
    assert site.requests == []


@pytest.mark.parametrize("target", ["http://10.0.0.5/admin", "http://169.254.169.254/latest/meta-data/",
                                    "file:///etc/passwd", "http://[::ffff:10.0.0.5]/"])
def test_a_redirect_to_a_refused_address_is_refused(site, target):
    site.routes["/go"] = redirect(target)
    with Fetcher(Guard.of(LOOPBACK)) as fetcher, pytest.raises(UrlRefused):
        fetcher.fetch(site.url + "/go")
    assert [path for path, _ in site.requests] == ["/go"]


def test_a_redirect_to_a_name_resolving_to_loopback_is_refused_when_only_the_address_range_of_another_is_allowed(site):
    site.routes["/go"] = redirect(f"http://internal.example.com:{site.port}/")
    guard = Guard.of(["127.0.0.2/32"], resolver=lambda host, port: ["127.0.0.1"])
    site.routes["/start"] = redirect("/go")
    with Fetcher(guard) as fetcher, pytest.raises(UrlRefused, match="loopback"):
        fetcher.fetch(site.url + "/start")  # the first hop itself is refused: 127.0.0.1 is not 127.0.0.2
    assert site.requests == []


def test_redirects_are_followed_within_the_limit_and_too_many_fail(site):
    site.routes["/a"] = redirect("/b", 301)
    site.routes["/b"] = redirect(f"{site.url}/", 308)
    for n in range(10):
        site.routes[f"/loop{n}"] = redirect(f"/loop{n + 1}")
    with Fetcher(Guard.of(LOOPBACK), max_redirects=3) as fetcher:
        got = fetcher.fetch(site.url + "/a")
        assert got.url == f"{site.url}/a" and got.final_url == f"{site.url}/" and b"Welcome" in got.data
        with pytest.raises(FetchFailed, match="more than 3 times"):
            fetcher.fetch(site.url + "/loop0")
    assert [p for p, _ in site.requests][-4:] == ["/loop0", "/loop1", "/loop2", "/loop3"]


def test_the_connection_goes_to_the_vetted_address_with_the_name_in_the_host_header(site):
    calls: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"] if len(calls) == 1 else ["10.9.9.9"]  # a rebinding resolver: only the first answer is used

    with Fetcher(Guard.of(["site.test"], resolver=resolver)) as fetcher:
        got = fetcher.fetch(f"http://Site.Test:{site.port}/")
    assert b"Welcome" in got.data and calls == ["site.test"]
    assert site.requests[0][1]["host"] == f"site.test:{site.port}"


def test_no_cookie_or_credential_is_ever_sent(site):
    def sets_cookie(handler) -> None:
        body = b"<html><title>c</title><p>cookie</p></html>"
        handler.send_response(200)
        handler.send_header("Set-Cookie", "session=abc; Path=/")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    site.routes["/login"] = sets_cookie
    with Fetcher(Guard.of(LOOPBACK)) as fetcher:
        fetcher.fetch(site.url + "/login")
        fetcher.fetch(site.url + "/")
    for _, headers in site.requests:
        assert not {"cookie", "authorization", "proxy-authorization"} & set(headers)


def test_an_oversized_page_is_cut_off_declared_or_streamed(site):
    site.pages["/big"] = b"<p>" + b"x" * 5000 + b"</p>"

    def streamed(handler) -> None:  # no Content-Length: the limit holds while reading
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for _ in range(100):
            handler.wfile.write(b"400\r\n" + b"y" * 1024 + b"\r\n")
        handler.wfile.write(b"0\r\n\r\n")

    site.routes["/stream"] = streamed
    with Fetcher(Guard.of(LOOPBACK), max_bytes=4096) as fetcher:
        with pytest.raises(TooLarge, match="over the limit of 4,096"):
            fetcher.fetch(site.url + "/big")
        with pytest.raises(TooLarge, match="the rest was not read"):
            fetcher.fetch(site.url + "/stream")


def test_a_server_that_does_not_answer_in_time_fails_the_fetch(site):
    def slow(handler) -> None:
        time.sleep(3)

    site.routes["/slow"] = slow
    with Fetcher(Guard.of(LOOPBACK), seconds=0.5) as fetcher, pytest.raises(FetchFailed, match="time limit"):
        fetcher.fetch(site.url + "/slow")


def test_the_time_limit_holds_over_a_reply_whose_headers_trickle_in(site):
    """Each byte comes well inside the per-read timeout; the whole fetch must still end at its limit."""
    def trickle(handler) -> None:
        try:
            handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            for _ in range(40):
                handler.wfile.write(b"a")
                handler.wfile.flush()
                time.sleep(0.25)
            handler.wfile.write(b"\r\nContent-Length: 2\r\n\r\nok")
        except OSError:  # the fetch gave up and closed the connection
            pass

    site.routes["/trickle"] = trickle
    started = time.monotonic()
    with Fetcher(Guard.of(LOOPBACK), seconds=1) as fetcher, pytest.raises(FetchFailed, match="time limit"):
        fetcher.fetch(site.url + "/trickle")
    assert time.monotonic() - started < 2.5  # the trickle alone takes 10 s


def test_error_statuses_are_typed_and_a_304_keeps_the_known_validators(site):
    with Fetcher(Guard.of(LOOPBACK)) as fetcher:
        with pytest.raises(HttpStatus) as missing:
            fetcher.fetch(site.url + "/nowhere")
        assert missing.value.status == 404 and missing.value.code == "http_status"
        first = fetcher.fetch(site.url + "/")
        again = fetcher.fetch(site.url + "/", first.fetched)
    assert first.fetched.etag == site.etag("/") and first.fetched.last_modified == site.modified
    assert again.status == "not_modified" and again.data == b"" and again.fetched == first.fetched
    assert site.requests[-1][1]["if-none-match"] == site.etag("/")
    assert site.requests[-1][1]["if-modified-since"] == site.modified


def test_urls_normalise_to_one_id_per_page():
    assert normalise("HTTP://Example.COM:80/a/./b/../c?q=1&r=2#part") == "http://example.com/a/c?q=1&r=2"
    assert normalise("https://example.com:443") == "https://example.com/"
    assert normalise("https://example.com:8443/x") == "https://example.com:8443/x"
    assert normalise("https://Bücher.example/") == "https://xn--bcher-kva.example/"
    assert normalise("http://[::1]:8080/x") == "http://[::1]:8080/x"
    scope = Scope.of("https://example.com/docs/index.html")
    assert scope.holds("https://example.com/docs/a/b") and not scope.holds("https://example.com/docsx")
    assert not scope.holds("http://example.com/docs/") and not scope.holds("https://example.com:8443/docs/")
    assert looks_like_url("file:///etc/passwd") and not looks_like_url("notes/a.md")


def test_the_allow_list_takes_cidrs_and_names_only():
    assert allow_entry("10.0.0.1") == "10.0.0.1/32" and allow_entry("Intranet.Example.") == "intranet.example"
    for bad in ("", "a b", "10.0.0.0/33", "*.example.com", "http://x"):
        with pytest.raises(ValueError):
            allow_entry(bad)
