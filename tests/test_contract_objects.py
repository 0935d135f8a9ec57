"""One contract for every ObjectStore adapter: the folder and S3 (moto, versioned bucket)."""

from __future__ import annotations

import pytest

from citewell.errors import NotFound
from citewell.local.objects import FolderObjectStore
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
