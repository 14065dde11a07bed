"""Starting a local Ray or joining a cluster, the same way for every job."""

from __future__ import annotations

import os

import ray

from soay.settings import RaySettings

SERVE_LOG_DIR = "/tmp/ray/session_latest/logs/serve"
"""Where a local Ray's Serve replicas write their logs (Ray's default temp dir)."""


def init_ray(settings: RaySettings) -> str:
    """Connect to `settings.address` / RAY_ADDRESS if given, else start Ray on this machine.

    Returns the address in use, for the run record. Idempotent: a driver that already called
    `ray.init` (a Ray Jobs entrypoint, a test) keeps its connection.
    """
    if not ray.is_initialized():
        address = settings.address or os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address)
        else:
            # a Ray of our own stays on loopback: nothing outside this machine needs to reach it
            # worker output reaches this console: Ray Train workers print their progress lines;
            # Serve replicas' per-call lines would bury them and the demo's answers, so by default
            # those go to the log files only (the workers inherit this variable from the raylet)
            os.environ["RAY_SERVE_LOG_TO_STDERR"] = "1" if settings.serve_logs_to_console else "0"
            ray.init(
                num_cpus=settings.num_cpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
            )
    return ray.get_runtime_context().gcs_address


def serve_logs_elsewhere(settings: RaySettings) -> str:
    """Where to read the Serve replicas' logs when a local Ray keeps them off the console, else ''."""
    local = not (settings.address or os.environ.get("RAY_ADDRESS"))
    return SERVE_LOG_DIR if local and not settings.serve_logs_to_console else ""
