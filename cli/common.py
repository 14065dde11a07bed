"""What several commands share: printing a generation report, stopping on a signal."""

from __future__ import annotations

import json
import signal
import threading
from typing import Any

import typer


def print_generation(report: Any) -> None:
    counts = report.manifest.counts()
    typer.echo(
        f"{report.kept} verified triplets ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}) "
        f"in {report.seconds:.1f} s with {report.workers} workers = {report.triplets_per_second:.0f} triplets/s"
    )
    failed = {k: v for k, v in report.stats.items() if k.endswith(("error", "mismatch")) or k == "unanswerable"}
    typer.echo(f"rejected: {json.dumps(failed)}")
    typer.echo(f"dataset version {report.manifest.version} at {report.dataset_path}")


def stop_on_signal() -> threading.Event:
    """An event that Ctrl-C or SIGTERM (what a service manager sends) sets, so that a long-running
    command stops by its own shutdown path instead of dying mid-way and leaving processes behind."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop
