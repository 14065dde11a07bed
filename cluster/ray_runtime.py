"""Starting a local Ray or joining a cluster, the same way for every job."""

from __future__ import annotations

import os
import time

import ray

from cluster.library_logs import DRIVER_LOGGERS, library_log, quiet, say, say_where, to_library_log
from soay.settings import RaySettings


def init_ray(settings: RaySettings, worker_output: bool = False) -> str:
    """Connect to `settings.address` / RAY_ADDRESS if given, else start Ray on this machine.

    Returns the address in use, for the run record. Idempotent: a driver that already called
    `ray.init` (a Ray Jobs entrypoint, a test) keeps its connection.

    What Ray's processes print (Serve replicas' per-call lines, the vLLM engines' start-up, the
    actors' libraries) stays in the session's log files, which a line on the console names, unless
    `worker_output` (Ray Train workers print their progress) or `settings.serve_logs_to_console`.
    Once a command routed library output (cluster/library_logs.py), Ray's own driver lines go to
    the library log and one line says Ray started.
    """
    if not ray.is_initialized():
        address = settings.address or os.environ.get("RAY_ADDRESS")
        loud = settings.serve_logs_to_console
        started = time.perf_counter()
        to_library_log("ray")  # "Started a local Ray instance", the token note
        if address:
            ray.init(address=address, log_to_driver=loud or worker_output)
        else:
            # a Ray of our own stays on loopback: nothing outside this machine needs to reach it.
            # Serve's components print their lines on stderr only when asked (the workers inherit
            # this variable from the raylet); they always write them to the log files
            os.environ["RAY_SERVE_LOG_TO_STDERR"] = "1" if loud else "0"
            ray.init(
                num_cpus=settings.num_cpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                log_to_driver=loud or worker_output,
            )
        to_library_log(*DRIVER_LOGGERS)
        if quiet():
            what = f"joined {address}" if address else "started a local instance (dashboard off)"
            where = say_where("its processes log to", ray_logs_dir()) + say_where("the libraries here to", library_log())
            say(f"ray: {what} in {time.perf_counter() - started:.0f} s{where}")
    return ray.get_runtime_context().gcs_address


def ray_logs_dir() -> str:
    """The log folder of the session this driver is connected to (on the head node for a cluster)."""
    node = getattr(ray._private.worker, "_global_node", None)  # no public API names the session folder
    return node.get_logs_dir_path() if node is not None else "/tmp/ray/session_latest/logs"


def serve_logs_elsewhere(settings: RaySettings) -> str:
    """Where to read the Serve replicas' logs when they are kept off the console, else ''."""
    return "" if settings.serve_logs_to_console or not ray.is_initialized() else os.path.join(ray_logs_dir(), "serve")
