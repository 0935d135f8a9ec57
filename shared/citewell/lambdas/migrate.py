"""``python -m citewell.lambdas.migrate``: move the index to a new embedding model, with the new
embedder's ``CITEWELL_*`` settings (see :func:`citewell.aws.search_index.migrate`). An entry of
its own, so the index adapter never imports the settings that build it."""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    if argv:
        raise SystemExit("usage: python -m citewell.lambdas.migrate")
    from citewell.aws.search_index import migrate
    from citewell.lambdas.settings import services_from_env

    _, found = services_from_env()
    print(json.dumps(migrate(found, found.embedder)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
