"""The sentence encoder the answerer scores units with.

all-MiniLM-L6-v2 embeds what a text is about; the answerer needs the sentence that answers a
question among several about the same thing. ``unit_encoder.onnx`` is that model tuned for it
(``python -m benchmarks.train_unit_encoder``: question and answering unit against the units
ranked next to it, on SQuAD 2.0's fitting articles and the answer set's tune split; its weights
int8 as the packaged MiniLM's are, the same tokenizer and pooling). It reads only the answerer's
units and questions: the index keeps its own embedder. Where the file or onnxruntime is missing, units are scored with the index's
embedder, as before.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from pathlib import Path

from citewell.embedders.minilm import DIMS, MiniLMEmbedder
from citewell.ports import Embedder

MODEL_FILE = "unit_encoder.onnx"
# The file's sha256, in part: cached unit vectors and answers are keyed by the identity it is
# in, so a retrained file never meets vectors of the one before (a test holds it to the file).
DIGEST = "a4161b1bd2ad3a1f"


def _model_file() -> Path:
    return Path(str(resources.files("citewell.answers.extractive") / MODEL_FILE))


class UnitEncoder(MiniLMEmbedder):
    """MiniLM's tokenizer, sessions and pooling over the tuned weights: the packaged file, or
    ``path`` (a candidate being measured, ``benchmarks.calibrate_refusal --unit-encoder``), whose
    identity is its own digest so that no vector cached for one is read for the other."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__()
        self.path = path or _model_file()
        digest = DIGEST if path is None else hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        self.identity = f"citewell-unit-encoder@{digest}:{DIMS}"

    def _model_path(self) -> Path:
        return self.path


@cache
def shipped_unit_encoder() -> Embedder | None:
    """The packaged encoder, or None where this build lacks it or onnxruntime."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    return UnitEncoder() if _model_file().is_file() else None
