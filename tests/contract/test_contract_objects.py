"""One contract for every ObjectStore adapter: the folder and S3 (moto, versioned bucket)."""

from __future__ import annotations

import pytest
from botocore.awsrequest import AWSResponse

from citewell.errors import InvalidInput, NotFound
from citewell.keys import chunks_key, document_prefix, parse_key, raw_key
from citewell.models.values import validate_document_id
from citewell.objects import STREAM_BLOCK
from citewell.objects.folder import FolderObjectStore
from citewell.objects.s3 import ObjectsNotDeleted
from tests.conftest import moto_bucket


@pytest.fixture(params=["folder", "s3"])
def store(request, tmp_path, monkeypatch):
    if request.param == "folder":
        yield FolderObjectStore(tmp_path / "objects")
        return
    with moto_bucket(monkeypatch) as bucket:
        yield bucket


def test_put_get_exists_list(store):
    store.put("raw/northpier/policies/leave.md", b"v1")
    store.put("raw/northpier/policies/leave.md", b"v2")
    store.put("raw/northpier/codes.csv", b"c")
    store.put("parsed/northpier/codes.csv/abc.json", b"{}")
    assert store.get("raw/northpier/policies/leave.md") == b"v2"
    assert store.exists("raw/northpier/codes.csv") and not store.exists("raw/northpier/absent.md")
    assert sorted(store.list("raw/northpier/")) == ["raw/northpier/codes.csv", "raw/northpier/policies/leave.md"]
    assert list(store.list("chunks/")) == []


