"""HTML through selectolax (lexbor): boilerplate dropped, headings become sections."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser, LexborNode

from citewell.models import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder
from citewell.parsers.sniff import MIME, Kind

BOILERPLATE = (
    "script, style, noscript, template, nav, footer, header, aside, form, iframe, svg, "
    "[role=navigation], [role=banner], [role=contentinfo], [aria-hidden=true]"
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_LEAF_KIND = {"li": BlockKind.LIST_ITEM, "dt": BlockKind.LIST_ITEM, "dd": BlockKind.LIST_ITEM}
_BLOCK_TAGS = {
    *_HEADINGS, "p", "li", "pre", "blockquote", "dl", "dt", "dd", "div", "section", "article", "main",
    "ul", "ol", "table", "figure", "figcaption", "details", "summary", "address", "center",
}
_HAS_BLOCK = ", ".join(sorted(_BLOCK_TAGS))


def _table(table: LexborNode, builder: TextBuilder) -> None:
    header: list[str] = []
    for tr in table.css("tr"):
        cells = [c for c in tr.iter() if c.tag in ("td", "th")]
        texts = [c.text(separator=" ").strip() for c in cells]
        if not header and cells and all(c.tag == "th" for c in cells):
            header = texts
            continue
        pairs = [f"{h}: {v}" if h else v for h, v in zip(header + [""] * len(texts), texts) if v]
        builder.block(BlockKind.TABLE_ROW, "; ".join(pairs))


def _walk(node: LexborNode, builder: TextBuilder) -> None:
    """Block children become blocks; runs of inline content between them become one paragraph."""
    inline: list[str] = []

    def flush() -> None:
        builder.block(BlockKind.PARAGRAPH, "".join(inline))
        inline.clear()

    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            inline.append(child.text(deep=False) or "")
            continue
        if tag not in _BLOCK_TAGS:
            inline.append(child.text(separator=""))
            continue
        flush()
        if tag in _HEADINGS:
            builder.heading(_HEADINGS[tag], child.text(separator=" "))
        elif tag == "table":
            _table(child, builder)
        elif tag == "pre":
            builder.block(BlockKind.CODE, child.text(separator=""))
        elif child.css_first(_HAS_BLOCK) is not None:
            _walk(child, builder)
        else:
            builder.block(_LEAF_KIND.get(tag, BlockKind.PARAGRAPH), child.text(separator=""))
    flush()


def parse_html(text: str) -> ParsedDocument:
    tree = LexborHTMLParser(text)
    title_node = tree.css_first("head > title")
    title = title_node.text(strip=True) if title_node else None
    for node in tree.css(BOILERPLATE):
        node.decompose()
    for br in tree.css("br"):
        br.replace_with(" ")
    builder = TextBuilder()
    if tree.body is not None:
        _walk(tree.body, builder)
    return builder.build(MIME[Kind.HTML], title=title or None)
