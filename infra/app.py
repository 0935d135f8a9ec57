"""The CDK app: `make deploy` (or `make synth`), which runs the CDK CLI; the CLI runs cdk.json's
app, `.venv/bin/python infra/app.py`, so the app gets the venv's aws_cdk whatever is on PATH.

Context (cdk.json or -c): every field of ``StackConfig`` in stacks/citewell.py. Synthesis
stops when the layer is not built (`make layer`), unless ``-c synth_only=true`` (or
``CITEWELL_SYNTH_ONLY=1``) asks only to check the template.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import aws_cdk as cdk

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stacks.citewell import CitewellStack  # noqa: E402
from stacks.config import StackConfig  # noqa: E402


def main() -> None:
    # `cdk` passes cdk.json's context itself; a plain `.venv/bin/python infra/app.py` reads it here.
    defaults = json.loads((Path(__file__).resolve().parents[1] / "cdk.json").read_text()).get("context", {})
    root = Path(__file__).resolve().parents[1]
    app = cdk.App(context=defaults, outdir=os.environ.get("CDK_OUTDIR", str(root / "cdk.out")))
    CitewellStack(app, "Citewell", config=StackConfig.from_context(app.node))
    app.synth()


if __name__ == "__main__":
    main()
