"""``citewell serve`` as an attacker and a clumsy client meet it: a real server process on 127.0.0.1,
real HTTP, real tokens. Identity comes only from a verified bearer token; the page and its
files are served without a way out of their folder; every limit answers with the one error
shape, and a slow client holds nothing but its own connection."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from citewell.api.routes import openapi_document
from citewell.serve.tokens import LOCAL_AUDIENCE, LOCAL_ISSUER, home_key, key_id
from tests.serving import CLEAN_EXIT, WRITE, Served, load_corpus

MAX_BYTES = 100_000


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    home = tmp_path_factory.mktemp("serve") / "home"
    server = Served(home, env={"CITEWELL_MAX_BYTES": str(MAX_BYTES), "CITEWELL_READ_SECONDS": "2"})
    try:
        load_corpus(server)
        yield server
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()


def refused(reply: httpx.Response, status: int) -> str:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["message"] and "Traceback" not in reply.text
    return body["error"]["message"]


def texts(reply: httpx.Response) -> str:
    return json.dumps(reply.json())


# -- who the caller is -----------------------------------------------------------------------


def test_me_says_who_the_token_names_and_whether_they_may_write(served):
    assert served.call("GET", "/me", served.token("northpier", ["staff"])).json() == {
        "tenant": "northpier", "roles": ["staff"], "can_write": False}
    assert served.call("GET", "/me", served.token("bluefen", ["staff", WRITE])).json() == {
        "tenant": "bluefen", "roles": ["citewell:write", "staff"], "can_write": True, "max_bytes": MAX_BYTES}
    assert "no tenant or no roles" in refused(served.call("GET", "/me", served.token("northpier", [])), 403)
    assert "not a valid tenant" in refused(served.call("GET", "/me", served.token("../northpier", ["staff"])), 403)


def test_a_reply_is_json_in_utf8(served):
    """Bodies are written by pydantic's JSON serializer (the Lambda's too): text beyond ASCII goes
    out as UTF-8, not as \\u escapes, and reads back the same."""
    reply = served.call("GET", "/me", served.token("northpier", ["staff", "équipe"]))
    assert reply.json()["roles"] == ["staff", "équipe"]
    assert "équipe".encode() in reply.content


def _signed(served: Served, **claims) -> str:
    now = int(time.time())
    payload = {"iss": LOCAL_ISSUER, "aud": LOCAL_AUDIENCE, "iat": now, "exp": now + 600,
               "custom:tenant": "northpier", "cognito:groups": ["staff", "hr"], **claims}
    payload = {k: v for k, v in payload.items() if v is not None}
    key = home_key(served.home)
    return jwt.encode(payload, key, algorithm="ES256", headers={"kid": key_id(key.public_key())})


def _unsigned(header: dict, payload: dict, sign=None) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    head = f"{part(header)}.{part(payload)}"
    signature = sign(head.encode()) if sign else b""
    return f"{head}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def test_every_token_that_does_not_verify_is_a_401(served):
    now = int(time.time())
    claims = {"iss": LOCAL_ISSUER, "aud": LOCAL_AUDIENCE, "iat": now, "exp": now + 600,
              "custom:tenant": "northpier", "cognito:groups": ["staff", "hr"]}
    public_pem = home_key(served.home).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    stranger = ec.generate_private_key(ec.SECP256R1())
    forged = {
        "no token": None,
        "not bearer": "Basic bm9ydGhwaWVyOnN0YWZm",
        "not a jwt": "Bearer not.a.token",
        "another key": "Bearer " + jwt.encode(claims, stranger, algorithm="ES256"),
        "expired": "Bearer " + _signed(served, iat=now - 7200, exp=now - 3600),
        "wrong audience": "Bearer " + _signed(served, aud="someone-else"),
        "wrong issuer": "Bearer " + _signed(served, iss="https://issuer.example"),
        "no expiry": "Bearer " + _signed(served, exp=None),
        "alg none": "Bearer " + _unsigned({"alg": "none", "typ": "JWT"}, claims),
        "alg None": "Bearer " + _unsigned({"alg": "None", "typ": "JWT"}, claims),
        "HS256 with the public key": "Bearer " + _unsigned(
            {"alg": "HS256", "typ": "JWT"}, claims, lambda data: hmac.new(public_pem, data, hashlib.sha256).digest()),
        "payload swapped": "Bearer " + ".".join([
            served.token("bluefen", ["staff"]).split(".")[0],
            _unsigned({}, claims).split(".")[1],
            served.token("bluefen", ["staff"]).split(".")[2],
        ]),
    }
    for name, authorization in forged.items():
        headers = {"Authorization": authorization} if authorization else {}
        for method, path, body in (("GET", "/me", None), ("POST", "/search", {"question": "annual leave"}),
                                   ("GET", "/documents/hr%2Fsalaries.md", None)):
            reply = served.client.request(method, path, headers=headers, json=body)
            refused(reply, 401)
            assert reply.headers["www-authenticate"].startswith("Bearer"), name
            assert "salary" not in reply.text and "27 days" not in reply.text, name
    assert served.call("GET", "/me", _signed(served)).status_code == 200  # the control: the same claims, signed


def test_a_token_that_names_an_algorithm_outside_ascii_is_a_401_whose_header_stays_ascii(served):
    for alg in ("\u20ac", "\u00e9", "RS256\r\nX-Injected: 1"):
        authorization = "Bearer " + _unsigned({"alg": alg, "typ": "JWT"}, {"custom:tenant": "northpier"})
        for method, path in (("GET", "/me"), ("GET", "/documents")):
            reply = served.client.request(method, path, headers={"Authorization": authorization})
            assert "not accepted here" in refused(reply, 401), alg
            header = reply.headers.get_list("www-authenticate", split_commas=False)
            assert len(header) == 1 and header[0].isascii() and header[0].isprintable(), header
            assert "x-injected" not in reply.headers


def test_tokens_minted_without_a_subject_are_different_people(served):
    first, second = (served.token("northpier", ["staff"]) for _ in range(2))
    asked = served.call("POST", "/query", first, {"question": "How many days of annual leave do full-time staff get?"})
    assert asked.status_code == 200, asked.text
    conversation = asked.json()["conversation_id"]
    assert served.call("GET", "/conversations", second).json() == {"history": []}
    refused(served.call("GET", f"/conversations/{conversation}", second), 404)
    assert [c["conversation_id"] for c in served.call("GET", "/conversations", first).json()["history"]] == [conversation]


def test_the_cli_mints_a_subject_of_its_own_unless_told_one(served):
    def claims(*extra: str) -> dict:
        done = subprocess.run([sys.executable, "-m", "citewell", "--home", str(served.home), "--json", "token",
                               "--tenant", "northpier", "--roles", "staff", *extra], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return jwt.decode(json.loads(done.stdout)["token"], options={"verify_signature": False})

    assert claims()["sub"] != claims()["sub"]
    assert claims("--subject", "anna@northpier.example")["sub"] == "anna@northpier.example"
    done = subprocess.run([sys.executable, "-m", "citewell", "--home", str(served.home), "token", "--tenant", "northpier",
                           "--roles", "staff", "--subject", "a\nb"], capture_output=True, text=True)
    assert done.returncode == 2 and "subject" in done.stderr and "Traceback" not in done.stderr


def test_identity_in_query_body_or_headers_is_ignored(served):
    bluefen = served.token("bluefen", ["staff"])
    refused(served.call("GET", "/me?access_token=" + served.token("northpier", ["hr"])), 401)
    smuggled = {"X-Tenant": "northpier", "X-Roles": "hr,staff", "X-Amzn-Oidc-Identity": "northpier",
                "X-Forwarded-User": "northpier", "X-Custom-Tenant": "northpier"}
    body = {"question": "How many days of annual leave?", "k": 10, "tenant": "northpier", "roles": ["hr", "staff"],
            "custom:tenant": "northpier", "requestContext": {"authorizer": {"jwt": {"claims": {"custom:tenant": "northpier"}}}}}
    assert "tenant" in refused(served.call("POST", "/search", bluefen, body), 422)  # said, not silently dropped
    found = served.call("POST", "/search?tenant=northpier&roles=hr", bluefen, {"question": body["question"], "k": 10},
                        headers=smuggled)
    assert found.status_code == 200
    assert {h["document_id"] for h in found.json()["hits"]} == {"guide.md"}
    answer = served.call("POST", "/query?tenant=northpier", bluefen, {"question": "How many days of annual leave do staff get?"},
                         headers=smuggled).json()
    assert "27 days" not in json.dumps(answer) and "Northpier" not in json.dumps(answer) and "guide.md" in json.dumps(answer)
    assert served.call("GET", "/me", bluefen, headers=smuggled).json()["tenant"] == "bluefen"


def test_another_tenant_or_role_sees_nothing_of_a_document(served):
    northpier_hr, bluefen = served.token("northpier", ["hr", "staff"]), served.token("bluefen", ["staff", WRITE])
    staff = served.token("northpier", ["staff"])
    for token, path in ((bluefen, "/documents/handbook.md"), (staff, "/documents/hr%2Fsalaries.md"),
                        (staff, "/documents/engineering/errors.md")):
        refused(served.call("GET", path, token), 404)
    refused(served.call("DELETE", "/documents/handbook.md", bluefen), 404)  # a writer of another tenant
    assert [d["document_id"] for d in served.call("GET", "/documents", bluefen).json()["documents"]] == ["guide.md"]
    hits = served.call("POST", "/search", staff, {"question": "error E1027 crane salary band shift lead", "k": 50}).json()["hits"]
    assert "E1027" not in json.dumps(hits) and "41,000" not in json.dumps(hits)
    asked = served.call("POST", "/query", northpier_hr, {"question": "What is the salary band of a shift lead?"}).json()
    assert not asked["refused"] and "41,000" in asked["answer"]
    for token in (bluefen, staff):  # an answer shows only to a reader of everything it cites
        refused(served.call("GET", f"/answers/{asked['answer_id']}/citations", token), 404)
    assert served.call("GET", f"/answers/{asked['answer_id']}/citations", northpier_hr).status_code == 200


def test_the_listing_and_a_text_come_in_pages_of_what_the_caller_may_read(served):
    """The same pages as on AWS: a page never holds or counts a record the caller may not read."""
    def pages(token: str, path: str, limit: int) -> list[dict]:
        found, cursor = [], None
        while True:
            reply = served.call("GET", f"{path}?limit={limit}" + (f"&cursor={cursor}" if cursor else ""), token)
            assert reply.status_code == 200, reply.text
            found.append(reply.json())
            if (cursor := found[-1]["next"]) is None:
                return found

    staff, everyone = served.token("northpier", ["staff"]), served.token("northpier", ["staff", "hr", "support"])
    assert [[d["document_id"] for d in p["documents"]] for p in pages(staff, "/documents", 1)] == [["handbook.md"]]
    assert [[d["document_id"] for d in p["documents"]] for p in pages(everyone, "/documents", 2)] == [
        ["engineering/errors.md", "handbook.md"], ["hr/salaries.md"]]
    text = pages(staff, "/documents/handbook.md", 40)
    whole = served.call("GET", "/documents/handbook.md", staff).json()
    assert whole["next"] is None and whole["total_chars"] == len(whole["text"])
    assert len(text) > 2 and "".join(p["text"] for p in text) == whole["text"] and "27 days" in whole["text"]
    assert {p["revision"] for p in text} == {text[0]["document"]["active_revision"]}
    assert "limit" in refused(served.call("GET", "/documents?limit=0", staff), 400)


def test_changing_documents_needs_the_write_role(served):
    staff = served.token("northpier", ["staff"])
    new = {"document_id": "notes.md", "allowed_roles": ["staff"]}
    assert WRITE in refused(served.call("POST", "/documents", staff, new), 403)
    assert WRITE in refused(served.call("DELETE", "/documents/handbook.md", staff), 403)
    writer = served.token("northpier", ["staff", WRITE])
    assert "roles the caller holds" in refused(served.call("POST", "/documents", writer, {**new, "allowed_roles": ["hr"]}), 403)
    assert served.call("GET", "/documents/handbook.md", staff).json()["document"]["status"] == "published"


# -- the upload form ---------------------------------------------------------------------------


def test_the_upload_form_is_the_presigned_post_shape_and_cannot_be_bent(served):
    writer = served.token("northpier", ["staff", WRITE])
    created = served.call("POST", "/documents", writer, {"document_id": "forms.md", "allowed_roles": ["staff"]}).json()
    form = created["upload"]
    assert set(created) == {"document_id", "upload_id", "upload", "max_bytes", "expires_in"}
    assert form["url"] == f"{served.url}/uploads" and form["fields"]["key"].startswith("raw/northpier/forms.md/")
    fields = form["fields"]
    other = dict(fields, key=fields["key"].replace("northpier", "bluefen"))
    assert "signed" in refused(httpx.post(form["url"], data=other, files={"file": ("f", b"# x\n\ny\n")}), 403)
    policy = json.loads(base64.b64decode(fields["policy"]))
    bigger = base64.b64encode(json.dumps({**policy, "max_bytes": 10**9}).encode()).decode()
    assert "signature" in refused(httpx.post(form["url"], data=dict(fields, policy=bigger), files={"file": ("f", b"x")}), 403)
    refused(httpx.post(form["url"], data=fields), 400)  # no file
    too_big = httpx.post(form["url"], data=fields, files={"file": ("f", b"x" * (MAX_BYTES * 3))})
    refused(too_big, 413)  # refused by its Content-Length, before the form is read
    unsized = httpx.Request("POST", form["url"], data=fields, files={"file": ("f", b"x" * (MAX_BYTES * 3))})
    body = unsized.read()  # sent chunked, with no Content-Length to refuse it by: counted as it arrives
    streamed = httpx.post(form["url"], content=iter([body[i:i + 65536] for i in range(0, len(body), 65536)]),
                          headers={"content-type": unsized.headers["content-type"]})
    assert "content-length" not in streamed.request.headers
    refused(streamed, 413)
    assert httpx.post(form["url"], data=fields, files={"file": ("forms.md", b"# Forms\n\nForm 7 is for leave.\n")}).status_code == 204
    assert "used already" in refused(httpx.post(form["url"], data=fields, files={"file": ("f", b"# Other\n\ntext\n")}), 409)
    assert served.settled(writer, "forms.md")["status"] == "published"
    assert "Form 7" in served.call("GET", "/documents/forms.md", writer).json()["text"]


def part(name: str, value: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
    return f"--zz\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + value + b"\r\n"


def read_reply(connection: socket.socket) -> bytes:
    """One reply's head and its Content-Length of body, however many packets they come in."""
    data = b""
    while True:
        head, ended, body = data.partition(b"\r\n\r\n")
        length = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE) if ended else None
        if length and len(body) >= int(length.group(1)):
            return data
        chunk = connection.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_an_unsigned_upload_is_refused_before_its_file_is_read(served):
    """No token and no form: the body announces 90 KB, sends its fields and the first bytes of
    the file, and waits. The refusal comes at once; the server never waits for, nor keeps, the rest."""
    fields = part("key", b"raw/northpier/x.md/" + b"0" * 32) + part("policy", b"e30=") + part("x-citewell-signature", b"0" * 64)
    head = fields + b'--zz\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\n' + b"b" * 1024
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as connection:
        connection.sendall(b"POST /uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=zz\r\n"
                           b"Content-Length: %d\r\n\r\n" % (MAX_BYTES - 10_000) + head)
        reply = read_reply(connection)  # a timeout here: the server waits for a body no form was signed for
    assert reply.startswith(b"HTTP/1.1 403 ") and b'"AccessDenied"' in reply and b"signature" in reply, reply


