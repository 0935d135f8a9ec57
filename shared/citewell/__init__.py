"""citewell: a permission-aware knowledge base that answers with citations."""

__version__ = "0.1.0"
