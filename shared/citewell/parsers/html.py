"""HTML through selectolax (lexbor): boilerplate dropped, headings become sections.

XHTML (an XML declaration, or a root in XHTML's namespace) is read by the same parser once
XML's syntax is spelled as HTML's: ``<script src="x.js"/>`` is an empty element in XML but opens
one in HTML, which would swallow the page, so ``<tag/>`` becomes ``<tag></tag>``, and a CDATA
section becomes the text it holds.

A table is a data table (each row a record) unless it lays the page out: it holds another table,
a heading or a form, is one cell around blocks (a box), or says ``role="presentation"``. A
layout table's cells are read as blocks, so a page built of nested tables is read once, not
once per table around it; and a cell of links beside a larger cell (a site's menu column) is
navigation. Navigation is also what generators mark (classes), bars of Next/Previous/Up links,
and a bar of links that the page repeats verbatim (the same bar at its top and bottom).

The tree is walked with an explicit stack, so nesting depth costs memory, not recursion; what
is counted of an element (its tables, its links) is counted once, so depth costs no square.
"""

from __future__ import annotations

import re
from collections import Counter
from html import escape

from selectolax.lexbor import LexborHTMLParser, LexborNode

from citewell.errors import CorruptFile, UndecodableText
from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder
from citewell.parsers.encoding import decode
from citewell.parsers.records import record, record_text
from citewell.parsers.sniff import MIME, XHTML_NAMESPACE, Kind, markup_head, markup_root
from citewell.parsers.titles import choose

BOILERPLATE = (
    "script, style, noscript, template, nav, footer, header, aside, form, iframe, svg, "
    "[role=navigation], [role=banner], [role=contentinfo], [aria-hidden=true]"
)
# Navigation and permalinks of the generators real manuals come from: GNU texinfo
# (nav-panel, older "header" bars are caught by their text), Sphinx (headerlink "¶",
# related bars, footer buttons), DocBook (navheader, navfooter), gtk-doc (a navigation table)
# and breadcrumbs.
NAVIGATION = (
    "a.headerlink, .nav-panel, .navheader, .navfooter, table.navigation, table[summary^='Navigation'], .related, "
    ".sphinxsidebar, .rst-footer-buttons, .related-pages, .prev-next-area, .breadcrumb, .breadcrumbs, .wy-breadcrumbs"
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
    "tbody", "thead", "tfoot", "tr", "td", "th", "caption",  # reached only inside a layout table
}

_BLOCKS_IN_ROW = ", ".join(sorted(_BLOCK_TAGS - {"tr", "td", "th", "center"}))

# XML's syntax where HTML's differs: an element closed in its start tag, and CDATA sections.
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr", "basefont", "frame", "keygen"})
_SELF_CLOSED = re.compile(r"""<([A-Za-z][\w:.-]*)((?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)\s*/>""")
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)
_ROOT_TAG = re.compile(r"<(?:[A-Za-z_][\w.-]*:)?html\b[^>]*>", re.IGNORECASE)


def is_xhtml(markup: str | bytes) -> bool:
    """HTML written as XML: an XML declaration opens it, or its ``<html>`` declares XHTML's namespace."""
    if markup_root(markup) != "html":
        return False
    head = markup_head(markup).lstrip(" \t\r\n")
    if head.startswith("<?xml"):
        return True
    root = _ROOT_TAG.search(head)
    return root is not None and XHTML_NAMESPACE in root.group(0)


def as_html(markup: str) -> str:
    """``markup`` in HTML's syntax: XHTML's self-closed elements opened and closed, its CDATA
    sections as escaped text; other HTML as it is."""
    if not is_xhtml(markup):
        return markup

    def opened_and_closed(match: re.Match[str]) -> str:
        name = match.group(1)
        return match.group(0) if name.lower() in _VOID else f"<{name}{match.group(2)}></{name}>"

    markup = _CDATA.sub(lambda match: escape(match.group(1), quote=False), markup)
    return _SELF_CLOSED.sub(opened_and_closed, markup)