def test_an_upload_whose_fields_never_come_is_cut_off_at_the_read_deadline(served):
    """Headers of a big upload, then nothing: without a signed form it holds its connection for the
    head's deadline (CITEWELL_READ_SECONDS, 2 here), not an upload's 300 seconds."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as connection:
        connection.sendall(b"POST /uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=zz\r\n"
                           b"Content-Length: 90000\r\n\r\n--zz\r\n")
        started = time.monotonic()
        reply = read_reply(connection)  # a timeout here: the server would wait 300 seconds
    assert reply.startswith(b"HTTP/1.1 408 ") and b"fields did not arrive" in reply, reply
    assert time.monotonic() - started < 6


def test_the_form_fields_come_before_the_file_and_what_follows_it_is_ignored(served):
    writer = served.token("northpier", ["staff", WRITE])
    form = served.call("POST", "/documents", writer, {"document_id": "order.md", "allowed_roles": ["staff"]}).json()["upload"]
    fields = [(name, (None, value)) for name, value in form["fields"].items()]
    first = httpx.post(form["url"], files=[("file", ("f.md", b"# A\n\ntext\n")), *fields])
    assert "before the file" in refused(first, 403)
    after = httpx.post(form["url"], files=[*fields, ("file", ("f.md", b"# Order\n\nThe quay opens at six.\n")),
                                           ("file", ("g.md", b"# Other\n\nignored\n")), ("key", (None, "raw/bluefen/x"))])
    assert after.status_code == 204, after.text
    assert served.settled(writer, "order.md")["status"] == "published"
    assert "quay opens at six" in served.call("GET", "/documents/order.md", writer).json()["text"]


@pytest.mark.parametrize("field", ["policy", "x-citewell-signature"])
def test_a_non_ascii_policy_or_signature_is_a_403_in_the_error_shape(served, field):
    writer = served.token("northpier", ["staff", WRITE])
    form = served.call("POST", "/documents", writer, {"document_id": f"ascii-{field}.md", "allowed_roles": ["staff"]}).json()["upload"]
    bent = dict(form["fields"], **{field: "é" + form["fields"][field]})
    assert "signature" in refused(httpx.post(form["url"], data=bent, files={"file": ("f", b"# x\n\ny\n")}), 403)


def test_the_upload_form_points_at_this_server_whatever_host_the_request_names(served):
    """The Host header is the client's to write: a form built from it would send the file elsewhere."""
    writer = served.token("northpier", ["staff", WRITE])
    for host in ("evil.example:443", "127.0.0.1:1"):
        created = served.call("POST", "/documents", writer, {"document_id": "host.md", "allowed_roles": ["staff"]},
                              headers={"host": host})
        assert created.status_code == 201, created.text
        assert created.json()["upload"]["url"] == f"{served.url}/uploads"


