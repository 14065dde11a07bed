"""Training progress as Prometheus gauges, served by rank 0 of a run on its own /metrics port.

Off unless the recipe sets `metrics_port`: a training run is a batch job whose progress (loss,
throughput) Prometheus scrapes while it runs, beside the services' metrics.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Gauge, start_http_server


class TrainMetrics:
    def __init__(self, port: int) -> None:
        self.registry = CollectorRegistry()
        self.loss = Gauge("soay_train_loss", "Mean training loss over the last logging window", registry=self.registry)
        self.tokens_per_second = Gauge("soay_train_tokens_per_second", "Training tokens per second over all workers", registry=self.registry)
        self.step = Gauge("soay_train_step", "Optimiser steps done", registry=self.registry)
        self.server, _ = start_http_server(port, registry=self.registry)

    def update(self, metrics: dict[str, Any]) -> None:
        self.loss.set(metrics["loss"])
        self.tokens_per_second.set(metrics["tokens_per_s"])
        self.step.set(metrics["step"])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