def html_tree(markup: str | bytes) -> LexborHTMLParser:
    """The parsed page; XHTML through :func:`as_html`, its bytes decoded as a file's text is
    (other bytes are lexbor's to decode, as they always were)."""
    if isinstance(markup, bytes):
        if not is_xhtml(markup):
            return LexborHTMLParser(markup)
        try:
            markup = decode(markup)[0]
        except UndecodableText:
            return LexborHTMLParser(markup)
    return LexborHTMLParser(as_html(markup))


_BOXED = "p, ul, ol, dl, pre, blockquote, div, center"
_LAYOUT_SIGNS = {"table", "form", *_HEADINGS}


class _Tables:
    """Each element's table (the nearest around it), and which tables lay the page out rather
    than hold data: one that holds another table, a heading or a form, one that is a single cell
    around blocks (a box), one that says it is for presentation. Decided once per page, each
    element's way up walked once."""

    def __init__(self, tree: LexborHTMLParser) -> None:
        self._owner: dict[int, LexborNode | None] = {}
        self.layout: set[int] = set()
        cells: dict[int, list[LexborNode]] = {}
        for node in tree.css("table, td, th, form, h1, h2, h3, h4, h5, h6"):
            owner = self.owner(node)
            if owner is None:
                continue
            if node.tag in _LAYOUT_SIGNS:
                self.layout.add(owner.mem_id)
            else:
                cells.setdefault(owner.mem_id, []).append(node)
        for table in tree.css("table"):
            if table.mem_id in self.layout:
                continue
            own = cells.get(table.mem_id, [])
            if ((table.attributes.get("role") or "").lower() in ("presentation", "none")
                    or (len(own) == 1 and own[0].css_first(_BOXED) is not None)):
                self.layout.add(table.mem_id)

    def owner(self, node: LexborNode) -> LexborNode | None:
        """The nearest table around ``node`` (not ``node`` itself)."""
        path: list[int] = []
        above = node.parent
        found: LexborNode | None = None
        while above is not None:
            if above.tag == "table":
                found = above
                break
            if above.mem_id in self._owner:
                found = self._owner[above.mem_id]
                break
            path.append(above.mem_id)
            above = above.parent
        for mem_id in (node.mem_id, *path):
            self._owner[mem_id] = found
        return found

    def lays_out(self, table: LexborNode) -> bool:
        return table.mem_id in self.layout


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


def _definitions(dl: LexborNode, builder: TextBuilder, tables: _Tables) -> None:
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
                _walk(child, builder, tables)
            terms = []
    for text in terms:  # terms with no description
        builder.block(BlockKind.LIST_ITEM, text)


def _drop_navigation(tree: LexborHTMLParser) -> _Tables:
    """Remove navigation bars: by the classes generators give them, by their text (a short
    block of links whose words are all Next/Previous/Up/Contents/Index), a layout table's menu
    column, and bars of links the page repeats. The page's tables, as they were laid out."""
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
    links = _Links()
    bars = [holder for holder in holders.values()
            if links.of(holder)[1] <= NAV_BAR_CHARS and _is_nav_bar(holder)]  # counted first: a bar is short
    for bar in _outermost(bars):
        links.remove(bar)
    tables = _Tables(tree)
    _drop_menu_columns(tree, tables, links)
    _drop_repeated_links(tree, tables, links)
    return tables