def test_a_client_gone_mid_body_is_no_error_of_ours(served):
    staff = served.token("northpier", ["staff"])
    logged = len(served.log.read_bytes())
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as connection:
        connection.sendall(f"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {staff}\r\n"
                           "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"question\"".encode())
    assert served.call("GET", "/me", staff).status_code == 200
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and b"Traceback" not in served.log.read_bytes()[logged:]:
        time.sleep(0.1)
    tail = served.log.read_bytes()[logged:].decode(errors="replace")
    assert "Traceback" not in tail and "ClientDisconnect" not in tail, tail


@pytest.mark.parametrize(("size", "status", "code"), [(MAX_BYTES + 1, 413, "too_large"), (0, 400, "empty_text")])
def test_a_file_refused_for_its_size_fails_its_upload_at_once(served, size, status, code):
    """The document does not wait as `processing` for a file that will never be taken: it fails
    with the reason the sender saw, and the form is spent."""
    writer = served.token("northpier", ["staff", WRITE])
    document_id = f"refused-{code}.md"
    form = served.call("POST", "/documents", writer, {"document_id": document_id, "allowed_roles": ["staff"]}).json()["upload"]
    refused(httpx.post(form["url"], data=form["fields"], files={"file": ("f", b"x" * size)}), status)
    document = served.call("GET", f"/documents/{document_id}", writer).json()["document"]  # at once: no waiting
    assert document["status"] == "failed" and document["error"]["code"] == code, document
    again = httpx.post(form["url"], data=form["fields"], files={"file": ("f", b"# Fits\n\ntext\n")})
    assert "no longer current" in refused(again, 409)


