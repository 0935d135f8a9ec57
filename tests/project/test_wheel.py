"""What `pip install .` installs, and so what the Lambda layer packs: the wheel built from this
tree holds the citewell package alone. The benchmarks (benchmarks/ at the root) and the tests run
from a clone and must not reach a user's environment."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_the_citewell_package_and_no_benchmark_code(tmp_path):
    built = subprocess.run(  # the build backend is in the dev extra, so no network is needed
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
         "--disable-pip-version-check", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("citewell-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"citewell", wheel.name.split("-py3")[0] + ".dist-info"}
    assert [name for name in names if "benchmarks" in name or "answerset" in name] == []
    assert "citewell/answers/extractive/refusal_model.json" in names  # the fitted models the product reads at run time
    assert "citewell/answers/extractive/unit_encoder.onnx" in names  # and the encoder their cosine comes from
    assert "citewell/samples/__init__.py" in names  # make demo's sample files come from the package