NAV_BAR_CHARS = 400  # a Next/Previous/Up bar is shorter than this
MENU_LINKS = 5  # a cell of at least this many links, ...
MENU_SHARE = 0.7  # ... whose text is at least this much link text, beside a larger cell, is a menu column
LINK_SHARE = 0.5  # a block whose text is at least this much link text is a block of links
BAR_LEVELS = 32  # how far above its links a bar is looked for
BAR_LINKS = 100  # a bar holds at most this many links ...
BAR_CHARS = 3000  # ... and this many characters (a site's whole menu, say)
_NOT_LINKS = {"body", "html", *_HEADINGS}
_LINK_BLOCKS = {"p", "div", "table", "center", "nav", "blockquote", "section"}
_LISTS = {"ul", "ol", "dl", "menu"}  # a list of links is a block when it has items; one item is a line of its own
_CELLS = {"td", "th", "tr", "tbody", "thead", "tfoot"}  # blocks of their own in a layout table only
_CODE = "code, tt, kbd, samp, var"
_BETWEEN_LINKS = _NAV_WORDS | {"jump", "go", "to", "page", "pages"}


class _Links:
    """How much of an element's text is the text of its links: summed from its children's
    counts, so each element is counted once however deep the page."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[int, int, int]] = {}

    def of(self, node: LexborNode) -> tuple[int, int, int]:
        """``(characters in links, characters, links)``, whitespace not counted."""
        if node.mem_id in self._seen:
            return self._seen[node.mem_id]
        stack: list[tuple[LexborNode, list[LexborNode] | None]] = [(node, None)]
        while stack:
            current, children = stack.pop()
            if children is None:  # going down: its elements are counted first
                if current.mem_id in self._seen:
                    continue
                children = list(current.iter(include_text=True))
                stack.append((current, children))
                stack.extend((child, None) for child in children if child.tag != "-text")
                continue
            linked = chars = links = 0
            for child in children:
                if child.tag == "-text":
                    chars += len("".join((child.text(deep=False) or "").split()))
                else:
                    below = self._seen.get(child.mem_id, (0, 0, 0))
                    linked, chars, links = linked + below[0], chars + below[1], links + below[2]
            if current.tag == "a" and current.attributes.get("href") is not None:
                linked, links = chars, links + 1
            self._seen[current.mem_id] = (linked, chars, links)
        return self._seen[node.mem_id]

    def remove(self, node: LexborNode) -> None:
        """Take ``node`` out of the page, and its count out of the elements above it (they are
        counted again when asked; an element not counted has no counted element above it)."""
        above = node.parent
        while above is not None and self._seen.pop(above.mem_id, None) is not None:
            above = above.parent
        node.decompose()

    def mostly(self, node: LexborNode, share: float = LINK_SHARE) -> bool:
        linked, chars, links = self.of(node)
        return links > 0 and chars > 0 and linked >= share * chars


def _outermost(nodes: list[LexborNode]) -> list[LexborNode]:
    """``nodes`` without those inside another of them (removing the outer one removes them);
    each element's way up walked once."""
    ids = {node.mem_id for node in nodes}
    covered: dict[int, bool] = {}  # an element: whether one of ``nodes`` is above it
    kept = []
    for node in nodes:
        path: list[int] = []
        above = node.parent
        inside = False
        while above is not None:
            if above.mem_id in ids or above.mem_id in covered:
                inside = above.mem_id in ids or covered[above.mem_id]
                break
            path.append(above.mem_id)
            above = above.parent
        covered.update(dict.fromkeys(path, inside))
        if not inside:
            kept.append(node)
    return kept


def _drop_menu_columns(tree: LexborHTMLParser, tables: _Tables, links: _Links) -> None:
    """In a layout table, a cell of links beside a larger cell is the site's menu: its column of
    Home, Documentation, Downloads... on every page, not the page's text."""
    menus: list[LexborNode] = []
    for row in tree.css("tr"):
        table = tables.owner(row)
        if table is None or not tables.lays_out(table):
            continue
        cells = [cell for cell in row.iter() if cell.tag in ("td", "th")]
        sizes = [links.of(cell)[1] for cell in cells]
        for cell, size in zip(cells, sizes):
            if links.of(cell)[2] >= MENU_LINKS and links.mostly(cell, MENU_SHARE) and max(sizes) > size:
                menus.append(cell)
    for cell in _outermost(menus):
        links.remove(cell)


