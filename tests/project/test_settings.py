"""Every CITEWELL_* setting lives in one typed model, and a bad value is named, not a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from citewell.settings import InvalidSetting, Settings, settings

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"CITEWELL_[A-Z][A-Z0-9_]*[A-Z0-9]\b")  # not a family such as CITEWELL_JWT_*
NOT_SETTINGS = {"CITEWELL_SYNTH_ONLY", "CITEWELL_SCREENSHOTS"}  # the CDK app's and the browser tests' switches


def _fields() -> set[str]:
    return {f"CITEWELL_{name.upper()}" for name in Settings.model_fields}


def test_every_variable_the_package_or_its_docs_name_is_a_field_of_the_one_model():
    named = {m for path in (ROOT / "shared" / "citewell").rglob("*.py") for m in NAME.findall(path.read_text())}
    named |= {m for path in (ROOT / "docs").glob("*.md") for m in NAME.findall(path.read_text())}
    named -= NOT_SETTINGS
    assert named, "the scan found no setting at all"
    assert named - _fields() == set(), "named outside citewell.settings, or a typo in the docs"


def test_the_documented_table_lists_every_field():
    documented = set(NAME.findall((ROOT / "docs" / "configuration.md").read_text()))
    assert _fields() - documented == set()


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("CITEWELL_MAX_BYTES", "abc", "a whole number of bytes from 1, not 'abc'"),
    ("CITEWELL_MAX_BYTES", "0", "a whole number of bytes from 1, not '0'"),
    ("CITEWELL_CHUNK_TOKENS", "3", "from 16 to 4096"),
    ("CITEWELL_BUSY_SECONDS", "soon", "a number of seconds from 0, not 'soon'"),
    ("CITEWELL_READ_SECONDS", "-1", "a number of seconds above 0 and under a day, not '-1'"),
    ("CITEWELL_GENERATOR", "gpt", "extractive, openai or bedrock, not 'gpt'"),
    ("CITEWELL_LANES", "bm25,vectr", "bm25, vector or both, separated by commas"),
    ("CITEWELL_LANES", ",", "bm25, vector or both"),
    ("CITEWELL_EMBEDDER", "titan", "bedrock, openai or minilm"),
    ("CITEWELL_PUBLIC_URL", "https://kb.example.org/path", "http(s)://host[:port], not 'https://kb.example.org/path'"),
])
def test_a_value_a_setting_cannot_take_names_the_variable_and_what_it_takes(monkeypatch, variable, value, says):
    monkeypatch.setenv(variable, value)
    with pytest.raises(InvalidSetting) as raised:
        settings()
    assert raised.value.message.startswith(f"{variable} must be ") and says in raised.value.message


def test_every_bad_variable_is_named_at_once(monkeypatch):
    monkeypatch.setenv("CITEWELL_MAX_BYTES", "x")
    monkeypatch.setenv("CITEWELL_EMBED_THREADS", "-2")
    with pytest.raises(InvalidSetting, match="CITEWELL_EMBED_THREADS.*CITEWELL_MAX_BYTES|CITEWELL_MAX_BYTES.*CITEWELL_EMBED_THREADS"):
        settings()


def test_values_are_typed_and_follow_the_environment(monkeypatch):
    monkeypatch.delenv("CITEWELL_LANES", raising=False)
    assert settings().lanes == ("bm25", "vector")
    monkeypatch.setenv("CITEWELL_LANES", " BM25 ")
    monkeypatch.setenv("CITEWELL_MAX_BYTES", "64")
    monkeypatch.setenv("CITEWELL_GENERATOR", "OpenAI")
    found = settings()
    assert (found.lanes, found.max_bytes, found.generator) == (("bm25",), 64, "openai")
    assert settings() is found  # the same environment is read once
    monkeypatch.setenv("CITEWELL_MAX_BYTES", "")  # empty is unset: the default
    assert settings().max_bytes == 50 * 1024 * 1024


def test_a_generator_without_its_endpoint_says_which_variable_is_missing(monkeypatch):
    from citewell.answers.config import generator_from_env

    monkeypatch.setenv("CITEWELL_GENERATOR", "openai")
    monkeypatch.delenv("CITEWELL_OPENAI_BASE_URL", raising=False)
    with pytest.raises(InvalidSetting, match="CITEWELL_OPENAI_BASE_URL must be set"):
        generator_from_env(None)  # type: ignore[arg-type]


def test_the_cli_stops_every_command_with_the_variable_named(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT / 'shared'}:{ROOT}", "CITEWELL_MAX_BYTES": "abc"}
    for command in (["docs", "--tenant", "t"], ["search", "leave", "--tenant", "t", "--roles", "staff", "--json"]):
        run = subprocess.run([sys.executable, "-m", "citewell", "--home", str(tmp_path), *command],
                             capture_output=True, text=True, env=env, timeout=60)
        assert run.returncode == 2, run.stderr
        assert "CITEWELL_MAX_BYTES must be a whole number of bytes from 1, not 'abc'" in run.stderr
        assert "Traceback" not in run.stderr
        if "--json" in command:
            assert json.loads(run.stdout)["error"]["code"] == "invalid_setting"
