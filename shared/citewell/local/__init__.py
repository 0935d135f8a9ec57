"""Embedded adapters: a folder, SQLite metadata, and an SQLite index with tantivy and exact-vector lanes."""
