"""The answer verifier: a cross-encoder that reads a question with one unit and says whether
the unit holds its answer.

The term and embedding features score a unit by what it shares with the question; they cannot
tell "Default - 10" under ``max_concurrent_requests`` from the option's first sentence, or team A's
README from team B's. The verifier reads the question and the unit together, the unit preceded
by where it stands (document path, title, section, the question a FAQ asks before it), so the
words that single out a source count even when they are only in its path.

It is all-MiniLM-L6-v2 fine-tuned here as a pair classifier (``benchmarks/train_verifier.py``),
shipped as int8 ONNX (``verifier.onnx``) and run on onnxruntime with the packaged MiniLM
tokenizer (the same uncased vocabulary). Nothing is downloaded at run time. (It checks a unit
before an answer is built; ``citewell.answers.verify`` checks any generator's draft after.)
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from citewell.embedders.minilm import onnx_threads, plain_tokenizer

if TYPE_CHECKING:  # the trainer imports this module for ``encode`` without the rest of the package
    from citewell.answers.extractive.units import Unit

MODEL_FILE = "verifier.onnx"
MAX_TOKENS = 96  # question and unit together; the unit's tail is cut first (cost grows with tokens)
QUESTION_TOKENS = 32


def unit_passage(unit: Unit) -> str:
    """What the verifier reads of a unit: where it stands, then what it says. The training
    pairs are built with this function too, so both read the same thing."""
    span = unit.item.span_at(unit.start)
    where = [unit.item.document_id, unit.item.title, *span.section_path]
    context = " > ".join(dict.fromkeys(" ".join(w.split()) for w in where if w and w.strip()))
    asked = f" Q: {unit.asked}" if unit.asked else ""
    return f"{context}{asked} | {unit.text}"


def _model_path() -> Path:
    return Path(str(resources.files("citewell.answers.extractive") / MODEL_FILE))


class AnswerVerifier:
    """Scores (question, unit passage) pairs: a logit, higher when the passage holds the answer."""

    def __init__(self, path: Path | None = None, threads: int | None = None) -> None:
        self.path = path or _model_path()
        self.threads = threads or onnx_threads()
        self._lock = threading.Lock()

    @cached_property
    def identity(self) -> str:
        """The file's digest, in part: answers cached under one verifier are not served under another."""
        return f"citewell-verifier@{hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]}"

    @cached_property
    def _tokenizer(self) -> Any:
        return plain_tokenizer()

    @cached_property
    def _session(self) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])

    def encode(self, question: str, passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token ids, attention mask and segment ids, padded to the longest pair. The question
        keeps at most ``QUESTION_TOKENS``; the passage fills the rest of ``MAX_TOKENS``."""
        asked = self._tokenizer.encode(question, add_special_tokens=False).ids[:QUESTION_TOKENS]
        rows = []
        for said in self._tokenizer.encode_batch(list(passages), add_special_tokens=False):
            room = MAX_TOKENS - len(asked) - 3
            rows.append(([101, *asked, 102], [*said.ids[:room], 102]))
        width = max(len(a) + len(b) for a, b in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        segments = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for i, (a, b) in enumerate(rows):
            ids[i, : len(a) + len(b)] = a + b
            segments[i, len(a) : len(a) + len(b)] = 1
            mask[i, : len(a) + len(b)] = 1
        return ids, mask, segments

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """One logit per passage, in order."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        ids, mask, segments = self.encode(question, passages)
        with self._lock:
            logits = self._session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": segments})[0]
        return np.asarray(logits, dtype=np.float32).reshape(-1)


@lru_cache(maxsize=1)
def shipped_verifier() -> AnswerVerifier:
    return AnswerVerifier()