def test_a_gzipped_man_page_upload_is_read_and_a_gzip_bomb_fails_alone(served):
    """The upload route parses through the same reader as the CLI: a page as /usr/share/man holds
    it is published and found; a bomb far under the limit gzipped fails ``too_large`` decompressed."""
    from tests.parsers.test_gzipped_files import MAN_PAGE, gz

    writer = served.token("northpier", ["staff", WRITE])
    page = served.upload(writer, "man/man1/widget.1.gz", gz(MAN_PAGE), ["staff"])
    assert page["status"] == "published" and page["title"] == "widget - frobnicate widgets in a working tree"
    bomb = served.upload(writer, "doc/widget/bomb.gz", gz(b"A" * (MAX_BYTES * 10)), ["staff"])
    assert bomb["status"] == "failed" and bomb["error"]["code"] == "too_large", bomb
    hits = served.call("POST", "/search", writer, {"question": "spin TURNS frobnication"}).json()["hits"]
    assert hits[0]["document_id"] == "man/man1/widget.1.gz" and "option: --spin=TURNS" in hits[0]["text"]


def test_a_document_id_longer_than_a_file_name_is_uploaded_served_and_deleted(served):
    """A Japanese file name of 44 characters is 310 bytes percent-encoded, over the 255 a file
    name may have: it was a 500 and a document stuck `processing`."""
    writer = served.token("northpier", ["staff", WRITE])
    document_id = "規程/年次休暇規程_2026年度版_全社共通_最新版_人事部作成_社内限定_保存用.md"
    assert len(quote(document_id, safe="")) > 255
    path = "/documents/" + quote(document_id, safe="")
    form = served.call("POST", "/documents", writer, {"document_id": document_id, "allowed_roles": ["staff"]}).json()["upload"]
    sent = httpx.post(form["url"], data=form["fields"], files={"file": ("f.md", "# 休暇\n\nThe quillfeather allowance is 31 days.\n".encode())})
    assert sent.status_code == 204, sent.text
    assert served.settled(writer, document_id)["status"] == "published"
    hits = served.call("POST", "/search", writer, {"question": "quillfeather allowance"}).json()["hits"]
    assert hits and hits[0]["document_id"] == document_id
    assert served.call("DELETE", path, writer).status_code == 200
    refused(served.call("GET", path, writer), 404)
    assert not any("quillfeather" in p.read_text(errors="ignore") for p in served.home.rglob("*.json"))


