"""A persistent vector cache in front of an embedder, so benchmark reruns skip the model.

Keyed by the embedder's identity and the SHA-256 of the text: the same text under the same
model always gives the same vector, so a hit is exactly what the model would return. Used
only where the model's speed is not what is being measured (quality runs, corpus
building); the speed phases use the bare embedder, or this cache on purpose to take the
query embedding out of a timing.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from citewell.ports import Embedder


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """Same identity and vectors as ``inner``; texts seen before come from ``path``."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors (identity TEXT, key TEXT, vector BLOB, PRIMARY KEY (identity, key))"
        )
        self.memory: dict[str, np.ndarray] = {}
        self.model_texts = 0  # how many texts reached the model

    @property
    def identity(self) -> str:
        return self.inner.identity

    def __getattr__(self, name: str) -> object:  # count_tokens, dims, threads: the inner model's
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [_key(t) for t in texts]
        missing = [k for k in dict.fromkeys(keys) if k not in self.memory]
        for offset in range(0, len(missing), 500):
            part = missing[offset : offset + 500]
            rows = self.conn.execute(
                f"SELECT key, vector FROM vectors WHERE identity = ? AND key IN ({', '.join('?' * len(part))})",
                (self.identity, *part),
            )
            for key, blob in rows:
                self.memory[key] = np.frombuffer(blob, dtype=np.float32)
        fresh = {k: t for k, t in zip(keys, texts) if k not in self.memory}
        if fresh:
            vectors = self.inner.embed(list(fresh.values()))
            self.model_texts += len(fresh)
            self.conn.execute("BEGIN")
            self.conn.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(self.identity, k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in zip(fresh, vectors)],
            )
            self.conn.execute("COMMIT")
            self.memory.update(zip(fresh, np.asarray(vectors, dtype=np.float32)))
        if not texts:
            return np.zeros((0, getattr(self.inner, "dims", 0)), dtype=np.float32)
        return np.stack([self.memory[k] for k in keys])
