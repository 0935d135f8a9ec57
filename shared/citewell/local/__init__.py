"""Embedded adapters: a folder and SQLite metadata (the search index is :mod:`citewell.index`)."""