def test_where_the_cli_read_a_file_on_the_servers_disk_is_not_shown_to_callers(served, tmp_path):
    notes = tmp_path / "operator-only-folder" / "tides.md"
    notes.parent.mkdir()
    notes.write_text("# Tides\n\nThe slipway floods two hours before high water.\n")
    subprocess.run([sys.executable, "-m", "citewell", "--home", str(served.home), "ingest", str(notes),
                    "--tenant", "northpier", "--allow-roles", "staff"], check=True, capture_output=True)
    staff = served.token("northpier", ["staff"])
    assert served.call("GET", "/documents/tides.md", staff).json()["document"]["source"] == ""
    assert "operator-only-folder" not in served.call("GET", "/documents", staff).text


# -- the page and its files ---------------------------------------------------------------------


def raw_get(served: Served, target: str) -> tuple[int, bytes]:
    """A request line sent exactly as written: no client normalises the dots away."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as connection:
        connection.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_the_page_and_its_files_with_their_types_and_a_policy_against_other_origins(served):
    page = served.client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert "http" not in policy and "*" not in policy and "unsafe" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    web = Path(__file__).resolve().parents[2] / "shared" / "citewell" / "web"
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css"), ("favicon.svg", "image/svg+xml")):
        if (web / name).exists():
            reply = served.client.get(f"/static/{name}")
            assert reply.status_code == 200 and reply.headers["content-type"].startswith(kind), name
            assert reply.content == (web / name).read_bytes()
    assert "content-security-policy" in served.call("GET", "/me").headers  # API replies carry it too


@pytest.mark.parametrize("target", [
    "/static/../serve/app.py", "/static/%2e%2e/serve/app.py", "/static/..%2fserve%2fapp.py", "/static/%2e%2e%2f%2e%2e%2fREADME.md",
    "/static//etc/passwd", "/static/%2Fetc%2Fpasswd", "/static/.hidden", "/static/app.js%00.png", "/static/",
    "/static/..", "/static/../../../../etc/passwd", "/static/%252e%252e/serve/app.py", "/static/./app.js",
])
def test_static_files_never_leave_their_folder(served, target):
    status, body = raw_get(served, target)
    assert status in (400, 404), (target, status)
    assert b"import" not in body and b"root:" not in body and b"citewell" not in body.lower().replace(b"citewell serve", b"")


def test_openapi_is_the_lambdas_document(served):
    printed = subprocess.run([sys.executable, "-m", "citewell.lambdas.api"], capture_output=True, text=True, check=True,
                             env={"PATH": "", "POWERTOOLS_TRACE_DISABLED": "1", "PYTHONPATH": os.pathsep.join(sys.path)}).stdout
    served_document = served.client.get("/openapi.json")
    assert served_document.status_code == 200
    assert served_document.json() == json.loads(printed) == json.loads(openapi_document())
    assert "/me" in served_document.json()["paths"]
    schemas = served_document.json()["components"]["schemas"]
    assert schemas["Outcome"]["enum"] == ["answered", "unconfirmed", "not_found", "clarify"]
    assert {"Answer", "AnswerRecord"} <= {name for name, schema in schemas.items() if "outcome" in schema.get("properties", {})}


def test_the_answer_json_names_its_outcome_and_an_unconfirmed_quote_is_recorded_for_its_readers_only(served):
    writer = served.token("outcomes", ["staff", WRITE])
    hours = (b"# Working hours\n\nThe standard working week is 37.5 hours, Monday to Friday. Core hours are 10:00 to "
             b"15:00.\n\n# Leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n")
    assert served.upload(writer, "hours.md", hours, ("staff",))["status"] == "published"
    staff = served.token("outcomes", ["staff"])

    def asked(question: str) -> dict:
        reply = served.call("POST", "/query", staff, {"question": question})
        assert reply.status_code == 200, reply.text
        return reply.json()

    assert asked("How many days of paid annual leave do full-time staff receive?")["outcome"] == "answered"
    unconfirmed = asked("What are the core hours on Saturday?")
    assert (unconfirmed["outcome"], unconfirmed["refused"], unconfirmed["answer"]) == (
        "unconfirmed", True, "Core hours are 10:00 to 15:00. [S1]")
    not_found = asked("Which football team won the national cup in 1998?")
    assert (not_found["outcome"], not_found["refused"], not_found["answer"]) == ("not_found", True, None)
    path = f"/answers/{unconfirmed['answer_id']}/citations"
    record = served.call("GET", path, staff).json()
    assert record["outcome"] == "unconfirmed" and record["citations"][0]["quote"] == "Core hours are 10:00 to 15:00."
    for attacker in (served.token("outcomes", ["hr"]), served.token("northpier", ["staff"])):
        refused(served.call("GET", path, attacker), 404)


def test_demo_identities_exist_only_with_demo(served):
    refused(served.client.get("/demo/identities"), 404)


# -- limits ---------------------------------------------------------------------------------------


def test_bodies_questions_and_k_are_bounded(served):
    staff = served.token("northpier", ["staff"])
    padded = json.dumps({"question": "annual leave"}) + " " * (64 * 1024)
    assert "64 KiB" in refused(served.call("POST", "/search", staff, content=padded,
                                           headers={"content-type": "application/json"}), 413)

    def chunked():
        yield json.dumps({"question": "annual leave"}).encode()
        for _ in range(80):
            yield b" " * 1024

    assert "64 KiB" in refused(served.call("POST", "/search", staff, content=chunked(),
                                           headers={"content-type": "application/json"}), 413)
    assert "question" in refused(served.call("POST", "/search", staff, {"question": "x" * 2001}), 422)
    assert "question" in refused(served.call("POST", "/query", staff, {"question": "x" * 2001}), 422)
    for path in ("/search", "/query"):  # as `citewell ask "  "` says: nothing was asked
        assert "the question is empty" in refused(served.call("POST", path, staff, {"question": " \t\n "}), 422)
        for wordless in ("???", "\u0000", "\u2028 !"):
            assert "no word" in refused(served.call("POST", path, staff, {"question": wordless}), 422)
    for k in (0, 101, "ten"):
        assert "k" in refused(served.call("POST", "/search", staff, {"question": "leave", "k": k}), 422)
    refused(served.call("POST", "/search", staff, content=b'{"question": "\xff"}', headers={"content-type": "application/json"}), 400)
    refused(served.call("POST", "/search", staff, content="[" * 5000 + "]" * 5000, headers={"content-type": "application/json"}), 400)


def test_a_body_is_json_or_a_415_and_json_is_json_in_any_spelling(served):
    staff = served.token("northpier", ["staff"])
    multipart = (b'--b\r\nContent-Disposition: form-data; name="question"\r\n\r\n\xff\xfeabc\r\n--b--\r\n')
    for content_type, body in (("multipart/form-data; boundary=b", multipart),
                               ("application/x-www-form-urlencoded", b"question=annual+leave"),
                               ("application/jsonx", b'{"question": "annual leave"}'),
                               ("text/plain", b'{"question": "annual leave"}')):
        reply = served.call("POST", "/search", staff, content=body, headers={"content-type": content_type})
        assert "application/json" in refused(reply, 415), content_type
    for content_type in ("Application/JSON", "application/json; charset=UTF-8", "APPLICATION/JSON ; charset=utf-8"):
        reply = served.call("POST", "/search", staff, content=b'{"question": "annual leave"}', headers={"content-type": content_type})
        assert reply.status_code == 200 and reply.json()["hits"], (content_type, reply.text)
    assert served.call("GET", "/me", staff, headers={"content-type": "text/plain"}).status_code == 200  # no body, no matter


def test_fields_the_api_does_not_have_and_values_of_another_type_are_a_422(served):
    staff = served.token("northpier", ["staff"])
    for body in ({"question": "leave", "tenant": "bluefen"}, {"question": "leave", "roles": ["hr"]},
                 {"question": "leave", "filter": {"documents": ["hr/salaries.md"]}}):
        assert next(iter(set(body) - {"question"})) in refused(served.call("POST", "/search", staff, body), 422)
    assert "user" in refused(served.call("POST", "/query", staff, {"question": "leave", "user": "admin"}), 422)
    for k in (True, "3", 2.0):
        assert "k" in refused(served.call("POST", "/search", staff, {"question": "leave", "k": k}), 422)
    answer = served.call("POST", "/query", staff, {"question": "How many days of annual leave do full-time staff get?"}).json()
    for helpful in ("yes", 1):
        path = f"/answers/{answer['answer_id']}/feedback"
        assert "helpful" in refused(served.call("POST", path, staff, {"helpful": helpful}), 422)


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("GET", "/search", "POST"), ("PUT", "/query", "POST"), ("POST", "/me", "GET"), ("DELETE", "/me", "GET"),
    ("DELETE", "/documents", "GET, POST"), ("PATCH", "/documents/handbook.md", "DELETE, GET"),
    ("GET", "/answers/0123456789abcdef0123456789abcdef/feedback", "POST"),
])
def test_a_method_a_path_does_not_take_is_a_405_naming_the_ones_it_does(served, method, path, allowed):
    staff = served.token("northpier", ["staff"])
    reply = served.call(method, path, staff, headers={"content-type": "application/json"})
    assert method in refused(reply, 405) and reply.headers["allow"] == allowed
    assert reply.text.startswith('{"error":{"code":"MethodNotAllowedError","message":')  # every error body written alike
    assert served.client.head("/me", headers={"Authorization": f"Bearer {staff}"}).status_code == 405


def test_what_the_router_refuses_and_what_breaks_in_the_upload_route_are_json(served):
    for method in ("OPTIONS", "TRACE"):
        reply = served.client.request(method, "/search")
        assert "Method Not Allowed" in refused(reply, 405) and reply.headers["allow"] == "POST"
    writer = served.token("northpier", ["staff", WRITE])
    form = served.call("POST", "/documents", writer, {"document_id": "broken-store.md", "allowed_roles": ["staff"]}).json()["upload"]
    raw = served.home / "objects" / "raw" / "northpier" / "broken-store.md"
    raw.write_text("a file where the upload's folder must be")  # the store cannot write: a server fault
    try:
        reply = httpx.post(form["url"], data=form["fields"], files={"file": ("f.md", b"# A\n\ntext\n")})
    finally:
        raw.unlink()
    message = refused(reply, 500)
    assert "request id" in message and "Traceback" not in reply.text


def test_a_slow_client_is_cut_off_and_holds_nothing_meanwhile(served):
    staff = served.token("northpier", ["staff"])
    silent = socket.create_connection(("127.0.0.1", served.port), timeout=15)
    trickle = socket.create_connection(("127.0.0.1", served.port), timeout=15)
    trickle.sendall(b"GET /me HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the headers never end
    slow_body = socket.create_connection(("127.0.0.1", served.port), timeout=15)
    slow_body.sendall(f"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {staff}\r\n"
                      "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"question\"".encode())
    started = time.monotonic()
    assert served.call("GET", "/me", staff).status_code == 200  # served while three clients stall
    for connection in (silent, trickle):
        assert connection.recv(1024) == b""  # closed by the server
        connection.close()
    reply = b""
    while chunk := slow_body.recv(65536):  # the head and the body may come in two packets
        reply += chunk
    slow_body.close()
    assert b" 408 " in reply.split(b"\r\n")[0] and b"did not arrive" in reply
    assert time.monotonic() - started < 12
