"""The labelled answer set: its corpus builds in every format and every label is checkable.

Fast and model-free: it builds the corpus, parses it with the project's parsers and checks
each question's facts against the documents' extracted text.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.answerset import build as answerset
from citewell.parsers import parse

FORMATS = {".md", ".txt", ".csv", ".html", ".docx", ".xlsx", ".pdf"}


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("answerset")
    manifest = answerset.build(root)
    texts = {}
    for entry in manifest:
        data = (root / entry["path"]).read_bytes()
        texts[entry["path"]] = _norm(parse(data, Path(entry["path"]).name).text)
    return root, manifest, texts


@pytest.fixture(scope="module")
def questions():
    return answerset.questions()


def _current(manifest):
    """(tenant, document_id) -> the manifest entry of the version that stays active."""
    current = {}
    for entry in sorted(manifest, key=lambda e: e["stage"]):
        current[(entry["tenant"], entry["document_id"])] = entry
    return current


def _readable(manifest, tenant, roles):
    return [
        entry for entry in _current(manifest).values()
        if entry["tenant"] == tenant and set(entry["roles"]) & set(roles)
    ]


def test_manifest_files_exist_in_every_format(corpus):
    root, manifest, texts = corpus
    assert 16 <= len({(e["tenant"], e["document_id"]) for e in manifest}) <= 22
    for entry in manifest:
        assert set(entry) == {"path", "document_id", "tenant", "roles", "title", "stage"}
        assert (root / entry["path"]).is_file()
        assert entry["stage"] in (1, 2)
        assert entry["roles"] and all(isinstance(role, str) for role in entry["roles"])
        assert entry["title"] is None or isinstance(entry["title"], str)
        assert texts[entry["path"]]
    assert {Path(e["path"]).suffix for e in manifest} == FORMATS
    assert len({e["tenant"] for e in manifest}) == 2
    assert [e["stage"] for e in manifest] == sorted(e["stage"] for e in manifest)


def test_binary_formats_have_their_structure(corpus):
    import docx
    from openpyxl import load_workbook
    from pypdf import PdfReader

    root, manifest, _ = corpus
    by_suffix = Counter()
    for entry in manifest:
        data = (root / entry["path"]).read_bytes()
        suffix = Path(entry["path"]).suffix
        if suffix == ".xlsx":
            assert len(load_workbook(io.BytesIO(data)).sheetnames) == 2
        elif suffix == ".docx":
            assert docx.Document(io.BytesIO(data)).tables
        elif suffix == ".pdf":
            assert len(PdfReader(io.BytesIO(data)).pages) >= 3
        by_suffix[suffix] += 1
    assert all(by_suffix[suffix] >= 1 for suffix in FORMATS)


def test_revision_replaces_an_existing_document(corpus):
    _, manifest, texts = corpus
    stage1 = {(e["tenant"], e["document_id"]): e for e in manifest if e["stage"] == 1}
    revised = [e for e in manifest if e["stage"] == 2]
    assert revised
    for entry in revised:
        old = stage1[(entry["tenant"], entry["document_id"])]
        assert old["roles"] == entry["roles"] and texts[old["path"]] != texts[entry["path"]]


def test_questions_are_well_formed(corpus, questions):
    _, manifest, _ = corpus
    documents = {(e["tenant"], e["document_id"]) for e in manifest}
    assert len(questions) >= 180
    assert len({q["id"] for q in questions}) == len(questions)
    # The same question may be asked twice only under different roles (answered once, refused once).
    assert len({(q["tenant"], tuple(q["roles"]), q["question"].lower()) for q in questions}) == len(questions)
    for q in questions:
        follow_up = q["category"] == "follow_up"
        keys = answerset.FOLLOW_UP_KEYS if follow_up else answerset.CONDITION_KEYS if q["category"] == "conditions" else answerset.KEYS
        assert list(q) == list(keys), q["id"]
        if q["category"] == "conditions":
            assert isinstance(q["clarify"], bool) and not q["refuse"], q["id"]
        if follow_up:
            first = next(f for f in questions if f["id"] == q["follows"])
            assert first["category"] != "follow_up" and first["split"] == q["split"], q["id"]
            assert (first["tenant"], first["roles"]) == (q["tenant"], q["roles"]), q["id"]
            assert q["standalone"].strip() and q["standalone"] != q["question"], q["id"]
        assert isinstance(q["id"], str) and isinstance(q["question"], str) and q["question"].strip()
        assert q["split"] in answerset.SPLITS and q["category"] in answerset.CATEGORIES
        assert q["tenant"] in {tenant for tenant, _ in documents}
        for key in ("roles", "expected_documents", "must_contain", "must_not_contain"):
            assert isinstance(q[key], list) and all(isinstance(v, str) and v.strip() for v in q[key]), (q["id"], key)
        assert q["roles"]
        assert all(len(fact.strip()) >= 3 for fact in q["must_contain"]), q["id"]  # nothing that matches by chance
        assert isinstance(q["refuse"], bool)
        assert q["refuse"] == (q["category"] in answerset.REFUSING), q["id"]
        assert all((q["tenant"], doc) in documents for doc in q["expected_documents"]), q["id"]
        if q["refuse"]:
            assert q["must_contain"] == [], q["id"]
            assert bool(q["expected_documents"]) == (q["category"] == "forbidden"), q["id"]
        else:
            assert q["must_contain"] and q["expected_documents"], q["id"]


def test_splits_and_categories(questions):
    by_category = Counter(q["category"] for q in questions)
    assert set(by_category) == set(answerset.CATEGORIES)
    held_out = Counter(q["category"] for q in questions if q["split"] == "held_out")
    for category in answerset.CATEGORIES:
        assert by_category[category] >= 8 and held_out[category] >= 3, category
    share = sum(held_out.values()) / len(questions)
    assert 0.35 <= share <= 0.45
    for split in answerset.SPLITS:
        part = answerset.questions(split)
        assert part and all(q["split"] == split for q in part)
        assert sum(not q["refuse"] for q in part) / len(part) >= 0.4, split
    assert len(answerset.questions("tune")) + len(answerset.questions("held_out")) == len(questions)
    with pytest.raises(ValueError):
        answerset.questions("test")


def test_every_required_fact_is_verbatim_in_an_expected_document(corpus, questions):
    _, manifest, texts = corpus
    current = _current(manifest)
    for q in questions:
        expected = [texts[current[(q["tenant"], doc)]["path"]] for doc in q["expected_documents"]]
        for fact in q["must_contain"]:
            assert any(_norm(fact) in text for text in expected), (q["id"], fact)


def test_answerable_questions_are_readable_and_free_of_forbidden_strings(corpus, questions):
    _, manifest, texts = corpus
    current = _current(manifest)
    for q in questions:
        if q["refuse"]:
            continue
        for doc in q["expected_documents"]:
            assert set(current[(q["tenant"], doc)]["roles"]) & set(q["roles"]), (q["id"], doc)
        readable = [texts[e["path"]] for e in _readable(manifest, q["tenant"], q["roles"])]
        for banned in q["must_not_contain"]:
            assert not any(_norm(banned) in text for text in readable), (q["id"], banned)
            assert not any(_norm(banned) in _norm(fact) for fact in q["must_contain"]), (q["id"], banned)


def test_forbidden_answers_exist_only_where_the_caller_cannot_read(corpus, questions):
    _, manifest, texts = corpus
    current = _current(manifest)
    forbidden = [q for q in questions if q["category"] == "forbidden"]
    assert forbidden
    for q in forbidden:
        assert q["must_not_contain"], q["id"]
        secret_texts = []
        for doc in q["expected_documents"]:
            entry = current[(q["tenant"], doc)]
            assert not set(entry["roles"]) & set(q["roles"]), (q["id"], doc)
            secret_texts.append(texts[entry["path"]])
        readable = [texts[e["path"]] for e in _readable(manifest, q["tenant"], q["roles"])]
        for secret in q["must_not_contain"]:
            assert any(_norm(secret) in text for text in secret_texts), (q["id"], secret)
            assert not any(_norm(secret) in text for text in readable), (q["id"], secret)


def test_out_of_corpus_strings_are_not_in_the_callers_documents(corpus, questions):
    _, manifest, texts = corpus
    for q in questions:
        if q["category"] != "out_of_corpus":
            continue
        readable = [texts[e["path"]] for e in _readable(manifest, q["tenant"], q["roles"])]
        for banned in q["must_not_contain"]:
            assert not any(_norm(banned) in text for text in readable), (q["id"], banned)


def test_revision_questions_need_the_new_value_and_forbid_the_old(corpus, questions):
    _, manifest, texts = corpus
    versions = {}
    for entry in manifest:
        versions.setdefault((entry["tenant"], entry["document_id"]), {})[entry["stage"]] = texts[entry["path"]]
    revisions = [q for q in questions if q["category"] == "revision"]
    assert len(revisions) >= 8
    for q in revisions:
        assert q["must_not_contain"], q["id"]
        for doc in q["expected_documents"]:
            v1, v2 = versions[(q["tenant"], doc)][1], versions[(q["tenant"], doc)][2]
            for old in q["must_not_contain"]:
                assert _norm(old) in v1 and _norm(old) not in v2, (q["id"], old)
            for new in q["must_contain"]:
                assert _norm(new) in v2 and _norm(new) not in v1, (q["id"], new)


def test_every_document_is_asked_about(corpus, questions):
    _, manifest, _ = corpus
    asked = {(q["tenant"], doc) for q in questions for doc in q["expected_documents"]}
    assert {(e["tenant"], e["document_id"]) for e in manifest} <= asked
