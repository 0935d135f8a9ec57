"""What a client without credentials can hold of ``citewell serve`` by its connections alone: a
real server on 127.0.0.1 and raw sockets acting as the attacker. A request head is bounded in
size, lines and time as it arrives; idle connections are few per client address and short-lived,
so they never crowd out a client with a request to make."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from citewell.serve.server import MAX_CONNECTIONS
from citewell.serve.settings import ServeSettings
from tests.serving import CLEAN_EXIT, WRITE, Served

IDLE_SECONDS = 1.0
READ_SECONDS = 4.0
PER_CLIENT = 6
SHARE = 16  # connections one address may hold open, busy or not
PUBLIC = "https://kb.example.org"

# The server's deadlines are checked to the second and its replies under a flood to a fraction of
# one: these run alone, not beside another test's load.
pytestmark = pytest.mark.alone


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("connections") / "home"
    server = Served(home, env={"CITEWELL_READ_SECONDS": str(READ_SECONDS), "CITEWELL_IDLE_SECONDS": str(IDLE_SECONDS),
                               "CITEWELL_IDLE_PER_CLIENT": str(PER_CLIENT), "CITEWELL_PUBLIC_URL": PUBLIC})
    try:
        yield server
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()


def connect(served: Served, timeout: float = 10) -> socket.socket:
    return socket.create_connection(("127.0.0.1", served.port), timeout=timeout)


def closed_within(connection: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``connection`` (reading whatever it said), or None if it stayed open."""
    started = time.monotonic()
    connection.settimeout(seconds)
    try:
        while connection.recv(65536):
            pass
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def flood(served: Served, opening: bytes, piece: bytes, pieces: int = 200) -> tuple[int, bytes]:
    """Send ``opening`` then up to ``pieces`` of ``piece`` on one connection: the bytes it took and the reply."""
    sent = 0
    with connect(served) as connection:
        connection.sendall(opening)
        try:
            for _ in range(pieces):
                connection.sendall(piece)
                sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = b""
        try:
            while chunk := connection.recv(65536):
                reply += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return sent, reply


def me_seconds(served: Served, token: str) -> float:
    started = time.monotonic()
    assert served.call("GET", "/me", token).status_code == 200
    return time.monotonic() - started


# -- the request's head ---------------------------------------------------------------------------


def test_a_header_that_never_ends_is_a_431_within_its_first_bytes(served):
    """One value sent 64 KiB at a time for up to 12 MiB: the server answers once it passes the limit,
    instead of buffering it (and copying it whole at every piece) until the deadline."""
    sent, reply = flood(served, b"GET /me HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ", b"a" * 65536)
    assert reply.startswith(b"HTTP/1.1 431 "), reply[:200]
    assert b'"RequestHeaderFieldsTooLarge"' in reply and sent < 4 * 1024 * 1024


def test_too_many_header_lines_are_a_431(served):
    lines = b"".join(b"X-%d: v\r\n" % i for i in range(1000))
    sent, reply = flood(served, b"GET /me HTTP/1.1\r\nHost: 127.0.0.1\r\n", lines)
    assert reply.startswith(b"HTTP/1.1 431 "), reply[:200]
    assert sent < 4 * 1024 * 1024


def test_a_head_within_the_limits_is_served(served):
    token = served.token("northpier", ["staff"])
    headers = {f"x-extra-{i}": "v" * 100 for i in range(80)}
    assert served.call("GET", "/me", token, headers=headers).status_code == 200


def test_header_floods_do_not_stall_other_clients(served):
    """Two connections streaming headers as fast as they can for five seconds (a new connection
    whenever one is cut off): requests beside them are answered at once (they took 5 to 17 seconds)."""
    token = served.token("northpier", ["staff"])
    stop = time.monotonic() + 5
    floods = {"value": (b"GET /me HTTP/1.1\r\nHost: x\r\nX-Pad: ", b"a" * 65536),
              "lines": (b"GET /me HTTP/1.1\r\nHost: x\r\n", b"".join(b"X-%d: v\r\n" % i for i in range(5000)))}

    def attack(kind: str) -> None:
        opening, piece = floods[kind]
        while time.monotonic() < stop:
            with connect(served) as connection:
                try:
                    connection.sendall(opening)
                    while time.monotonic() < stop:
                        connection.sendall(piece)
                except OSError:
                    pass

    attackers = [threading.Thread(target=attack, args=(kind,)) for kind in floods]
    for attacker in attackers:
        attacker.start()
    try:
        time.sleep(1)
        slowest = max(me_seconds(served, token) for _ in range(3))
    finally:
        for attacker in attackers:
            attacker.join()
    assert slowest < 1.5, slowest


