"""The ingress's metrics (serving/metrics.py): any replica renders the totals of all of them.

Each "replica" here is a process of its own with the shared directory in its environment, as
`build_app` sets it for the ingress replicas; no Ray is needed to show what a scrape reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from prometheus_client.parser import text_string_to_metric_families

from conftest import ROOT
from serving.metrics import MULTIPROC_ENV, UNMATCHED, PipelineMetrics, reset_metrics_dir, route_template

REPLICA = textwrap.dedent("""
    import sys
    from serving.metrics import PipelineMetrics

    metrics = PipelineMetrics()
    metrics.requests.labels("/v1/ask", "200").inc(int(sys.argv[1]))
    metrics.stage_latency.labels("plan").observe(0.2)
    metrics.in_flight.labels("/v1/ask").inc()  # still in flight when the process ends
    if sys.argv[2] == "render":
        sys.stdout.write(metrics.render().decode())
""")


def replica(directory, requests: int, render: bool = False) -> str:
    env = {**os.environ, MULTIPROC_ENV: str(directory), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", REPLICA, str(requests), "render" if render else "quiet"], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def test_a_scrape_sums_every_replica_and_forgets_the_live_gauges_of_dead_ones(tmp_path):
    directory = tmp_path / "metrics"
    reset_metrics_dir(directory)
    replica(directory, 3)
    replica(directory, 4)  # both gone by now, their counters kept
    scraped = samples(replica(directory, 5, render=True))
    assert scraped[("soay_requests_total", (("endpoint", "/v1/ask"), ("status", "200")))] == 12
    assert scraped[("soay_stage_latency_seconds_count", (("stage", "plan"),))] == 3
    # only the rendering process is alive: the others' in-flight requests and replica count are gone
    assert scraped[("soay_in_flight_requests", (("endpoint", "/v1/ask"),))] == 1
    assert scraped[("soay_ingress_replicas", ())] == 1

    reset_metrics_dir(directory)  # a new deployment starts from zero
    assert samples(replica(directory, 1, render=True))[("soay_requests_total", (("endpoint", "/v1/ask"), ("status", "200")))] == 1


def test_without_a_shared_directory_the_metrics_are_the_process_own():
    metrics = PipelineMetrics()
    metrics.requests.labels("/v1/ask", "200").inc()
    assert metrics.registry.get_sample_value("soay_requests_total", {"endpoint": "/v1/ask", "status": "200"}) == 1
    assert b'soay_requests_total{endpoint="/v1/ask",status="200"} 1.0' in metrics.render()


def test_the_endpoint_label_is_the_route_template_or_unmatched():
    from fastapi import FastAPI

    app = FastAPI()
    app.add_api_route("/v1/items/{item}", lambda item: item, methods=["POST"])
    assert route_template(app.router.routes, "/v1/items/42") == "/v1/items/{item}"  # any method: a 405 is the route's
    assert route_template(app.router.routes, "/openapi.json") == "/openapi.json"
    assert route_template(app.router.routes, "/wp-admin/setup.php") == UNMATCHED
