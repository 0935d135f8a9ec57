"""Embedded adapters: a folder (the metadata store is :mod:`citewell.metadata`, the search index :mod:`citewell.index`)."""
