"""The README stays a short front page, and every relative link in it, in docs/ and in events/
points at a file that exists (and, with a #fragment, at a heading that file has)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from benchmarks.report import HEADLINE_END, HEADLINE_START

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, ROOT / "events" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 200

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text with fenced blocks and code spans taken out: links inside them are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    links = LINK.findall(prose(path.read_text(encoding="utf-8")))
    return [link for link in links if not re.match(r"^[a-z][a-z0-9+.-]*:", link, re.IGNORECASE)]


def test_the_readme_is_at_most_200_lines():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move detail into docs/"


def test_the_readme_names_the_first_run_and_the_test_command():
    text = README.read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text


def test_the_readme_keeps_the_block_make_bench_rewrites():
    text = README.read_text(encoding="utf-8")
    assert text.count(HEADLINE_START) == 1 and text.count(HEADLINE_END) == 1
    assert text.index(HEADLINE_START) < text.index(HEADLINE_END)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path):
    broken = []
    for link in relative_links(page):
        target, _, fragment = link.partition("#")
        file = (page.parent / unquote(target)).resolve() if target else page
        if not file.exists():
            broken.append(f"{link}: no {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif fragment and file.suffix == ".md" and unquote(fragment) not in anchors(file):
            broken.append(f"{link}: no heading #{fragment} in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_check_sees_links_and_headings():
    assert slug("Interleavings (`make fuzz`)") == "interleavings-make-fuzz"
    assert slug("Weak vector hits: 0.43") == "weak-vector-hits-043"
    assert slug("Ctrl-C and kill -9") == "ctrl-c-and-kill--9"
    assert relative_links(README), "the README links to its docs pages"
