"""Ingestion: register -> parse -> chunk -> embed -> publish, each stage idempotent."""
