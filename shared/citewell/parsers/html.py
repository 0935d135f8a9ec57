"""HTML through selectolax (lexbor): boilerplate dropped, headings become sections.

The tree is walked with an explicit stack, so nesting depth costs memory, not recursion.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from citewell.errors import CorruptFile
from citewell.models import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder
from citewell.parsers.records import record, record_text
from citewell.parsers.sniff import MIME, Kind
from citewell.parsers.titles import choose

BOILERPLATE = (
    "script, style, noscript, template, nav, footer, header, aside, form, iframe, svg, "
    "[role=navigation], [role=banner], [role=contentinfo], [aria-hidden=true]"
)
# Navigation and permalinks of the generators real manuals come from: GNU texinfo
# (nav-panel, older "header" bars are caught by their text), Sphinx (headerlink "¶",
# related bars, footer buttons), DocBook (navheader, navfooter) and breadcrumbs.
NAVIGATION = (
    "a.headerlink, .nav-panel, .navheader, .navfooter, .related, .sphinxsidebar, .rst-footer-buttons, "
    ".related-pages, .prev-next-area, .breadcrumb, .breadcrumbs, .wy-breadcrumbs"
)
_NAV_WORDS = frozenset({"next", "previous", "prev", "up", "top", "home", "contents", "index", "table", "of", "back"})
_LABEL = re.compile(r"\b(next|previous|prev|up)\s*:", re.IGNORECASE)
_WORDS = re.compile(r"[^\W\d_]+")
_NAV_HOLDERS = {"p", "div", "td", "tr", "table", "ul", "ol", "li", "center", "span"}
_PERMALINK = re.compile(r"[\s¶§#\u00b6\U0001f517]+$")
MAX_DEPTH = 100_000  # lexbor's own tree building slows down long before this

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_LEAF_KIND = {"li": BlockKind.LIST_ITEM, "dt": BlockKind.LIST_ITEM, "dd": BlockKind.LIST_ITEM}
_BLOCK_TAGS = {
    *_HEADINGS, "p", "li", "pre", "blockquote", "dl", "dt", "dd", "div", "section", "article", "main",
    "ul", "ol", "table", "figure", "figcaption", "details", "summary", "address", "center",
}


def _table(table: LexborNode, builder: TextBuilder) -> None:
    header: list[str] = []
    for tr in table.css("tr"):
        cells = [c for c in tr.iter() if c.tag in ("td", "th")]
        texts = [c.text(separator=" ").strip() for c in cells]
        if not header and cells and all(c.tag == "th" for c in cells):
            header = texts
            continue
        builder.block(BlockKind.TABLE_ROW, record_text(header, texts))


# A definition whose description holds more than text (an example, a table, a nested list) is
# read as before: its term and description as list items, the description's blocks walked.
_COMPLEX = "pre, table, ul, ol, dl, h1, h2, h3, h4, h5, h6, blockquote"
DEFINITION_WORDS = 110  # as a man page's option record: a description a chunk holds whole


def _definitions(dl: LexborNode, builder: TextBuilder) -> None:
    """A definition list (``<dl>``: a manual's functions, types, options or terms): each term
    with its plain description as one record, ``term: ffi_type_pointer; description: A generic
    void * pointer...``, so the description is never read apart from what it defines."""
    terms: list[str] = []
    for child in dl.iter():
        if child.tag == "dt":
            terms.append(_PERMALINK.sub("", " ".join(child.text(separator="").split())))  # "synth()", not "synth ( )"
        elif child.tag == "dd":
            paragraphs = child.css("p")  # paragraphs apart, inline markup ("<code>void</code>.") kept tight
            described = " ".join(" ".join((p.text(separator="") for p in paragraphs) if len(paragraphs) > 1
                                          else [child.text(separator="")]).split())
            plain = child.css_first(_COMPLEX) is None and len(described.split()) <= DEFINITION_WORDS
            term = ", ".join(t for t in terms if t)
            if plain and term and described:
                builder.block(BlockKind.RECORD, record([("term", term), ("description", described)]))
            else:
                for text in terms:
                    builder.block(BlockKind.LIST_ITEM, text)
                _walk(child, builder)
            terms = []
    for text in terms:  # terms with no description
        builder.block(BlockKind.LIST_ITEM, text)


def _drop_navigation(tree: LexborHTMLParser) -> None:
    """Remove navigation bars: by the classes generators give them, and by their text (a
    short block of links whose words are all Next/Previous/Up/Contents/Index)."""
    for node in tree.css(NAVIGATION):
        node.decompose()
    holders: dict[int, LexborNode] = {}
    for link in tree.css("a"):
        holder = link.parent
        for _ in range(3):  # the bar is the link's nearest block-ish ancestor
            if holder is None or holder.tag in _NAV_HOLDERS:
                break
            holder = holder.parent
        if holder is not None and holder.tag in _NAV_HOLDERS and holder.mem_id not in holders:
            holders[holder.mem_id] = holder
    for holder in holders.values():
        if _is_nav_bar(holder):
            holder.decompose()


def _is_nav_bar(holder: LexborNode) -> bool:
    """Only navigation words outside the links ("Next: <a>X</a>, Up: <a>Y</a> [<a>Index</a>]",
    "<a>« Previous</a> | <a>Next »</a>"); every link is labelled or is itself a navigation
    word. Prose that says "Next: run the migration" or links "Next steps" is kept."""
    residue = holder.text(separator=" ")
    if len(residue) > 400:
        return False
    labelled = nav_links = other_links = 0
    for link in holder.css("a"):
        label = link.text(separator=" ").strip()
        residue = residue.replace(label, " ", 1) if label else residue
        words = _WORDS.findall(label.lower())
        if words and set(words) <= _NAV_WORDS:
            nav_links += 1
        else:
            other_links += 1
    labelled = len(_LABEL.findall(residue))
    if not set(_WORDS.findall(residue.lower())) <= _NAV_WORDS:
        return False
    return labelled + nav_links > 0 and other_links <= labelled


def _heading_text(node: LexborNode) -> str:
    return _PERMALINK.sub("", node.text(separator=" ").strip())


def _walk(root: LexborNode, builder: TextBuilder) -> None:
    """Block elements become blocks; runs of inline content between them become one paragraph
    (a list item's own text a list item). Depth-first with an explicit stack."""
    inline: list[str] = []
    open_kinds: list[BlockKind] = [BlockKind.PARAGRAPH]

    def flush() -> None:
        builder.block(open_kinds[-1], "".join(inline))
        inline.clear()

    stack: list[tuple[LexborNode, bool]] = [(c, False) for c in reversed(list(root.iter(include_text=True)))]
    while stack:
        node, leaving = stack.pop()
        tag = node.tag
        if leaving:
            flush()
            open_kinds.pop()
            continue
        if tag == "-text":
            inline.append(node.text(deep=False) or "")
            continue
        if tag not in _BLOCK_TAGS:
            inline.append(node.text(separator=""))
            continue
        flush()
        if tag in _HEADINGS:
            builder.heading(_HEADINGS[tag], _heading_text(node))
        elif tag == "table":
            _table(node, builder)
        elif tag == "dl":
            _definitions(node, builder)
        elif tag == "pre":
            builder.block(BlockKind.CODE, node.text(separator=""))
        else:
            if len(open_kinds) > MAX_DEPTH:
                raise CorruptFile(f"the HTML nests elements more than {MAX_DEPTH:,} levels deep")
            open_kinds.append(_LEAF_KIND.get(tag, BlockKind.PARAGRAPH))
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(list(node.iter(include_text=True))))
    flush()


def fragment(html: str, builder: TextBuilder) -> None:
    """Blocks of an HTML fragment (a Markdown file's raw HTML): its text, tables as records;
    comments and markup are not text."""
    tree = LexborHTMLParser(html)
    for node in tree.css(BOILERPLATE):
        node.decompose()
    for br in tree.css("br"):
        br.replace_with(" ")
    if tree.body is not None:
        _walk(tree.body, builder)


def parse_html(text: str) -> ParsedDocument:
    tree = LexborHTMLParser(text)
    title_node = tree.css_first("head > title")
    title = title_node.text(strip=True) if title_node else None
    for node in tree.css(BOILERPLATE):
        node.decompose()
    _drop_navigation(tree)
    for br in tree.css("br"):
        br.replace_with(" ")
    builder = TextBuilder()
    if tree.body is not None:
        _walk(tree.body, builder)
    return builder.build(MIME[Kind.HTML], title=choose(title, builder.top_heading))