def _drop_repeated_links(tree: LexborHTMLParser, tables: _Tables, links: _Links) -> None:
    """A bar of links that the page holds more than once, verbatim (its text and where its
    links lead), is navigation: the same bar at the top and the bottom of each page. A link's
    bar is the largest block around it that is still mostly links, with two links or more and
    only navigation words and marks between them ("Contents | Index", "[ 1 ] [ 2 ]", "Jump to:
    A B C"): a line of type links under each parameter ("<number> | <bigint>") names something,
    a list of links said once stays, and a cell of a data table is never taken out of its row."""

    def unit(node: LexborNode) -> bool:
        if node.tag in _LINK_BLOCKS:
            return True
        if node.tag in _LISTS:
            return sum(1 for item in node.iter() if item.tag in ("li", "dt")) > 1
        table = tables.owner(node) if node.tag in _CELLS else None
        return table is not None and tables.lays_out(table)

    blocks: dict[int, LexborNode] = {}
    for link in tree.css("a[href]"):
        block = None
        above: LexborNode | None = link
        for _ in range(BAR_LEVELS):
            if above is None or above.tag in _NOT_LINKS or not links.mostly(above):
                break
            if unit(above):  # a bar, a list, a layout cell: never a link inside a sentence
                block = above
            above = above.parent
        if block is not None and above is not None and above.tag not in _HEADINGS:
            blocks.setdefault(block.mem_id, block)
    seen: dict[tuple[str, tuple[str, ...]], list[LexborNode]] = {}
    for block in blocks.values():
        _, chars, count = links.of(block)
        if not 2 <= count <= BAR_LINKS or chars > BAR_CHARS:  # one link is no bar; a page of links is no bar
            continue
        anchors = block.css("a[href]")
        if block.css_first(_CODE) is not None:  # links to what code names
            continue
        said = Counter(_WORDS.findall(block.text(separator=" ").lower()))
        for anchor in anchors:
            said.subtract(_WORDS.findall(anchor.text(separator=" ").lower()))
        if any(count > 0 and word not in _BETWEEN_LINKS for word, count in said.items()):
            continue
        text = " ".join(block.text(separator=" ").split())
        seen.setdefault((text, tuple(a.attributes.get("href") or "" for a in anchors)), []).append(block)
    repeated = [block for found in seen.values() if len(found) > 1 for block in found]
    for block in _outermost(repeated):
        links.remove(block)


def _is_nav_bar(holder: LexborNode) -> bool:
    """Only navigation words outside the links ("Next: <a>X</a>, Up: <a>Y</a> [<a>Index</a>]",
    "<a>« Previous</a> | <a>Next »</a>"); every link is labelled or is itself a navigation
    word. Prose that says "Next: run the migration" or links "Next steps" is kept."""
    residue = holder.text(separator=" ")
    if len(residue) > NAV_BAR_CHARS:
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


def _walk(root: LexborNode, builder: TextBuilder, tables: _Tables) -> None:
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
        elif tag == "table" and not tables.lays_out(node):
            _table(node, builder)
        elif tag == "tr" and node.css_first(_BLOCKS_IN_ROW) is None:  # a layout row of text: one line
            builder.block(BlockKind.PARAGRAPH, " ".join(cell.text(separator="") for cell in node.iter()))
        elif tag == "dl":
            _definitions(node, builder, tables)
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
        _walk(tree.body, builder, _Tables(tree))


def parse_html(text: str) -> ParsedDocument:
    tree = html_tree(text)
    title_node = tree.css_first("head > title")
    title = title_node.text(strip=True) if title_node else None
    for node in tree.css(BOILERPLATE):
        node.decompose()
    tables = _drop_navigation(tree)
    for br in tree.css("br"):
        br.replace_with(" ")
    builder = TextBuilder()
    if tree.body is not None:
        _walk(tree.body, builder, tables)
    return builder.build(MIME[Kind.HTML], title=choose(title, builder.top_heading))