def test_a_stream_gives_the_object_back_in_bounded_blocks_and_a_missing_key_at_once(store):
    data = bytes(range(256)) * (STREAM_BLOCK // 256 * 2 + 3)  # two full blocks and a part
    store.put("chunks/northpier/large.md/u1.json", data)
    blocks = list(store.stream("chunks/northpier/large.md/u1.json"))
    assert b"".join(blocks) == data and len(blocks) >= 3 and max(map(len, blocks)) <= STREAM_BLOCK
    with pytest.raises(NotFound):
        store.stream("chunks/northpier/absent.md/u1.json")  # raised by the call, before a block is asked for
    store.put("chunks/northpier/small.md/u1.json", b"one line\n")
    assert list(store.stream("chunks/northpier/small.md/u1.json")) == [b"one line\n"]
    store.put("chunks/northpier/empty.md/u1.json", b"")
    assert b"".join(store.stream("chunks/northpier/empty.md/u1.json")) == b""


def test_missing_keys_are_typed_and_delete_counts(store):
    with pytest.raises(NotFound):
        store.get("raw/northpier/absent.md")
    assert store.delete("raw/northpier/absent.md") == 0
    store.put("raw/northpier/a.md", b"one")
    store.put("raw/northpier/a.md", b"two")
    assert store.delete("raw/northpier/a.md") == 1
    assert not store.exists("raw/northpier/a.md") and list(store.list("raw/")) == []
    assert store.delete("raw/northpier/a.md") == 0


def test_s3_delete_removes_every_version(monkeypatch):
    with moto_bucket(monkeypatch, "citewell-versions") as s3:
        client = s3.client
        for body in (b"1", b"2", b"3"):
            s3.put("raw/t/doc.md", body)
        s3.put("raw/t/doc.md.bak", b"neighbour with the same prefix")
        assert s3.delete("raw/t/doc.md") == 1
        left = client.list_object_versions(Bucket="citewell-versions", Prefix="raw/t/doc.md")
        assert [v["Key"] for v in left.get("Versions", [])] == ["raw/t/doc.md.bak"]
        assert left.get("DeleteMarkers", []) == []


class KeptVersions:
    """S3 keeping versions it was asked to delete, as DeleteObjects reports it: 200, the others
    deleted, and each kept one in ``Errors`` (moto never fails a delete by itself). The first
    ``times`` calls keep the oldest version of each key."""

    def __init__(self, client, times: int, code: str = "InternalError") -> None:
        self.times, self.code, self.kept, self.sent = times, code, [], True
        client.meta.events.register("before-parameter-build.s3.DeleteObjects", self.keep)
        client.meta.events.register("before-call.s3.DeleteObjects", self.answer)
        client.meta.events.register("after-call.s3.DeleteObjects", self.report)

    def keep(self, params, **_):
        self.kept, self.sent = [], True
        if self.times <= 0:
            return
        self.times -= 1
        objects = params["Delete"]["Objects"]
        oldest = {}
        for item in objects:  # listed newest first: the last of each key is its oldest version
            oldest[item["Key"]] = item
        self.kept = list(oldest.values())
        deleted = [o for o in objects if o not in self.kept]
        self.sent = bool(deleted)  # S3 takes no empty list: with nothing to delete, answer without sending
        params["Delete"]["Objects"] = deleted or objects

    def answer(self, **_):
        if self.sent:
            return None
        return AWSResponse("https://s3.invalid/", 200, {}, None), {"ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}}}

    def report(self, parsed, **_):
        parsed.setdefault("Errors", []).extend(
            {"Key": o["Key"], "VersionId": o["VersionId"], "Code": self.code, "Message": "We encountered an internal error."}
            for o in self.kept)


def test_s3_delete_tries_again_what_s3_kept(monkeypatch):
    with moto_bucket(monkeypatch, "citewell-kept") as s3:
        for body in (b"1", b"2", b"3"):
            s3.put("raw/t/doc.md", body)
        refusing = KeptVersions(s3.client, times=1)
        assert s3.delete("raw/t/doc.md") == 1
        assert refusing.times == 0 and s3.client.list_object_versions(Bucket="citewell-kept").get("Versions", []) == []


def test_s3_delete_is_not_done_while_s3_keeps_a_version(monkeypatch):
    with moto_bucket(monkeypatch, "citewell-kept") as s3:
        for body in (b"1", b"2"):
            s3.put("raw/t/doc.md", body)
        KeptVersions(s3.client, times=10, code="AccessDenied")
        with pytest.raises(ObjectsNotDeleted, match="raw/t/doc.md.*AccessDenied"):
            s3.delete("raw/t/doc.md")
        left = s3.client.list_object_versions(Bucket="citewell-kept")["Versions"]
        assert [v["Key"] for v in left] == ["raw/t/doc.md"]  # the oldest version, which S3 kept


LONG_IDS = [
    ("規程" * 50),  # 300 bytes of UTF-8, 900 percent-encoded: the longest a non-Latin id may be
    "x" * 508 + "..",  # cut into pieces of a name's length, the last would be ".."
    "y" * 256,  # one byte over a name
    "x" * 253 + "..",  # 255: one name, as before chains existed
]


@pytest.mark.parametrize("document_id", LONG_IDS)
def test_ids_longer_than_a_file_name_are_stored_listed_and_deleted(store, tmp_path, document_id):
    upload = "0" * 32
    keys = [raw_key("northpier", document_id, upload), chunks_key("northpier", document_id, upload)]
    store.put(keys[0], b"raw bytes")
    store.put(keys[1], b"[]")
    store.put(raw_key("northpier", "y", upload), b"a neighbour")
    assert store.get(keys[0]) == b"raw bytes" and store.exists(keys[1])
    assert list(store.list(document_prefix("raw", "northpier", document_id))) == [keys[0]]
    assert parse_key(keys[1]).document_id == document_id
    assert sorted(store.list("")) == sorted([*keys, raw_key("northpier", "y", upload)])
    assert [store.delete(key) for key in keys] == [1, 1]
    assert list(store.list("")) == [raw_key("northpier", "y", upload)]
    if isinstance(store, FolderObjectStore):  # no folder named after the document is left
        assert sorted(p.name for p in (tmp_path / "objects").rglob("*")) == sorted(["raw", "northpier", "y", upload])


def test_a_temporary_inside_a_chain_is_listed_under_its_key(tmp_path):
    store = FolderObjectStore(tmp_path / "objects")
    key = raw_key("northpier", "規程" * 50, "0" * 32)
    store.put(key, b"raw bytes")
    folder = next(p for p in (tmp_path / "objects").rglob("*") if p.is_file()).parent
    assert len(folder.relative_to(tmp_path / "objects").parts) == 2 + 4  # raw, tenant, a chain of four
    (folder / ".tmp-killed").write_bytes(b"half")
    [(found, _)] = store.temporaries()
    assert found == document_prefix("raw", "northpier", "規程" * 50) + ".tmp-killed"
    assert store.delete(found) == 1 and store.delete(key) == 1 and list((tmp_path / "objects").iterdir()) == []


def test_an_id_over_900_bytes_percent_encoded_is_refused():
    validate_document_id("規程" * 50)
    with pytest.raises(ValueError, match="900 bytes percent-encoded"):
        validate_document_id("規程" * 50 + "x")
    with pytest.raises(InvalidInput):
        raw_key("northpier", "%" * 301, "0" * 32)
