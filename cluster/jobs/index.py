"""Ray Jobs entrypoint for the retriever index build.

    ray job submit --address http://HEAD:8265 --working-dir . -- python -m cluster.jobs.index --workers 8

Inside a job the supervisor sets RAY_ADDRESS, so `soay index` joins the cluster instead of
starting a local Ray; the job takes exactly the flags of the command.
"""

from __future__ import annotations

import sys

from cli.main import app


def main(argv: list[str] | None = None) -> None:
    app(["index", "--json", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
