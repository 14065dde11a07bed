"""Ray Jobs entrypoints: each module runs one `soay` command with the job's own arguments.

    ray job submit --address http://HEAD:8265 --working-dir . -- python -m cluster.jobs.<job> ARGS

Inside a job the Ray job supervisor sets RAY_ADDRESS, so the command joins the cluster instead of
starting a local Ray; the job takes exactly the flags of the command.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from cli.main import app


def command_job(*command: str) -> Callable[[list[str] | None], None]:
    """The `main` of a job module: `soay <command...>` with the job's arguments (argv, by
    default the process's own) after it."""

    def main(argv: list[str] | None = None) -> None:
        app([*command, *(sys.argv[1:] if argv is None else argv)])

    return main
