"""citewell: a permission-aware knowledge base that answers with citations."""

import os

__version__ = "0.1.0"

# OpenBLAS's idle threads busy-wait (about 0.1 s) after each matrix product. On a small machine
# they take the cores from everything else: a server answering beside a CLI search made both
# twice as slow (docs/measurements.md). Read once, when numpy loads OpenBLAS, so it is set
# before any module here imports numpy; an operator's own setting wins.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
