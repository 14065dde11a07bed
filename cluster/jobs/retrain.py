"""Ray Jobs entrypoint for the retraining loop, with the flags of `soay retrain`:

    ray job submit --working-dir . -- python -m cluster.jobs.retrain --eval-limit 200

Run on the cluster that serves, so that a promoted model is swapped into the running application.
"""

from __future__ import annotations

import sys

from cli.main import app


def main(argv: list[str] | None = None) -> None:
    app(["retrain", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