def test_a_head_trickling_in_is_cut_off_at_its_deadline_even_while_bytes_arrive(served):
    with connect(served) as connection:
        connection.sendall(b"GET /me HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        try:
            for i in range(int(READ_SECONDS * 4)):  # a header line every quarter second, past the deadline
                connection.sendall(b"X-%d: v\r\n" % i)
                time.sleep(0.25)
        except (BrokenPipeError, ConnectionResetError):
            pass
        took = closed_within(connection, READ_SECONDS)
    assert took is not None
    assert READ_SECONDS - 1 < time.monotonic() - started < READ_SECONDS + 2


# -- idle connections -----------------------------------------------------------------------------


def test_a_connection_that_sends_nothing_is_closed_after_the_idle_time(served):
    with connect(served) as connection:
        took = closed_within(connection, READ_SECONDS + 2)
    assert took is not None and took < IDLE_SECONDS + 1.5, took  # not the head's deadline


def test_a_kept_alive_connection_is_closed_after_the_idle_time(served):
    token = served.token("northpier", ["staff"])
    with connect(served) as connection:
        connection.sendall(f"GET /me HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        assert connection.recv(65536).startswith(b"HTTP/1.1 200 ")
        took = closed_within(connection, READ_SECONDS + 2)
    assert took is not None and took < IDLE_SECONDS + 1.5, took


def test_one_client_holds_only_a_few_idle_connections(served):
    held = [connect(served) for _ in range(PER_CLIENT + 4)]
    try:
        time.sleep(0.3)
        shut = [closed_within(connection, 0.05) is not None for connection in held]
    finally:
        for connection in held:
            connection.close()
    assert shut == [True] * 4 + [False] * PER_CLIENT  # the ones waiting longest went first


def test_more_idle_connections_than_the_server_takes_still_leave_a_request_served(served):
    """More connections than the server's limit, from many loopback addresses (each under its
    own cap) and left silent: a request is answered at once, not a 503 until they time out."""
    token = served.token("northpier", ["staff"])
    held = []
    try:
        for i in range(MAX_CONNECTIONS + 20):
            source = (f"127.0.{1 + i // PER_CLIENT // 200}.{2 + i // PER_CLIENT % 200}", 0)
            held.append(socket.create_connection(("127.0.0.1", served.port), timeout=10, source_address=source))
        reply = served.call("GET", "/me", token)
        assert reply.status_code == 200, reply.text
    finally:
        for connection in held:
            connection.close()


def test_a_request_under_way_is_not_closed_to_make_room(served):
    """A request whose body is still coming is not idle: idle connections of its address opened
    meanwhile never close it, and it is answered when its body ends."""
    token = served.token("northpier", ["staff"])
    body = b'{"question": "annual leave"}'
    with connect(served) as busy:
        busy.sendall(f"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:5])
        time.sleep(0.2)
        held = [connect(served) for _ in range(PER_CLIENT * 3)]
        try:
            time.sleep(0.2)
            busy.sendall(body[5:])
            assert busy.recv(65536).startswith(b"HTTP/1.1 200 ")
        finally:
            for connection in held:
                connection.close()


def test_one_address_holding_upload_requests_gets_only_its_share_and_others_are_served(tmp_path):
    """As many connections as the server takes, from one address, each sending an upload's head and
    then nothing of its body: past its share the address is answered 503 at once, and a client at
    another address is served while the held ones wait on their deadline (it got a 503 for 30 to
    40 s). The deadline here is a minute, so the held requests are still under way throughout."""
    server = Served(tmp_path / "home", env={"CITEWELL_READ_SECONDS": "60", "CITEWELL_CONNECTIONS_PER_CLIENT": str(SHARE)})
    token = server.token("northpier", ["staff"])
    head = (b"POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=zz\r\n"
            b"Content-Length: 1000000\r\n\r\n--zz\r\n")
    held: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS):
            connection = socket.create_connection(("127.0.0.1", server.port), timeout=10, source_address=("127.0.0.3", 0))
            held.append(connection)
            try:
                connection.sendall(head)
            except (BrokenPipeError, ConnectionResetError):
                pass
        for _ in range(3):  # each on a new connection, as a new client comes (not one kept alive from before)
            started = time.monotonic()
            reply = httpx.get(f"{server.url}/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)
            took = time.monotonic() - started
            assert reply.status_code == 200, reply.text
            assert took < 5, took  # at once, not after the held requests' deadline
        refused = [reply_of(connection, 5) for connection in held[SHARE:]]
        assert [reply_of(connection, 0.05) for connection in held[:SHARE]] == [None] * SHARE  # its share: still waiting
        assert all(r is not None and r.startswith(b"HTTP/1.1 503 ") for r in refused), {r[:40] if r else r for r in refused}
        assert b'"ServiceUnavailable"' in refused[0]
    finally:
        for connection in held:
            connection.close()
        assert server.stop() in CLEAN_EXIT, server.log.read_text()


def reply_of(connection: socket.socket, seconds: float = 2) -> bytes | None:
    """What the server said on ``connection`` before closing it, or None while it still waits."""
    said = b""
    connection.settimeout(seconds)
    try:
        while chunk := connection.recv(65536):
            said += chunk
    except TimeoutError:
        return said or None
    except ConnectionResetError:
        pass
    return said


# -- where the upload form points -------------------------------------------------------------------


def test_the_upload_form_points_at_the_configured_public_url_whatever_the_host_header(served):
    writer = served.token("northpier", ["staff", WRITE])
    created = served.call("POST", "/documents", writer, {"document_id": "public.md", "allowed_roles": ["staff"]},
                          headers={"host": "evil.example"})
    assert created.status_code == 201, created.text
    assert created.json()["upload"]["url"] == f"{PUBLIC}/uploads"


def test_the_origin_comes_from_configuration_and_a_wildcard_address_needs_the_public_url():
    from citewell.serve.server import origin
    from citewell.serve.settings import public_url

    plain = ServeSettings()
    assert origin("127.0.0.1", 8000, plain) == "http://127.0.0.1:8000"
    assert origin("::1", 8000, plain) == "http://[::1]:8000"
    for wildcard in ("0.0.0.0", "::", ""):
        with pytest.raises(ValueError, match="CITEWELL_PUBLIC_URL"):
            origin(wildcard, 8000, plain)
    assert origin("0.0.0.0", 8000, ServeSettings(public_url="https://kb.example.org")) == "https://kb.example.org"
    assert public_url("https://kb.example.org:8443/") == "https://kb.example.org:8443"
    for bad in ("kb.example.org", "ftp://kb.example.org", "https://kb.example.org/path", "https://u:p@kb.example.org",
                "https://kb.example.org?x=1", "https://kb.example.org:port", "https://"):
        with pytest.raises(ValueError, match="CITEWELL_PUBLIC_URL"):
            public_url(bad)
