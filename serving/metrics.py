"""Prometheus metrics of the question-answering application, served at `/metrics` on its HTTP port.

The ingress times every stage of every request, so the per-stage histograms live there. Each
ingress replica has its own registry, named by the `soay_ingress_replica` series: a scrape through
the Serve proxy reads whichever replica it lands on, so exact totals need one ingress replica
(`serve.max_replicas: 1` keeps it; it only waits on the stages, which scale on their own).
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

STAGES = ("retrieve", "plan", "code", "execute", "answer")
# From a cached retrieval (milliseconds) to a coder writing a long program on a busy CPU (tens of seconds).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0)


class PipelineMetrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, replica: str) -> None:
        self.registry = CollectorRegistry()
        labels = {"replica": replica}
        self.stage_latency = Histogram(
            "soay_stage_latency_seconds", "Latency of one pipeline stage", ["stage"], registry=self.registry,
            buckets=BUCKETS,
        )
        self.request_latency = Histogram(
            "soay_request_latency_seconds", "End-to-end latency of answered requests", ["endpoint"],
            registry=self.registry, buckets=BUCKETS,
        )
        self.requests = Counter("soay_requests_total", "Requests by endpoint and HTTP status", ["endpoint", "status"], registry=self.registry)
        self.errors = Counter("soay_stage_errors_total", "Stage failures (a dead replica, an engine error, a timeout)", ["stage"], registry=self.registry)
        self.execution_errors = Counter("soay_execution_errors_total", "Generated programs that failed in the sandbox", ["error_type"], registry=self.registry)
        self.repairs = Counter("soay_code_repairs_total", "Coder programs regenerated after breaking the sandbox rules", registry=self.registry)
        self.out_of_scope = Counter("soay_out_of_scope_total", "Questions the planner found out of scope (answered without running code)", registry=self.registry)
        self.in_flight = Gauge("soay_in_flight_requests", "Requests being answered now", ["endpoint"], registry=self.registry)
        self.info = Gauge("soay_ingress_replica", "This ingress replica (constant 1)", list(labels), registry=self.registry)
        self.info.labels(**labels).set(1)

    def render(self) -> bytes:
        return generate_latest(self.registry)
