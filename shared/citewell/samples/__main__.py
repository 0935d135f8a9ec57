"""Write the sample corpus: ``python -m citewell.samples DIR``."""

from __future__ import annotations

import sys
from pathlib import Path

from citewell.samples.writer import write_samples

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m citewell.samples DIR")
    for path in write_samples(Path(sys.argv[1])):
        print(path)
