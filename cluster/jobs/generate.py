"""Ray Jobs entrypoint for triplet generation.

    ray job submit --address http://HEAD:8265 --working-dir . -- python -m cluster.jobs.generate --workers 16

Inside a job the supervisor sets RAY_ADDRESS, so `soay generate` joins the cluster instead of
starting a local Ray; the job takes exactly the flags of the command.
"""

from __future__ import annotations

import sys

from cli.main import app


def main(argv: list[str] | None = None) -> None:
    app(["generate", "--json", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
