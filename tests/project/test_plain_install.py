"""`pip install citewell` without extras: the CLI says in one line which extra to install.

A fresh virtual environment holding only citewell and its own dependencies (pydantic,
numpy), linked from the test environment so that no network is needed.
"""

from __future__ import annotations

import json
import subprocess
import sysconfig
import venv
from pathlib import Path

import numpy
import pydantic
import pytest

import citewell

CORE = ["pydantic", "pydantic_core", "pydantic_settings", "dotenv", "annotated_types", "typing_extensions.py", "typing_inspection",
        "numpy", "numpy.libs"]


@pytest.fixture(scope="module")
def plain_python(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    venv.EnvBuilder(with_pip=False).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    installed = Path(sysconfig.get_paths()["purelib"])
    assert Path(pydantic.__file__).is_relative_to(installed) and Path(numpy.__file__).is_relative_to(installed)
    for name in CORE:
        if (installed / name).exists():
            (purelib / name).symlink_to(installed / name)
    (purelib / "citewell.pth").write_text(str(Path(citewell.__file__).parent.parent) + "\n")  # as `pip install -e .`
    return python


def cli(python: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "citewell", *argv], capture_output=True, text=True, check=False)


def test_the_plain_environment_lacks_the_extras(plain_python):
    probe = subprocess.run([plain_python, "-c", "import rich"], capture_output=True, text=True, check=False)
    assert "No module named 'rich'" in probe.stderr
    assert cli(plain_python, "--version").stdout.strip() == f"citewell {citewell.__version__}"
    assert cli(plain_python, "--help").returncode == 0


@pytest.mark.parametrize("argv", [
    ["ingest", "{file}", "--tenant", "northpier", "--allow-roles", "staff"],
    ["search", "annual leave", "--tenant", "northpier", "--roles", "staff"],
    ["ask", "How many days of leave?", "--tenant", "northpier", "--roles", "staff"],
    ["docs", "--tenant", "northpier"],
    ["delete", "leave.md", "--tenant", "northpier"],
    ["audit"],
    ["mcp", "--tenant", "northpier", "--roles", "staff"],
])
def test_every_command_works_or_names_the_extra_in_one_line(plain_python, tmp_path, argv):
    (tmp_path / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    argv = [a.replace("{file}", str(tmp_path / "leave.md")) for a in argv]
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "metadata.db").touch()  # a home to read: reading one that is not there is another error
    for output in ([], ["--json"]):
        done = cli(plain_python, "--home", str(tmp_path / "home"), *argv, *output)
        assert "Traceback" not in done.stderr and done.stderr.count("\n") <= 1, done.stderr
        missing = "not installed" in done.stderr
        if argv[0] in ("ingest", "search", "ask", "mcp"):  # these always need the parsers, the model or the MCP SDK
            assert missing
        if missing:
            assert done.returncode == 2 and "pip install 'citewell[local]'" in done.stderr, done.stderr
            if output:
                assert json.loads(done.stdout)["error"]["code"] == "missing_extra"
        elif output:  # the stores alone served it: a result, or delete's "no such document"
            assert json.loads(done.stdout).get("error", {"code": "not_found"})["code"] == "not_found"
