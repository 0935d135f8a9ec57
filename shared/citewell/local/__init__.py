"""Embedded adapters: a folder, SQLite metadata and an SQLite FTS5 + exact-vector index."""
