"""Prometheus metrics of the question-answering application, served at `/metrics` on its HTTP port.

The ingress times every stage of every request, so the per-stage histograms live there. A scrape
through the Serve proxy lands on whichever ingress replica the proxy picks, so the replicas of a
node share their values: `build_app` gives every ingress replica the same `PROMETHEUS_MULTIPROC_DIR`
(prometheus_client's multiprocess mode: each process writes its values to files there), `deploy`
empties it, and `/metrics` renders the sum over every file, so any replica answers the same totals.
A counter of a replica that died stays in the totals; a gauge is "live" (`livesum`, `livemax`): the
files of processes that are gone are dropped at each scrape. In that mode `Gauge.set_function` is
not collected (only values written with set/inc/dec reach the files).

Without the variable (a PipelineMetrics built in a test) the metrics are this process's own.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from starlette.responses import Response
from starlette.routing import BaseRoute, Match

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
STAGES = ("retrieve", "plan", "code", "execute", "answer")
# From a cached retrieval (milliseconds) to a coder writing a long program on a busy CPU (tens of seconds).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0)
UNMATCHED = "unmatched"
"""The `endpoint` label of a request no route matches: one series, whatever paths clients make up."""
_LIVE_FILE = re.compile(r"gauge_live[a-z]+_(\d+)\.db")


class PrometheusText(Response):
    """The text exposition format that `generate_latest` writes (0.0.4: plain names, no UTF-8
    escaping), so that the OpenAPI document names the media type `/metrics` serves."""

    media_type = CONTENT_TYPE_PLAIN_0_0_4


def metrics_dir(port: int) -> Path:
    """The shared directory of the ingress replicas of the application on `port`: node-local (the
    files are memory-mapped, which a network volume does not do well) and one per application, as
    no two applications of one host serve on the same port."""
    return Path(tempfile.gettempdir()) / f"soay-metrics-{port}"


def reset_metrics_dir(path: Path) -> None:
    """An empty directory at `path`: a new deployment's totals start from zero, not from the files
    of a previous one's processes."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)


def route_template(routes: list[BaseRoute], path: str) -> str:
    """The route's template that `path` matches ("/v1/ask", "/static"), or UNMATCHED: a label by
    template keeps one series per route however many paths clients try."""
    scope = {"type": "http", "path": path, "root_path": "", "method": "GET"}
    for route in routes:
        if route.matches(scope)[0] is not Match.NONE:  # PARTIAL: the path matches, another method would
            return getattr(route, "path", UNMATCHED)
    return UNMATCHED


class PipelineMetrics:
    content_type = PrometheusText.media_type

    def __init__(self) -> None:
        self.directory = os.environ.get(MULTIPROC_ENV)
        if self.directory:
            Path(self.directory).mkdir(parents=True, exist_ok=True)  # a node `deploy` did not run on
        self.registry = CollectorRegistry()
        self.stage_latency = Histogram(
            "soay_stage_latency_seconds", "Latency of one pipeline stage", ["stage"], registry=self.registry,
            buckets=BUCKETS,
        )
        self.request_latency = Histogram(
            "soay_request_latency_seconds", "End-to-end latency of answered requests", ["endpoint"],
            registry=self.registry, buckets=BUCKETS,
        )
        self.requests = Counter("soay_requests_total", "Requests by route template and HTTP status", ["endpoint", "status"], registry=self.registry)
        self.errors = Counter("soay_stage_errors_total", "Stage failures (a dead replica, an engine error, a timeout)", ["stage"], registry=self.registry)
        self.execution_errors = Counter("soay_execution_errors_total", "Generated programs that failed in the sandbox", ["error_type"], registry=self.registry)
        self.repairs = Counter("soay_code_repairs_total", "Coder programs regenerated after breaking the sandbox rules", registry=self.registry)
        self.out_of_scope = Counter("soay_out_of_scope_total", "Questions the planner found out of scope (answered without running code)", registry=self.registry)
        self.in_flight = Gauge("soay_in_flight_requests", "Requests being answered now", ["endpoint"], registry=self.registry,
                               multiprocess_mode="livesum")
        self.replicas = Gauge("soay_ingress_replicas", "Ingress replicas running (each counts 1)", registry=self.registry,
                              multiprocess_mode="livesum")
        self.replicas.set(1)
        self.sandbox_isolation = Gauge(
            "soay_sandbox_os_isolation", "1 while the executor's sandboxes run behind the OS wall (bubblewrap), 0 when without it",
            registry=self.registry, multiprocess_mode="livemin")

    def render(self) -> bytes:
        """Every replica's values summed (multiprocess mode), or this process's."""
        if not self.directory:
            return generate_latest(self.registry)
        self._forget_dead()
        merged = CollectorRegistry()
        MultiProcessCollector(merged, self.directory)
        return generate_latest(merged)

    def close(self) -> None:
        """This replica's live gauges leave the totals (it is shutting down); its counters stay."""
        if self.directory:
            mark_process_dead(os.getpid(), self.directory)

    def _forget_dead(self) -> None:
        """Drop the live gauges of processes that are gone (a replica killed without shutting
        down): their in-flight requests are not in flight any more."""
        for name in os.listdir(self.directory):
            if (match := _LIVE_FILE.fullmatch(name)) and not _alive(int(match[1])):
                mark_process_dead(int(match[1]), self.directory)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
